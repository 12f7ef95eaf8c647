package workers

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"smith/workers/step"
)

// fullDiskGit returns a lookup whose PATH finds first a git that runs the
// real one, but for `git worktree add` under a file size limit of 2 KiB
// with SIGXFSZ ignored: writing a bigger file fails with EFBIG, as it
// would with ENOSPC on a full disk, and git's checkout fails the way a
// full disk makes it fail ("unable to write file").
func fullDiskGit(t *testing.T) func(string) (string, bool) {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh for the fake git")
	}
	bin := t.TempDir()
	script := "#!/bin/sh\ncase \" $* \" in *\" worktree add \"*) trap '' XFSZ; ulimit -f 4;; esac\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	path := bin + string(os.PathListSeparator) + os.Getenv("PATH")
	home := t.TempDir()
	return func(k string) (string, bool) {
		switch k {
		case "PATH":
			return path, true
		case "HOME":
			return home, true
		}
		return "", false
	}
}

// TestRunWorktreeFailedAddLeavesNothing: a git worktree add that fails
// (a full disk) leaves no branch smith/<run_id> and no base ref that the
// call made, and no worktree or record of it; a branch that was there
// before the call (a resume's) is kept.
func TestRunWorktreeFailedAddLeavesNothing(t *testing.T) {
	needGit(t)
	t.Parallel()
	ctx := context.Background()
	for _, tt := range []struct {
		name       string
		branchedAt bool // the run's branch and base ref exist before the call
		wantBranch bool
	}{
		{name: "new run", branchedAt: false, wantBranch: false},
		{name: "resume with its branch", branchedAt: true, wantBranch: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := gitProject(t)
			writeFiles(t, d.Workspace, "big.txt", strings.Repeat("0123456789abcdef\n", 4096))
			userGit(t, d.Workspace, "add", "big.txt")
			userGit(t, d.Workspace, "commit", "-q", "-m", "big")
			head := strings.TrimSpace(userGit(t, d.Workspace, "rev-parse", "HEAD"))
			if tt.branchedAt {
				userGit(t, d.Workspace, "branch", step.WorktreeBranch("r1"), head)
				userGit(t, d.Workspace, "update-ref", BaseRef("r1"), head)
			}
			_, err := OpenRunTree(ctx, d, "r1", "", fullDiskGit(t))
			if err == nil || !strings.Contains(err.Error(), "worktree add") {
				t.Fatalf("OpenRunTree on a full disk = %v, want a git worktree add error", err)
			}
			for _, ref := range []string{"refs/heads/" + step.WorktreeBranch("r1"), BaseRef("r1")} {
				got := gitOut(t, d.Workspace, "rev-parse", "--verify", "--quiet", ref) != ""
				if got != tt.wantBranch {
					t.Errorf("after the failed add, %s exists = %v, want %v", ref, got, tt.wantBranch)
				}
			}
			if _, err := os.Lstat(WorktreePath(d, "r1")); err == nil {
				t.Errorf("the worktree folder %s remains", WorktreePath(d, "r1"))
			}
			if recs, _ := filepath.Glob(filepath.Join(d.Workspace, ".git", "worktrees", "*")); len(recs) > 0 {
				t.Errorf("git's worktree records remain: %v", recs)
			}
			// The disk freed, the run's worktree is made.
			tree, err := OpenRunTree(ctx, d, "r1", "", os.LookupEnv)
			if err != nil {
				t.Fatalf("OpenRunTree after the disk was freed = %v", err)
			}
			if b, err := os.ReadFile(filepath.Join(tree.Path, "big.txt")); err != nil || !bytes.HasPrefix(b, []byte("0123")) {
				t.Errorf("the worktree's big.txt = %.20q, %v", b, err)
			}
		})
	}
}
