package main

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// repoFile is the absolute path of a file of the repository.
func repoFile(t *testing.T, rel string) string {
	t.Helper()
	_, here, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller information")
	}
	return filepath.Join(filepath.Dir(here), "..", "..", rel)
}

// TestAgentsExample runs examples/agents/agents.yaml: the design reaches the
// engineer's inbox, the engineer's prompt carries it (depends_on inject), and
// QA reviews what arrived in its inbox.
func TestAgentsExample(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	r := p.vm("run", repoFile(t, "examples/agents/agents.yaml"))
	want(t, r, 0)
	if got := p.read("workspace/agents/engineer/inbox/design.md"); !strings.Contains(got, "design the 'greeting' feature") {
		t.Errorf("engineer inbox design.md = %q", got)
	}
	change := p.read("workspace/artifacts/Implement/change.md")
	if !strings.Contains(change, "--- agents/engineer/inbox/design.md ---") || !strings.Contains(change, "Your inbox:") {
		t.Errorf("the engineer's prompt lacks its inbox (depends_on inject): %q", change)
	}
	if verdict := p.read("workspace/artifacts/Review/verdict.md"); verdict != change {
		t.Errorf("QA's verdict (its prompt, echoed by mock) = %q, want the change it received %q", verdict, change)
	}
}
