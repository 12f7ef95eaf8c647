package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitIn runs git in dir and returns its stdout.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@localhost", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@localhost")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// gitProj is a project whose WORKSPACE is a git repository with one commit.
func gitProj(t *testing.T) *proj {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is not installed (CI must have it)")
		}
		t.Skip("git is not installed: apt-get install git")
	}
	p := newProj(t)
	gitIn(t, p.ws, "init", "-q", "-b", "main")
	p.write("workspace/README.md", "hello\n")
	gitIn(t, p.ws, "add", "-A")
	gitIn(t, p.ws, "commit", "-q", "-m", "start")
	return p
}

var isolatedWorkflow = workflow("isolated.yaml")

// TestIsolatedRunBranch: a YAML run with isolation: git-worktree commits
// every step that changed files on smith/<run_id> (by Smith, with the step
// and attempt in the message); diff shows its changes against the start;
// clean refuses unmerged work; merge fast-forwards; a conflict is
// E_MERGE_CONFLICT naming the file and leaves the repository as it was
// (CONTRACT 12.4).
func TestIsolatedRunBranch(t *testing.T) {
	p := gitProj(t)
	wf := p.write("iso.yaml", isolatedWorkflow)
	r := p.vm("run", wf, "--context", "readme=changed")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	id := r.runID()
	branch := "smith/" + id
	log := gitIn(t, p.ws, "log", "--format=%an <%ae>|%s", "main.."+branch)
	want := "Smith <smith@localhost>|smith: Edit (run " + id + ", attempt 1)\nSmith <smith@localhost>|smith: Write (run " + id + ", attempt 1)"
	if log != want {
		t.Errorf("git log %s =\n%s\nwant\n%s", branch, log, want)
	}
	if got := p.read("workspace/README.md"); got != "hello\n" {
		t.Errorf("the repository's README changed before merge: %q", got)
	}
	r = p.vm("diff", id, "--stat")
	if r.code != 0 || !strings.Contains(r.stdout, "README.md") || !strings.Contains(r.stdout, "src/a.go") || !strings.Contains(r.stdout, "2 files changed") {
		t.Errorf("diff --stat: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = p.vm("diff", id)
	if r.code != 0 || !strings.Contains(r.stdout, "+package a") || !strings.Contains(r.stdout, "-hello") {
		t.Errorf("diff: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = p.vm("clean", id)
	if r.code != 2 || !strings.Contains(r.stderr, "E_UNMERGED") {
		t.Errorf("clean of an unmerged run: exit %d, want 2 E_UNMERGED\n%s", r.code, r.stderr)
	}
	r = p.vm("merge", id)
	if r.code != 0 {
		t.Fatalf("merge: exit %d\n%s", r.code, r.stderr)
	}
	if got := p.read("workspace/README.md"); got != "changed" {
		t.Errorf("README after merge = %q", got)
	}
	r = p.vm("clean", id)
	if r.code != 0 {
		t.Errorf("clean after merge: exit %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(p.base, ".orchestrator/worktrees", id)); !os.IsNotExist(err) {
		t.Errorf("worktree still there after clean: %v", err)
	}

	// A second run changes README while the repository changes it too.
	r = p.vm("run", wf, "--context", "readme=theirs")
	if r.code != 0 {
		t.Fatalf("run 2: exit %d\n%s", r.code, r.stderr)
	}
	id2 := r.runID()
	p.write("workspace/README.md", "ours\n")
	gitIn(t, p.ws, "commit", "-q", "-am", "ours")
	head := gitIn(t, p.ws, "rev-parse", "HEAD")
	r = p.vm("merge", id2)
	if r.code != 1 || !strings.Contains(r.stderr, "E_MERGE_CONFLICT") || !strings.Contains(r.stderr, "README.md") {
		t.Errorf("conflicting merge: exit %d, want 1 E_MERGE_CONFLICT naming README.md\n%s", r.code, r.stderr)
	}
	if got := gitIn(t, p.ws, "rev-parse", "HEAD"); got != head || gitIn(t, p.ws, "status", "--porcelain", "--untracked-files=no") != "" {
		t.Errorf("a conflicting merge changed the repository (HEAD %s, was %s)", got, head)
	}
	r = p.vm("clean", id2, "--force")
	if r.code != 0 {
		t.Errorf("clean --force: exit %d\n%s", r.code, r.stderr)
	}
}

// TestBranchCommandsWithoutIsolation: diff and merge of a run that had no
// isolation say so with a code (exit 2).
func TestBranchCommandsWithoutIsolation(t *testing.T) {
	p := gitProj(t)
	wf := p.write("plain.yaml", workflow("branch_commands_without_isolation.yaml"))
	r := p.vm("run", wf)
	id := r.runID()
	for _, cmd := range []string{"diff", "merge"} {
		r = p.vm(cmd, id)
		if r.code != 2 || !strings.Contains(r.stderr, "E_USAGE") || !strings.Contains(r.stderr, "did not run with isolation: git-worktree") {
			t.Errorf("%s: exit %d, want 2 and E_USAGE explaining the missing isolation\n%s", cmd, r.code, r.stderr)
		}
	}
}
