package workers

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"smith/workers/step"
)

// TestGitBookkeepingOutlivesAStop: a stopped run's context (Ctrl-C,
// SIGTERM, smithvm stop) does not cut off Smith's git: the worktree is
// made, the step's commit lands, a unit worktree is made and merged, so
// the stop interrupts the run at its next step instead of failing the step
// or the join half-way (a failure that resume would then follow) or
// leaving a lock or a half-made worktree.
func TestGitBookkeepingOutlivesAStop(t *testing.T) {
	t.Parallel()
	d, _ := runWorktree(t, os.LookupEnv)
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	l := Local{Env: os.LookupEnv}
	wt, err := CreateWorktree(stopped, d, "r2", os.LookupEnv)
	if err != nil {
		t.Fatalf("CreateWorktree after a stop: %v", err)
	}
	writeFiles(t, wt, "a.txt", "a\n")
	if h, err := l.CommitStep(stopped, step.Commit{Worktree: wt, Msg: "smith: S"}); err != nil || h == "" {
		t.Fatalf("CommitStep after a stop = %q, %v, want a commit", h, err)
	}
	u, err := l.UnitWorktree(stopped, d, wt, "r2", "Par", "0", "", true)
	if err != nil {
		t.Fatalf("UnitWorktree after a stop: %v", err)
	}
	writeFiles(t, u, "b.txt", "b\n")
	if _, err := l.CommitStep(stopped, step.Commit{Worktree: u, Msg: "smith: U"}); err != nil {
		t.Fatalf("CommitStep in the unit after a stop: %v", err)
	}
	if err := l.MergeUnit(stopped, wt, "r2", "Par", "0"); err != nil {
		t.Fatalf("MergeUnit after a stop: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(wt, "b.txt")); err != nil || string(data) != "b\n" {
		t.Errorf("the unit's work is not in the run's worktree after the join: %q, %v", data, err)
	}
	locks, _ := filepath.Glob(filepath.Join(d.Workspace, ".git", "*.lock"))
	if len(locks) > 0 {
		t.Errorf("git locks left: %s", strings.Join(locks, " "))
	}
}
