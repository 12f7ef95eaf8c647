package e2e

import (
	"testing"
)

// TestLoopOutput: after a for_each, ${steps.Loop.output} holds the last
// inner step's output (docs/workflow-reference.md).
func TestLoopOutput(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	wf := p.write("loop.yaml", workflow("loop_output.yaml"))
	want(t, p.vm("run", wf, "--run-id", "l"), 0)
	if got := p.state("l").Steps["After"].Output; got != "last=item c" {
		t.Errorf("After output = %q, want last=item c", got)
	}
}
