package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
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
	return filepath.Join(filepath.Dir(here), "..", "..", "..", rel)
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

// teamRepo copies examples/team/project into a new git repository (the
// README's preparation) and returns its path; it skips (fails in CI) when
// git or go is missing.
func teamRepo(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"git", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			if inCI() {
				t.Fatalf("%s is not installed (CI must have it)", tool)
			}
			t.Skipf("%s is not installed", tool)
		}
	}
	repo := filepath.Join(t.TempDir(), "team")
	if err := os.CopyFS(repo, os.DirFS(repoFile(t, "examples/team/project"))); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "init", "-q", "-b", "main")
	gitIn(t, repo, "add", "-A")
	gitIn(t, repo, "commit", "-q", "-m", "start")
	return repo
}

// TestTeamExample runs examples/team/team.yaml as its README says, in a
// temporary repository: the design is sent to and consumed by the engineer,
// the two engineers' branches are joined, the tests pass, QA's question and
// the architect's answer travel by message, the run halts for a person, who
// approves it with resume --signal, and smithvm merge brings the code in.
func TestTeamExample(t *testing.T) {
	t.Parallel()
	repo := teamRepo(t)
	other := t.TempDir()
	r := runIn(t, other, "run", repoFile(t, "examples/team/team.yaml"), "--workspace", repo, "--run-id", "team")
	want(t, r, 4)
	for _, line := range []string{
		"INFO: Step 'SendDesign' sent agents/engineer/inbox/0001-ca8b22d0-design.md to 'engineer'.",
		"INFO: Step 'ReadDesign' consumed agents/engineer/inbox/0001-ca8b22d0-design.md.",
		"INFO: Step 'Hello' [hello] completed successfully",
		"INFO: Step 'Goodbye' [goodbye] completed successfully",
		"INFO: Step 'AskArchitect' sent agents/architect/inbox/0002-ca8b22d0-question.md to 'architect'.",
		"INFO: Step 'Answer' consumed agents/architect/inbox/0002-ca8b22d0-question.md.",
		"INFO: Step 'Verdict' consumed agents/qa/inbox/0003-ca8b22d0-answer.md.",
		"WARNING: Run team halted at 'Approve' awaiting resume.",
	} {
		if !strings.Contains(r.stderr, line) {
			t.Errorf("the run does not say %q:\n%s", line, r.stderr)
		}
	}
	runRoot := filepath.Join(repo, ".orchestrator", "runs", "team")
	p := &proj{t: t, base: repo, ws: repo}
	st := p.state2(runRoot)
	if got := st.Steps["Answer"].Output; !strings.Contains(got, "exclamation mark") {
		t.Errorf("the architect's answer = %q", got)
	}
	if got := st.Steps["Verdict"].Output; !strings.Contains(got, "recommend merging") {
		t.Errorf("QA's verdict = %q", got)
	}
	// session: continue: each branch's engineer has a conversation of its
	// own, whose second call (the note) continued its first.
	var ss struct {
		Sessions map[string]struct {
			ID    string `json:"id"`
			Turns int    `json:"turns"`
		} `json:"sessions"`
	}
	if data, err := os.ReadFile(filepath.Join(runRoot, "state.json")); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(data, &ss); err != nil {
		t.Fatal(err)
	}
	h, g := ss.Sessions["engineer[hello]"], ss.Sessions["engineer[goodbye]"]
	if h.ID == "" || g.ID == "" || h.ID == g.ID || h.Turns != 2 || g.Turns != 2 {
		t.Errorf("the branches' sessions: %+v", ss.Sessions)
	}
	// The architect answers in its design's conversation, QA gives its
	// verdict in its question's.
	for _, a := range []string{"architect", "qa"} {
		if s := ss.Sessions[a]; s.ID == "" || s.Turns != 2 {
			t.Errorf("%s's session: %+v, want turn 2", a, s)
		}
	}
	if got := st.Steps["HelloNote"].Output; !strings.HasPrefix(got, "hello.go: ") {
		t.Errorf("the engineer's note on hello = %q", got)
	}
	log := gitIn(t, repo, "log", "--format=%s", "smith/team")
	for _, s := range []string{"smith: join Build [hello] (run team)", "smith: WriteHello (run team, attempt 1)", "smith: WriteGoodbye (run team, attempt 1)"} {
		if !strings.Contains(log, s) {
			t.Errorf("the run's branch lacks %q:\n%s", s, log)
		}
	}
	if _, err := os.Stat(filepath.Join(repo, "hello.go")); err == nil {
		t.Errorf("hello.go reached the repository before anyone approved")
	}

	want(t, runIn(t, other, "resume", "team", "--base", repo, "--signal", "SIGNAL:APPROVED"), 0)
	if d := runIn(t, other, "diff", "team", "--base", repo, "--stat"); !strings.Contains(d.stdout, "hello.go") || !strings.Contains(d.stdout, "goodbye.go") {
		t.Errorf("diff --stat:\n%s%s", d.stdout, d.stderr)
	}
	want(t, runIn(t, other, "merge", "team", "--base", repo), 0)
	for _, f := range []string{"hello.go", "goodbye.go"} {
		if _, err := os.Stat(filepath.Join(repo, f)); err != nil {
			t.Errorf("%s is not in the repository after merge: %v", f, err)
		}
	}
}

// TestTeamExampleManifest runs the manifest version the same way: it halts
// after QA's review; approved, it merges the engineers' code.
func TestTeamExampleManifest(t *testing.T) {
	t.Parallel()
	repo := teamRepo(t)
	other := t.TempDir()
	want(t, runIn(t, other, "run", repoFile(t, "examples/team/workflows.json"), "--workspace", repo, "--run-id", "mteam"), 4)
	want(t, runIn(t, other, "resume", "mteam", "--base", repo, "--signal", "SIGNAL:APPROVED"), 0)
	want(t, runIn(t, other, "merge", "mteam", "--base", repo), 0)
	for _, f := range []string{"hello.go", "goodbye.go"} {
		if _, err := os.Stat(filepath.Join(repo, f)); err != nil {
			t.Errorf("%s is not in the repository after merge: %v", f, err)
		}
	}
}
