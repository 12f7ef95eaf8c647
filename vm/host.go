package vm

import (
	"context"
	"time"

	"smith/workers/confine"
	"smith/workers/step"
)

// A Host performs every effect of a run besides running its steps
// (Config.Registry): the clock, git worktrees, the agents' folders and
// messages, the files a condition or a prompt reads, the change plan and
// the run's own capture files. The VM itself does no file or process I/O
// and reads no clock (TestVMDoesNoIO in cmd/smithc checks its imports and
// calls), so another Host can record, replay or move a run's effects
// elsewhere. workers.Local is the Host of this machine; a Config must name
// its Host (the VM imports no worker, so it has no default).
type Host interface {
	// Now is the clock: the times of the run, its steps and events, and
	// the id of a fresh run given none.
	Now() time.Time
	// PresetVars returns the agent presets' own variables: the VM masks
	// their values like secrets and scans commits for the keys.
	PresetVars() step.PresetVars

	// RunWorktree returns the run's git worktree (isolation:
	// git-worktree), creating it on first use and repairing what a crash
	// left of it (base: the starting commit the state recorded), or a zero
	// RunTree when WORKSPACE is not a git repository and no worktree
	// exists.
	RunWorktree(ctx context.Context, d confine.Dir, runID, base string) (step.RunTree, error)
	// UnitWorktree returns the worktree of one thread of a parallel step,
	// created at the commit from of runWT (fresh: start it again).
	UnitWorktree(ctx context.Context, d confine.Dir, runWT, runID, step, key, from string, fresh bool) (string, error)
	// RestoreWorktree puts a worktree back to commit on branch (tracked
	// and untracked files, but those under exclude).
	RestoreWorktree(ctx context.Context, wt, branch, commit string, exclude []string) error
	// MergeUnit merges a thread's branch into the run's; RemoveUnit drops
	// its worktree; SweepUnits drops every thread worktree and branch of
	// the run but those kept ("<Step>/<key>"); Head returns the commit of
	// a worktree.
	MergeUnit(ctx context.Context, runWT, runID, step, key string) error
	RemoveUnit(ctx context.Context, d confine.Dir, runWT, runID, step, key string)
	SweepUnits(ctx context.Context, d confine.Dir, runWT, runID string, keep []string)
	Head(ctx context.Context, wt string) (string, error)
	// CommitStep commits a step's changes in a worktree (but the paths it
	// excludes) and returns the commit ("" when nothing changed); a change
	// holding a secret's value is E_SECRET_IN_CHANGE and commits nothing.
	CommitStep(ctx context.Context, c step.Commit) (string, error)

	// PrepareAgents creates the agents' folders; ConsumeMessages carries
	// out the moves of consumed messages; Notices returns the conflict
	// notices under runRoot after the first skip.
	PrepareAgents(d confine.Dir, folders []string) error
	ConsumeMessages(d confine.Dir, moves []step.Move) ([]step.Move, error)
	Notices(runRoot string, skip int) ([]step.Conflict, error)

	// FileExists reports whether rel (confined to d) names a file:
	// file_exists conditions.
	FileExists(d confine.Dir, rel string) (bool, error)
	// ReadArtifact returns the text of path relative to workdir, confined
	// under it (ARTIFACT: layers); an error wrapping fs.ErrNotExist for a
	// missing file.
	ReadArtifact(d confine.Dir, workdir, path string) (string, error)
	// ChangePlan returns the change plan Internal:UpdateChangePlan saved
	// under runRoot.
	ChangePlan(runRoot string) ([]string, error)

	// WriteFile writes one of the run's own files durably; ReadFile reads
	// one back; Remove removes one.
	WriteFile(path string, data []byte) error
	ReadFile(path string) ([]byte, error)
	Remove(path string) error
}

// A lineCounter is a Host that can count the lines a step's commit adds
// (optional: a Host without it leaves stats.totalLinesWritten to the
// workers that report lines themselves).
type lineCounter interface {
	CommitLines(ctx context.Context, worktree, commit string) (int, error)
}
