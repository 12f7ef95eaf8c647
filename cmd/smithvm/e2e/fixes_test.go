package e2e

import (
	"testing"
)

// TestLoopOutput: after a for_each, ${steps.Loop.output} holds the last
// inner step's output (docs/workflow-reference.md).
func TestLoopOutput(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	wf := p.write("loop.yaml", `version: "1.0"
name: loop
strict_flow: false
steps:
  - name: Loop
    for_each:
      items: [a, b, c]
      steps:
        - {name: Inner, command: [HELPER, "echo:item ${item}"]}
  - name: After
    command: [HELPER, "echo:last=${steps.Loop.output}"]
`)
	want(t, p.vm("run", wf, "--run-id", "l"), 0)
	if got := p.state("l").Steps["After"].Output; got != "last=item c" {
		t.Errorf("After output = %q, want last=item c", got)
	}
}
