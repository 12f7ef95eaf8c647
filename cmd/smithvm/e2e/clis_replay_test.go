package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"smith/internal/fakemodel"
)

// TestCLIReplayFiles (CONTRACT 5.2): claude, gemini and codex each edit a
// file in an isolated run recorded with --record; the run replayed with no
// CLI on PATH, no key and no request to the server ends with the same
// trees on its branch, commit by commit, and the same outputs.
func TestCLIReplayFiles(t *testing.T) {
	t.Parallel()
	needCLIs(t, "claude", "gemini", "codex")
	if _, err := exec.LookPath("git"); err != nil {
		if inCI() {
			t.Fatal("git is not installed")
		}
		t.Skip("git is not installed")
	}
	var rules []fakemodel.Rule
	var edits []map[string]string
	for _, c := range cliCases {
		up := strings.ToUpper(c.name)
		rules = append(rules, fakemodel.Rule{Match: "EDIT-" + up, Reply: fakemodel.Reply{
			WriteFile: &fakemodel.WriteFile{Path: "src/" + c.name + ".txt", Content: "written by " + c.name + "\n"}, Text: c.name + " wrote it"}})
		edits = append(edits, map[string]string{"cli": c.name, "model": c.model, "up": up})
	}
	p := newCLIProj(t, modeUser, rules...)
	p.put("workspace/README.md", "start\n")
	gitIn(t, p.ws, "init", "-q", "-b", "main")
	gitIn(t, p.ws, "add", "-A")
	gitIn(t, p.ws, "commit", "-q", "-m", "start")
	wf := p.put("wf.yaml", p.header("edits")+p.fill("edits.yaml", map[string]any{"edits": edits}))
	rec := filepath.Join(p.base, "rec")
	r1 := p.run("run", wf, "--record", rec, "--run-id", "rec")
	if r1.code != 0 {
		t.Fatalf("record: exit %d\n%s", r1.code, r1.stderr)
	}
	for _, c := range cliCases {
		if got := p.read(".orchestrator/worktrees/rec/src/" + c.name + ".txt"); got != "written by "+c.name+"\n" {
			t.Errorf("%s's file = %q", c.name, got)
		}
	}
	before := len(p.srv.Requests())
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + p.home} // no CLIs, no keys
	r2 := p.runEnv(env, "run", wf, "--replay", rec, "--run-id", "rep")
	if r2.code != 0 {
		t.Fatalf("replay: exit %d\n%s", r2.code, r2.stderr)
	}
	if after := len(p.srv.Requests()); after != before {
		t.Errorf("replay made %d requests", after-before)
	}
	trees := func(branch string) string {
		var out []string
		for _, c := range strings.Fields(gitIn(t, p.ws, "rev-list", "--reverse", branch)) {
			msg := strings.Replace(gitIn(t, p.ws, "show", "-s", "--format=%s", c), "run rep", "run rec", 1)
			out = append(out, msg+"\n"+gitIn(t, p.ws, "ls-tree", "-r", c))
		}
		return strings.Join(out, "\n")
	}
	a, b := trees("smith/rec"), trees("smith/rep")
	if a != b || !strings.Contains(a, "src/codex.txt") {
		t.Errorf("branches differ or lack the edits:\nrecorded:\n%s\nreplayed:\n%s", a, b)
	}
	s1, s2 := p.state(r1), p.state(r2)
	for _, c := range cliCases {
		st := "Edit" + c.name
		if s1.Steps[st].Output != s2.Steps[st].Output || s1.Steps[st].Output == "" {
			t.Errorf("%s: recorded %q, replayed %q", st, s1.Steps[st].Output, s2.Steps[st].Output)
		}
	}
}
