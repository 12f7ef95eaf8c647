package workers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"smith/source"
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
	_, err := discover(ctx, dir, lookup)
	return err == nil
}

// CreateWorktree gives a run its own git worktree of WORKSPACE on branch
// smith/<run_id>, starting at WORKSPACE's HEAD, and returns its path. An
// existing worktree of the run (a resume) is reused.
func CreateWorktree(ctx context.Context, d confine.Dir, runID string, lookup func(string) (string, bool)) (string, error) {
	path := WorktreePath(d, runID)
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return path, nil
	}
	top, err := discover(ctx, d.Workspace, lookup)
	if err != nil {
		return "", fmt.Errorf("isolation git-worktree: workspace %s is not a git repository", d.Workspace)
	}
	// A workspace nested inside a larger repository would give a worktree of
	// the outer repository: refuse it rather than isolate the wrong tree.
	if !sameDir(top, d.Workspace) {
		return "", fmt.Errorf("isolation git-worktree: workspace %s is inside the git repository %s, not its top; make the workspace its own repository",
			d.Workspace, top)
	}
	g, err := openRepo(ctx, d.Workspace, lookup)
	if err != nil {
		return "", fmt.Errorf("isolation git-worktree: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("create worktree directory: %w", err)
	}
	branch := WorktreeBranch(runID)
	args := []string{"worktree", "add", "-b", branch, path, "HEAD"}
	if g.ok(ctx, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch) {
		// The branch survived an earlier `smithvm clean --keep-branch`:
		// check it out again rather than fail.
		args = []string{"worktree", "add", path, branch}
	}
	if r := g.git(ctx, args...); r.err != nil {
		return "", fmt.Errorf("git worktree add: %v: %s", r.err, strings.TrimSpace(r.out))
	}
	// Keep the starting commit for diff, however the branches move on.
	if !g.ok(ctx, "rev-parse", "--verify", "--quiet", BaseRef(runID)) {
		wt, err := openRepo(ctx, path, lookup)
		if err != nil {
			return "", err
		}
		if r := wt.git(ctx, "update-ref", BaseRef(runID), "HEAD"); r.err != nil {
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
	g, err := openRepo(ctx, d.Workspace, lookup)
	if err != nil {
		return err
	}
	if !force {
		if hasWT {
			if wt, err := openRepo(ctx, path, lookup); err == nil {
				if r := wt.git(ctx, "status", "--porcelain"); r.err == nil && strings.TrimSpace(r.out) != "" {
					return &BranchError{Code: source.EUnmerged, Msg: fmt.Sprintf("the worktree of run '%s' has uncommitted changes; commit them or pass --force", runID)}
				}
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
		if r := g.git(ctx, "worktree", "remove", "--force", path); r.err != nil {
			return fmt.Errorf("git worktree remove: %v: %s", r.err, strings.TrimSpace(r.out))
		}
	}
	if deleteBranch {
		if g.ok(ctx, "rev-parse", "--verify", "--quiet", "refs/heads/"+WorktreeBranch(runID)) {
			if r := g.git(ctx, "branch", "-D", WorktreeBranch(runID)); r.err != nil {
				return fmt.Errorf("git branch -D: %v: %s", r.err, strings.TrimSpace(r.out))
			}
		}
		_ = g.git(ctx, "update-ref", "-d", BaseRef(runID))
	}
	return nil
}

// sameDir reports whether a and b name the same directory.
func sameDir(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// ChangedFiles returns the files run runID has changed on its branch
// against its starting commit (sorted), and in its worktree not yet
// committed; none when it has no branch.
func ChangedFiles(ctx context.Context, d confine.Dir, runID string, lookup func(string) (string, bool)) []string {
	g, err := openRepo(ctx, d.Workspace, lookup)
	if err != nil || !g.ok(ctx, "rev-parse", "--verify", "--quiet", BaseRef(runID)) {
		return nil
	}
	out := splitNonEmpty(g.out(ctx, "diff", "--no-ext-diff", "--no-textconv", "--name-only", BaseRef(runID), WorktreeBranch(runID)).out)
	if wt, err := openRepo(ctx, WorktreePath(d, runID), lookup); err == nil {
		for _, l := range splitNonEmpty(wt.out(ctx, "status", "--porcelain", "--untracked-files=all").out) {
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
