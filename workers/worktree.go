package workers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"smith/workers/confine"
)

// WorktreePath is where the git worktree of a run lives (CONTRACT 8):
// BASE/.orchestrator/worktrees/<run_id>.
func WorktreePath(d confine.Dir, runID string) string {
	return filepath.Join(d.Base, ".orchestrator", "worktrees", runID)
}

// WorktreeBranch is the branch of a run's worktree.
func WorktreeBranch(runID string) string { return "smith/" + runID }

// IsGitRepo reports whether dir is inside a git work tree.
func IsGitRepo(ctx context.Context, dir string, lookup func(string) (string, bool)) bool {
	res := git(ctx, dir, lookup, "rev-parse", "--is-inside-work-tree")
	return res.err == nil && strings.TrimSpace(res.out) == "true"
}

// CreateWorktree gives a run its own git worktree of WORKSPACE on branch
// smith/<run_id>, starting at WORKSPACE's HEAD, and returns its path. An
// existing worktree of the run (a resume) is reused.
func CreateWorktree(ctx context.Context, d confine.Dir, runID string, lookup func(string) (string, bool)) (string, error) {
	path := WorktreePath(d, runID)
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return path, nil
	}
	if !IsGitRepo(ctx, d.Workspace, lookup) {
		return "", fmt.Errorf("isolation git-worktree: workspace %s is not a git repository", d.Workspace)
	}
	// A workspace nested inside a larger repository would give a worktree of
	// the outer repository: refuse it rather than isolate the wrong tree.
	top := git(ctx, d.Workspace, lookup, "rev-parse", "--show-toplevel")
	if top.err != nil || !sameDir(strings.TrimSpace(top.out), d.Workspace) {
		return "", fmt.Errorf("isolation git-worktree: workspace %s is inside the git repository %s, not its top; make the workspace its own repository",
			d.Workspace, strings.TrimSpace(top.out))
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("create worktree directory: %w", err)
	}
	branch := WorktreeBranch(runID)
	args := []string{"worktree", "add", "-b", branch, path, "HEAD"}
	if git(ctx, d.Workspace, lookup, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch).err == nil {
		// The branch survived an earlier `smithvm clean --keep-branch`:
		// check it out again rather than fail.
		args = []string{"worktree", "add", path, branch}
	}
	if r := git(ctx, d.Workspace, lookup, args...); r.err != nil {
		return "", fmt.Errorf("git worktree add: %v: %s", r.err, strings.TrimSpace(r.out))
	}
	return path, nil
}

// RemoveWorktree removes a run's worktree and, with deleteBranch, its
// branch. A run without a worktree is an error.
func RemoveWorktree(d confine.Dir, runID string, deleteBranch bool, lookup func(string) (string, bool)) error {
	ctx := context.Background()
	path := WorktreePath(d, runID)
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("run '%s' has no worktree at %s", runID, path)
	}
	if r := git(ctx, d.Workspace, lookup, "worktree", "remove", "--force", path); r.err != nil {
		return fmt.Errorf("git worktree remove: %v: %s", r.err, strings.TrimSpace(r.out))
	}
	if deleteBranch {
		if r := git(ctx, d.Workspace, lookup, "branch", "-D", WorktreeBranch(runID)); r.err != nil {
			return fmt.Errorf("git branch -D: %v: %s", r.err, strings.TrimSpace(r.out))
		}
	}
	return nil
}

// sameDir reports whether a and b name the same directory.
func sameDir(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

type gitResult struct {
	out string
	err error
}

// git runs git with argv in dir, with the child environment of CONTRACT 3.5.
func git(ctx context.Context, dir string, lookup func(string) (string, bool), args ...string) gitResult {
	res := RunProc(ctx, ProcSpec{
		Argv:    append([]string{"git"}, args...),
		Dir:     dir,
		Env:     BuildEnv(lookup, nil, nil, nil),
		Timeout: 2 * time.Minute,
	})
	out := string(res.Stdout) + string(res.Stderr)
	switch {
	case res.StartErr != nil:
		return gitResult{out, res.StartErr}
	case res.ExitCode != 0:
		return gitResult{out, fmt.Errorf("exit status %d", res.ExitCode)}
	}
	return gitResult{out, nil}
}
