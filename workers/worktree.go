package workers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"smith/source"
	"smith/workers/confine"
	"smith/workers/proc"
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
	// Keep the starting commit for diff, however the branches move on.
	if git(ctx, d.Workspace, lookup, "rev-parse", "--verify", "--quiet", BaseRef(runID)).err != nil {
		if r := git(ctx, path, lookup, "update-ref", BaseRef(runID), "HEAD"); r.err != nil {
			return "", fmt.Errorf("git update-ref %s: %v: %s", BaseRef(runID), r.err, strings.TrimSpace(r.out))
		}
	}
	return path, nil
}

// RemoveWorktree removes a run's worktree and, with deleteBranch, its
// branch and its starting-commit ref. Unless force, it refuses (E_UNMERGED)
// to delete a branch with commits the checked-out branch does not contain,
// and to remove a worktree with uncommitted changes. A run with neither a
// worktree nor a branch is an error.
func RemoveWorktree(d confine.Dir, runID string, deleteBranch, force bool, lookup func(string) (string, bool)) error {
	ctx := context.Background()
	path := WorktreePath(d, runID)
	hasWT := isDir(path)
	if !hasWT && (!deleteBranch || hasBranch(ctx, d, runID, lookup) != nil) {
		return &BranchError{Code: source.EUsage, Msg: fmt.Sprintf("run '%s' has no worktree at %s and no branch %s", runID, path, WorktreeBranch(runID))}
	}
	if !force {
		if hasWT {
			if r := git(ctx, path, lookup, "status", "--porcelain"); r.err == nil && strings.TrimSpace(r.out) != "" {
				return &BranchError{Code: source.EUnmerged, Msg: fmt.Sprintf("the worktree of run '%s' has uncommitted changes; commit them or pass --force", runID)}
			}
		}
		if deleteBranch {
			unmerged, err := Unmerged(ctx, d, runID, lookup)
			if err != nil {
				return err
			}
			if unmerged {
				return &BranchError{Code: source.EUnmerged, Msg: fmt.Sprintf("branch %s has commits that are not merged: 'smithvm merge %s' first, or pass --force to delete them", WorktreeBranch(runID), runID)}
			}
		}
	}
	if hasWT {
		if r := git(ctx, d.Workspace, lookup, "worktree", "remove", "--force", path); r.err != nil {
			return fmt.Errorf("git worktree remove: %v: %s", r.err, strings.TrimSpace(r.out))
		}
	}
	if deleteBranch {
		if git(ctx, d.Workspace, lookup, "rev-parse", "--verify", "--quiet", "refs/heads/"+WorktreeBranch(runID)).err == nil {
			if r := git(ctx, d.Workspace, lookup, "branch", "-D", WorktreeBranch(runID)); r.err != nil {
				return fmt.Errorf("git branch -D: %v: %s", r.err, strings.TrimSpace(r.out))
			}
		}
		_ = git(ctx, d.Workspace, lookup, "update-ref", "-d", BaseRef(runID))
	}
	return nil
}

// sameDir reports whether a and b name the same directory.
func sameDir(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// gitTimeout bounds one git command.
const gitTimeout = 2 * time.Minute

type gitResult struct {
	out string
	err error
}

// git runs git with argv in dir, with the child environment of CONTRACT 3.5;
// its out is stdout and stderr together.
func git(ctx context.Context, dir string, lookup func(string) (string, bool), args ...string) gitResult {
	res, err := runGit(ctx, dir, lookup, args)
	return gitResult{res.Stdout + res.Stderr, err}
}

// runGit runs git once; a failure to start or a non-zero exit is its error.
func runGit(ctx context.Context, dir string, lookup func(string) (string, bool), args []string) (proc.Result, error) {
	res := proc.Run(ctx, proc.Spec{Argv: append([]string{"git"}, args...), Dir: dir, Env: proc.BuildEnv(lookup, nil, nil, nil), Timeout: gitTimeout})
	if res.StartErr == nil && res.ExitCode != 0 {
		return res, fmt.Errorf("exit status %d", res.ExitCode)
	}
	return res, res.StartErr
}

// ChangedFiles returns the files run runID has changed on its branch
// against its starting commit (sorted), and in its worktree not yet
// committed; none when it has no branch.
func ChangedFiles(ctx context.Context, d confine.Dir, runID string, lookup func(string) (string, bool)) []string {
	if git(ctx, d.Workspace, lookup, "rev-parse", "--verify", "--quiet", BaseRef(runID)).err != nil {
		return nil
	}
	out := splitNonEmpty(runGitOut(ctx, d.Workspace, lookup, "diff", "--name-only", BaseRef(runID), WorktreeBranch(runID)).out)
	if wt := WorktreePath(d, runID); isDir(wt) {
		for _, l := range splitNonEmpty(runGitOut(ctx, wt, lookup, "status", "--porcelain", "--untracked-files=all").out) {
			if len(l) > 3 {
				name := l[3:]
				if _, after, ok := strings.Cut(name, " -> "); ok {
					name = after
				}
				out = append(out, strings.Trim(name, `"`))
			}
		}
	}
	return out
}
