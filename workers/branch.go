package workers

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"

	"smith/source"
	"smith/workers/confine"
)

// A run's branch (CONTRACT 12.4): every step that changed files in the
// run's worktree is committed on smith/<run_id>; the run's starting commit
// is kept in the ref refs/smith-base/<run_id> so that diff can compare
// against it however the repository moves on; merge brings the branch into
// the repository's checked-out branch, and clean refuses to delete a branch
// with commits that are not merged.

// smithAuthor is who the step commits are by.
var smithAuthor = []string{"-c", "user.name=Smith", "-c", "user.email=smith@localhost", "-c", "commit.gpgsign=false"}

// BaseRef is the ref that holds a run's starting commit.
func BaseRef(runID string) string { return "refs/smith-base/" + runID }

// CommitStep commits every change in the worktree wt (added, changed and
// removed files) on its branch with msg, and returns the new commit's hash;
// "" when nothing changed.
func (l Local) CommitStep(ctx context.Context, wt, msg string) (string, error) {
	if r := git(ctx, wt, l.Env, "add", "-A", "--", "."); r.err != nil {
		return "", fmt.Errorf("git add: %v: %s", r.err, strings.TrimSpace(r.out))
	}
	if git(ctx, wt, l.Env, "diff", "--cached", "--quiet").err == nil {
		return "", nil // nothing staged
	}
	args := append(append([]string(nil), smithAuthor...), "commit", "-q", "--no-verify", "-m", msg)
	if r := git(ctx, wt, l.Env, args...); r.err != nil {
		return "", fmt.Errorf("git commit: %v: %s", r.err, strings.TrimSpace(r.out))
	}
	r := git(ctx, wt, l.Env, "rev-parse", "HEAD")
	if r.err != nil {
		return "", fmt.Errorf("git rev-parse: %v", r.err)
	}
	return strings.TrimSpace(r.out), nil
}

// StepCommitMessage is the message of a step's commit.
func StepCommitMessage(step, runID string, attempt int) string {
	return fmt.Sprintf("smith: %s (run %s, attempt %d)", step, runID, attempt)
}

// A BranchError is a failure of diff, merge or clean with its code:
// E_MERGE_CONFLICT (naming the files), E_UNMERGED or E_USAGE.
type BranchError struct {
	Code  source.Code
	Msg   string
	Files []string
}

func (e *BranchError) Error() string { return string(e.Code) + ": " + e.Msg }

// ErrCode returns the error's code.
func (e *BranchError) ErrCode() source.Code { return e.Code }

// hasBranch checks that run runID has its branch in the repository of d.
func hasBranch(ctx context.Context, d confine.Dir, runID string, lookup func(string) (string, bool)) error {
	if !IsGitRepo(ctx, d.Workspace, lookup) {
		return &BranchError{Code: source.EUsage, Msg: fmt.Sprintf("workspace %s is not a git repository, so run '%s' has no branch", d.Workspace, runID)}
	}
	if git(ctx, d.Workspace, lookup, "rev-parse", "--verify", "--quiet", "refs/heads/"+WorktreeBranch(runID)).err != nil {
		return &BranchError{Code: source.EUsage, Msg: fmt.Sprintf("run '%s' has no branch %s: it did not run with isolation: git-worktree (or its branch was deleted)", runID, WorktreeBranch(runID))}
	}
	return nil
}

// Diff returns the changes of run runID's branch against its starting
// commit: a unified diff, or with stat the summary.
func Diff(ctx context.Context, d confine.Dir, runID string, stat bool, lookup func(string) (string, bool)) (string, error) {
	if err := hasBranch(ctx, d, runID, lookup); err != nil {
		return "", err
	}
	base := BaseRef(runID)
	if git(ctx, d.Workspace, lookup, "rev-parse", "--verify", "--quiet", base).err != nil {
		// No record of the start (a branch made before Smith kept one):
		// compare with the merge base.
		r := git(ctx, d.Workspace, lookup, "merge-base", "HEAD", WorktreeBranch(runID))
		if r.err != nil {
			return "", fmt.Errorf("git merge-base: %v: %s", r.err, strings.TrimSpace(r.out))
		}
		base = strings.TrimSpace(r.out)
	}
	args := []string{"diff", "--no-color", "--no-ext-diff"}
	if stat {
		args = append(args, "--stat")
	}
	r := runGitOut(ctx, d.Workspace, lookup, append(args, base, WorktreeBranch(runID))...)
	if r.err != nil {
		return "", fmt.Errorf("git diff: %v: %s", r.err, strings.TrimSpace(r.out))
	}
	return r.out, nil
}

