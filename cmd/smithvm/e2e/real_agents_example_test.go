package e2e

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"smith/internal/fakemodel"
)

// TestRealAgentsExample runs examples/real-agents/loop.yaml offline, as its
// README does, on each of the three real CLIs against the fake model server
// scripted by examples/real-agents/fakemodel.script, switched by its one
// provider: line alone and set up as a user sets the CLI up (no secrets:,
// env_allow: or env: in the workflow). The engineer writes greet.py, the
// reviewer asks for a change, the engineer's second prompt carries the
// review, the reviewer approves, and greet.py is the fixed version.
func TestRealAgentsExample(t *testing.T) {
	t.Parallel()
	var rules []fakemodel.Rule
	b, err := os.ReadFile(repoFile(t, "examples/real-agents/fakemodel.script"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rules); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(repoFile(t, "examples/real-agents/loop.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const line = "provider: &ai claude "
	if !strings.Contains(string(src), line) {
		t.Fatalf("loop.yaml has no %q line to switch", line)
	}
	for _, c := range cliCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			needCLIs(t, c.name)
			p := newCLIProj(t, modeUser, rules...)
			wf := p.put("loop.yaml", strings.Replace(string(src), line, "provider: &ai "+c.name+" ", 1))
			r := p.run("run", wf)
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
			for _, l := range p.srv.Requests() {
				if strings.Contains(l.Prompt, "You are the engineer") && l.ToolResult == "" {
					if n++; n == 2 {
						second = l.Prompt
					}
				}
			}
			if !strings.Contains(second, "The reviewer asked for changes:") || !strings.Contains(second, "greet() has no docstring.") {
				t.Errorf("the engineer's second prompt lacks the review: %q", second)
			}
		})
	}
}

// TestTeamExampleSwitch: examples/team/team.yaml goes to a real CLI by its
// one provider: line alone: with claude, gemini or codex there it checks
// clean, and smithvm doctor on it checks that CLI and no other, in the
// user's own setup (no secrets:, env_allow: or env: to add).
func TestTeamExampleSwitch(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(repoFile(t, "examples/team/team.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const line = "provider: &ai mock "
	if !strings.Contains(string(src), line) {
		t.Fatalf("team.yaml has no %q line to switch", line)
	}
	for _, c := range cliCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			needCLIs(t, c.name)
			p := newCLIProj(t, modeUser)
			wf := p.put("team.yaml", strings.Replace(string(src), line, "provider: &ai "+c.name+" ", 1))
			r := p.doctor(p.env(), wf)
			if r.code != 0 {
				t.Fatalf("doctor team.yaml: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			for _, other := range cliCases {
				if got := doctorLine(r.stdout, "ok", other.name, "login") != ""; got != (other.name == c.name) {
					t.Errorf("doctor checked %s: %v\n%s", other.name, got, r.stdout)
				}
			}
		})
	}
}
