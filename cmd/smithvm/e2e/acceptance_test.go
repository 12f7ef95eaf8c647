package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// The TestAcceptance* tests and testdata/script/acceptance*.txtar are the
// twelve "MVP Acceptance Tests" of seed 004, as CONTRACT sections 2-6 make
// them precise, one test or script per case.

// TestAcceptanceDemoAgentOnlySteps checks acceptance case 01b: the demo with agent-only steps.
//
// The demo uses agent-only steps (agent: and no provider:): this is the
// one test of them.
func TestAcceptanceDemoAgentOnlySteps(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	demo, err := filepath.Abs("../../../examples/demo/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := p.vm("run", demo)
	want(t, r, 0)
	for _, f := range []string{"Design/design.md", "Implement/notes.md", "Write/hello.txt", "Write/world.txt", "Report/report.txt"} {
		if !p.exists("workspace/artifacts/" + f) {
			t.Errorf("artifact %s missing", f)
		}
	}
	if got := p.read("workspace/artifacts/Report/report.txt"); !strings.HasPrefix(got, "feature greeting: built\n") {
		t.Errorf("report.txt = %q, want prefix %q", got, "feature greeting: built\n")
	}
}