// Merge merges run runID's branch into the branch checked out in the
// repository: a fast-forward where possible, else a merge commit. On a
// conflict it leaves the repository as it was and returns E_MERGE_CONFLICT
// naming the files.
func Merge(ctx context.Context, d confine.Dir, runID string, lookup func(string) (string, bool)) (string, error) {
	if err := hasBranch(ctx, d, runID, lookup); err != nil {
		return "", err
	}
	if r := git(ctx, d.Workspace, lookup, "status", "--porcelain", "--untracked-files=no"); r.err == nil && strings.TrimSpace(r.out) != "" {
		return "", &BranchError{Code: source.EUsage, Msg: "the repository has uncommitted changes to tracked files: commit or stash them, then merge again"}
	}
	branch := WorktreeBranch(runID)
	out, files, err := merge(ctx, d.Workspace, lookup, branch, "smith: merge run "+runID)
	if err != nil || files == nil {
		return out, err
	}
	return "", &BranchError{Code: source.EMergeConflict, Files: files,
		Msg: fmt.Sprintf("merging %s conflicts in %s; the repository is as it was (resolve by hand: git merge %s)", branch, strings.Join(files, ", "), branch)}
}

// Unmerged reports whether run runID's branch has commits that the
// repository's checked-out branch does not contain. A missing branch has
// none.
func Unmerged(ctx context.Context, d confine.Dir, runID string, lookup func(string) (string, bool)) (bool, error) {
	branch := WorktreeBranch(runID)
	if git(ctx, d.Workspace, lookup, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch).err != nil {
		return false, nil
	}
	r := git(ctx, d.Workspace, lookup, "rev-list", "--count", "HEAD.."+branch)
	if r.err != nil {
		return false, fmt.Errorf("git rev-list: %v: %s", r.err, strings.TrimSpace(r.out))
	}
	return strings.TrimSpace(r.out) != "0", nil
}

// merge merges branch into the branch checked out in dir, as Smith, with
// message msg, and returns git's output. On a conflict it aborts the merge,
// leaving dir as it was, and returns the conflicted files, sorted.
func merge(ctx context.Context, dir string, lookup func(string) (string, bool), branch, msg string) (out string, conflicts []string, err error) {
	args := append(append([]string(nil), smithAuthor...), "merge", "--no-edit", "-m", msg, branch)
	r := git(ctx, dir, lookup, args...)
	if r.err == nil {
		return strings.TrimSpace(r.out), nil, nil
	}
	files := splitNonEmpty(runGitOut(ctx, dir, lookup, "diff", "--name-only", "--diff-filter=U").out)
	if len(files) == 0 {
		return "", nil, fmt.Errorf("git merge %s: %v: %s", branch, r.err, strings.TrimSpace(r.out))
	}
	if a := git(ctx, dir, lookup, "merge", "--abort"); a.err != nil {
		return "", nil, fmt.Errorf("git merge --abort after a conflict in %s: %v: %s", strings.Join(files, ", "), a.err, strings.TrimSpace(a.out))
	}
	sort.Strings(files)
	return "", files, nil
}

// runGitOut is git with its stdout alone (diffs must not mix in stderr), or
// its stderr when it failed.
func runGitOut(ctx context.Context, dir string, lookup func(string) (string, bool), args ...string) gitResult {
	res, err := runGit(ctx, dir, lookup, args)
	if err != nil {
		return gitResult{res.Stderr, err}
	}
	return gitResult{res.Stdout, nil}
}

func splitNonEmpty(s string) []string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// isDir reports whether path is a directory.
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}
