package e2e

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"smith/internal/fakemodel"
)

// TestRealAgentsExample runs examples/real-agents/loop.yaml offline, as its
// README does: the real claude against the fake model server scripted by
// examples/real-agents/fakemodel.script. The engineer writes greet.py, the
// reviewer asks for a change, the engineer's second prompt carries the
// review, the reviewer approves, and greet.py is the fixed version.
func TestRealAgentsExample(t *testing.T) {
	t.Parallel()
	needCLIs(t, "claude")
	var rules []fakemodel.Rule
	b, err := os.ReadFile(repoFile(t, "examples/real-agents/fakemodel.script"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rules); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := fakemodel.Start(ctx, rules, fakemodel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	p := newProj(t)
	env := []string{"PATH=" + clisDir() + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"ANTHROPIC_BASE_URL=" + srv.URL, "ANTHROPIC_API_KEY=offline"}
	r := p.vmEnv(env, "run", repoFile(t, "examples/real-agents/loop.yaml"))
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	for _, line := range []string{
		"INFO: Step 'Review' finished with SIGNAL:CHANGES_REQUESTED in",
		"INFO: Step 'Review' finished with SIGNAL:APPROVED in",
	} {
		if !strings.Contains(r.stderr, line) {
			t.Errorf("no %q in:\n%s", line, r.stderr)
		}
	}
	if got := p.read("workspace/greet.py"); !strings.Contains(got, `"""Return a greeting for name."""`) {
		t.Errorf("greet.py = %q, want the reviewed version", got)
	}
	var second string
	n := 0
	for _, l := range srv.Requests() {
		if strings.Contains(l.Prompt, "You are the engineer") && l.ToolResult == "" {
			if n++; n == 2 {
				second = l.Prompt
			}
		}
	}
	if !strings.Contains(second, "The reviewer asked for changes:") || !strings.Contains(second, "greet() has no docstring.") {
		t.Errorf("the engineer's second prompt lacks the review: %q", second)
	}
}
