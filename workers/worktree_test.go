package workers

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"smith/workers/confine"
)

func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is required (CI installs it)")
		}
		t.Skip("git not installed")
	}
}

// gitProject is a new project folder whose WORKSPACE is a git repository
// with one empty commit on main (gitInit).
func gitProject(t *testing.T) confine.Dir {
	t.Helper()
	d, err := confine.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(d.Workspace, 0o755); err != nil {
		t.Fatal(err)
	}
	gitInit(t, d.Workspace)
	return d
}

// gitInit makes dir a repository with one commit.
func gitInit(t *testing.T, dir string) {
	t.Helper()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "init"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		// No inherited GIT_DIR and the like: under git rebase --exec or a
		// hook, git init would re-initialise the enclosing repository.
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

func TestWorktreeLifecycle(t *testing.T) {
	needGit(t)
	d := gitProject(t)
	ctx := context.Background()
	lookup := os.LookupEnv

	path, err := CreateWorktree(ctx, d, "r1", lookup)
	if err != nil {
		t.Fatalf("CreateWorktree = %v", err)
	}
	if want := filepath.Join(d.Base, ".orchestrator", "worktrees", "r1"); path != want {
		t.Errorf("CreateWorktree path = %s, want %s", path, want)
	}
	head := testGit(t, path, lookup, "rev-parse", "--abbrev-ref", "HEAD")
	if got := strings.TrimSpace(head.out); got != "smith/r1" {
		t.Errorf("worktree branch = %q, want smith/r1", got)
	}
	if again, err := CreateWorktree(ctx, d, "r1", lookup); err != nil || again != path {
		t.Errorf("CreateWorktree again = %q, %v; want the same worktree reused", again, err)
	}

	// Removing with the branch kept, then creating again, reuses the branch.
	if err := RemoveWorktree(d, "r1", nil, false, false, lookup); err != nil {
		t.Fatalf("RemoveWorktree(keep branch) = %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("worktree still exists after RemoveWorktree: %v", err)
	}
	if _, err := CreateWorktree(ctx, d, "r1", lookup); err != nil {
		t.Fatalf("CreateWorktree after --keep-branch = %v", err)
	}
	if err := RemoveWorktree(d, "r1", nil, true, false, lookup); err != nil {
		t.Fatalf("RemoveWorktree = %v", err)
	}
	if r := testGit(t, d.Workspace, lookup, "rev-parse", "--verify", "--quiet", "refs/heads/smith/r1"); r.err == nil {
		t.Error("branch smith/r1 still exists after RemoveWorktree with deleteBranch")
	}
	if err := RemoveWorktree(d, "r1", nil, true, false, lookup); err == nil {
		t.Error("RemoveWorktree of a run without a worktree = nil, want an error")
	}
}

func TestWorktreeRefusesNestedWorkspace(t *testing.T) {
	needGit(t)
	base := t.TempDir()
	gitInit(t, base) // BASE is the repository; WORKSPACE is only a folder in it
	d, err := confine.New(base)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(d.Workspace, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = CreateWorktree(context.Background(), d, "r1", os.LookupEnv)
	if err == nil || !strings.Contains(err.Error(), "not its top") {
		t.Fatalf("CreateWorktree in a nested workspace = %v, want a 'not its top' error", err)
	}
}

// testGit runs git with args through Smith's helper on the repository at
// dir.
func testGit(t *testing.T, dir string, lookup func(string) (string, bool), args ...string) gitResult {
	t.Helper()
	g, err := openRepo(context.Background(), dir, lookup)
	if err != nil {
		t.Fatal(err)
	}
	return g.git(context.Background(), args...)
}
