package workers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"smith/source"
	"smith/workers/confine"
	"smith/workers/step"
)

// Units (CONTRACT 12.4): in a run with its own worktree, each iteration of a
// parallel for_each and each branch of a parallel step (a thread) works in a
// worktree of its own on branch smith-unit/<run_id>/<Step>/<key>, started
// from the run's branch at the fork; the join merges the units' branches
// into the run's branch in index (or branch name) order.

// UnitWorktreePath is where one thread's worktree lives:
// BASE/.orchestrator/unit-worktrees/<run_id>/<Step>/<key>.
func UnitWorktreePath(d confine.Dir, runID, stepID, key string) string {
	return filepath.Join(d.Base, ".orchestrator", "unit-worktrees", runID, stepID, key)
}

// UnitWorktree gives thread key of step stepID its own worktree and returns its
// path. With fresh (a thread that starts), an old worktree and branch of
// the same thread are replaced by a new branch at from, the run's commit at
// the fork. Otherwise (a thread that continues after a crash) a whole
// worktree on the thread's branch is kept, and anything else at its path
// (an empty folder, a half-made worktree) is removed and made again from
// the thread's branch (or from, when the branch was never made); the
// caller then restores it to the thread's last saved commit.
func (l Local) UnitWorktree(ctx context.Context, d confine.Dir, runWT, runID, stepID, key, from string, fresh bool) (string, error) {
	path := UnitWorktreePath(d, runID, stepID, key)
	branch := step.UnitBranch(runID, stepID, key)
	if !fresh && wholeWorktree(ctx, path, branch, l.Env) {
		return path, nil
	}
	g, err := openWorktree(ctx, runWT, l.Env)
	if err != nil {
		return "", err
	}
	if from == "" {
		from = "HEAD"
	}
	if err := dropWorktree(ctx, g, path); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("create unit worktree directory: %w", err)
	}
	args := []string{"worktree", "add", "-B", branch, path, from}
	if !fresh && revParse(ctx, g, "refs/heads/"+branch) != "" {
		args = []string{"worktree", "add", path, branch}
	}
	if r := g.git(ctx, args...); r.err != nil {
		return "", fmt.Errorf("git worktree add %s: %v: %s", branch, r.err, strings.TrimSpace(r.out))
	}
	return path, nil
}

// MergeUnit merges thread key's branch into the run's worktree runWT (a
// fast-forward where possible, else a merge commit). A branch that does not
// exist (the thread never started) or is merged already is nothing to do.
// On a conflict the run's worktree is left as it was and the error is
// E_MERGE_CONFLICT naming the files; the unit's branch is kept.
func (l Local) MergeUnit(ctx context.Context, runWT, runID, stepID, key string) error {
	branch := step.UnitBranch(runID, stepID, key)
	g, err := openWorktree(ctx, runWT, l.Env)
	if err != nil {
		return err
	}
	if !g.ok(ctx, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch) {
		return nil
	}
	_, files, err := merge(ctx, g, branch, fmt.Sprintf("smith: join %s [%s] (run %s)", stepID, key, runID))
	if err != nil || files == nil {
		return err
	}
	return &step.BranchError{Code: source.EMergeConflict, Files: files,
		Msg: fmt.Sprintf("joining %s [%s] conflicts in %s; the branch %s is kept for inspection", stepID, key, strings.Join(files, ", "), branch)}
}

// Head returns the commit checked out in the worktree wt.
func (l Local) Head(ctx context.Context, wt string) (string, error) {
	g, err := openWorktree(ctx, wt, l.Env)
	if err != nil {
		return "", err
	}
	r := g.git(ctx, "rev-parse", "HEAD")
	if r.err != nil {
		return "", fmt.Errorf("git rev-parse HEAD: %v", r.err)
	}
	return strings.TrimSpace(r.out), nil
}

// RemoveUnit removes thread key's worktree and branch after a join that
// merged it, once the join is saved (best effort: what is left is only
// clutter, which SweepUnits removes on resume).
func (l Local) RemoveUnit(ctx context.Context, d confine.Dir, runWT, runID, stepID, key string) {
	g, err := openRepo(ctx, runWT, l.Env)
	if err != nil {
		return
	}
	removeUnit(ctx, g, d, runID, stepID, key)
}

// removeUnit removes thread key's worktree (whatever a crash left of it)
// and its branch.
func removeUnit(ctx context.Context, g *gitRepo, d confine.Dir, runID, stepID, key string) {
	_ = dropWorktree(ctx, g, UnitWorktreePath(d, runID, stepID, key))
	if branch := "refs/heads/" + step.UnitBranch(runID, stepID, key); revParse(ctx, g, branch) != "" {
		_ = g.git(ctx, "update-ref", "-d", branch)
	}
}

// SweepUnits removes every thread worktree and branch of run runID but
// those keep names ("<Step>/<key>"): on resume, what a crash left of a
// join's removals or of a worktree being made, so that no unit branch
// outlives its join.
func (l Local) SweepUnits(ctx context.Context, d confine.Dir, runWT, runID string, keep []string) {
	g, err := openWorktree(ctx, runWT, l.Env)
	if err != nil {
		return
	}
	seen := map[string]bool{}
	var units []string
	add := func(u string) {
		if !seen[u] && !slices.Contains(keep, u) {
			seen[u] = true
			units = append(units, u)
		}
	}
	prefix := "smith-unit/" + runID + "/"
	for _, b := range splitNonEmpty(g.out(ctx, "for-each-ref", "--format=%(refname:short)", "refs/heads/"+prefix).out) {
		if u, ok := strings.CutPrefix(b, prefix); ok {
			add(u)
		}
	}
	root := filepath.Join(d.Base, ".orchestrator", "unit-worktrees", runID)
	steps, _ := os.ReadDir(root)
	for _, s := range steps {
		keys, _ := os.ReadDir(filepath.Join(root, s.Name()))
		for _, k := range keys {
			add(s.Name() + "/" + k.Name())
		}
	}
	for _, u := range units {
		stepID, key, ok := strings.Cut(u, "/")
		if ok {
			removeUnit(ctx, g, d, runID, stepID, key)
		}
	}
}

// RemoveUnits removes every thread worktree and branch of run runID (those
// a conflicting join kept): smithvm clean --force.
func RemoveUnits(d confine.Dir, runID string, lookup func(string) (string, bool)) {
	ctx := context.Background()
	g, err := openWorkspace(ctx, d.Workspace, lookup)
	if err != nil {
		return
	}
	root := filepath.Join(d.Base, ".orchestrator", "unit-worktrees", runID)
	if isDir(root) {
		_ = os.RemoveAll(root)
		forgetWorktrees(g, root)
	}
	refs := g.out(ctx, "for-each-ref", "--format=%(refname:short)", "refs/heads/smith-unit/"+runID+"/")
	for _, b := range splitNonEmpty(refs.out) {
		_ = g.git(ctx, "branch", "-D", b)
	}
}
