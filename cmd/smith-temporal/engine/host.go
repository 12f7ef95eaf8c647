package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"smith/workers"
	"smith/workers/confine"
	"smith/workers/step"
)

// The effects of vm.Host besides the clock and the file reads of
// files.go: the run's git worktrees and the agents' folders and messages.
// In workflow code each is the HostActivity, sent to the run's queue
// (hostQueue: the queue of the host that holds the run's worktree, or
// the shared queue), so the workflow touches no file and replays them.

// HostInput is one of those effects.
type HostInput struct {
	Op string // one of the host* operations below
	// Workspace, when set, is WORKSPACE for the agents' operations: the
	// run's worktree (an absolute path on the host that holds it);
	// otherwise the worker's BASE/workspace.
	Workspace string       `json:",omitempty"`
	RunWT     string       `json:",omitempty"` // the run's worktree
	WT        string       `json:",omitempty"` // a worktree (head, commit-step)
	RunID     string       `json:",omitempty"`
	Step      string       `json:",omitempty"`
	Key       string       `json:",omitempty"` // a thread's key
	Fresh     bool         `json:",omitempty"`
	From      string       `json:",omitempty"` // unit-worktree: the fork's commit; run-worktree: the base
	Rev       string       `json:",omitempty"` // restore-worktree: the commit
	Branch    string       `json:",omitempty"` // restore-worktree
	Exclude   []string     `json:",omitempty"` // restore-worktree
	Keep      []string     `json:",omitempty"` // sweep-units`
	Commit    *step.Commit `json:",omitempty"` // commit-step (secrets by name only)
	Folders   []string     `json:",omitempty"`
	Moves     []step.Move  `json:",omitempty"`
}

// HostOutput is its answer, the error as data.
type HostOutput struct {
	Path  string      `json:",omitempty"` // a worktree, a commit
	Base  string      `json:",omitempty"` // run-worktree: the run's starting commit
	Head  string      `json:",omitempty"` // run-worktree: its branch's commit
	Moves []step.Move `json:",omitempty"`
	wireErr
}

const (
	hostRunWorktree     = "run-worktree"
	hostUnitWorktree    = "unit-worktree"
	hostMergeUnit       = "merge-unit"
	hostRemoveUnit      = "remove-unit"
	hostRestoreWorktree = "restore-worktree"
	hostSweepUnits      = "sweep-units"
	hostHead            = "head"
	hostCommitStep      = "commit-step"
	hostPrepareAgents   = "prepare-agents"
	hostConsumeMessages = "consume-messages"
)

// Host carries out one effect on this worker's host, in its BASE.
func (a *Activities) Host(ctx context.Context, in HostInput) (HostOutput, error) {
	// A git operation on a large repository may take long: heartbeats
	// tell a slow one from a dead worker (whose operation then runs
	// again, on the same host queue, within the heartbeat timeout).
	stop := a.heartbeat(ctx)
	defer stop()
	dirs, err := confine.New(a.Base)
	if err != nil {
		return HostOutput{}, err
	}
	if in.Workspace != "" {
		dirs.Workspace = in.Workspace
	}
	l := workers.Local{Env: a.lookup}
	var out HostOutput
	switch in.Op {
	case hostRunWorktree:
		var t step.RunTree
		t, err = l.RunWorktree(ctx, dirs, in.RunID, in.From)
		out.Path, out.Base, out.Head = t.Path, t.Base, t.Head
	case hostUnitWorktree:
		out.Path, err = l.UnitWorktree(ctx, dirs, in.RunWT, in.RunID, in.Step, in.Key, in.From, in.Fresh)
	case hostRestoreWorktree:
		err = l.RestoreWorktree(ctx, in.WT, in.Branch, in.Rev, in.Exclude)
	case hostSweepUnits:
		l.SweepUnits(ctx, dirs, in.RunWT, in.RunID, in.Keep)
	case hostMergeUnit:
		err = l.MergeUnit(ctx, in.RunWT, in.RunID, in.Step, in.Key)
	case hostRemoveUnit:
		l.RemoveUnit(ctx, dirs, in.RunWT, in.RunID, in.Step, in.Key)
	case hostHead:
		out.Path, err = l.Head(ctx, in.WT)
	case hostCommitStep:
		if in.Commit == nil {
			return out, fmt.Errorf("host: %s without a commit", in.Op)
		}
		out.Path, err = l.CommitStep(ctx, *in.Commit)
	case hostPrepareAgents:
		err = l.PrepareAgents(dirs, in.Folders)
	case hostConsumeMessages:
		out.Moves, err = l.ConsumeMessages(dirs, in.Moves)
	default:
		return out, fmt.Errorf("host: unknown operation %q", in.Op)
	}
	out.wireErr = wireErrOf(err)
	return out, nil
}

// Pin returns the task queue of this worker's host: a run whose worktree
// this worker creates sends its later activities there. "" (a worker
// whose BASE is shared by the fleet: --shared-workspace) leaves the run
// on the shared queue.
func (a *Activities) Pin(ctx context.Context) (string, error) {
	return a.HostQueue, nil
}

// host runs one effect as the HostActivity on the run's queue.
func (f *workflowHost) host(in HostInput) HostOutput {
	var out HostOutput
	ao := workflow.ActivityOptions{StartToCloseTimeout: time.Hour, HeartbeatTimeout: 10 * time.Second}
	if err := f.execute(HostActivity, ao, in, &out); err != nil {
		return HostOutput{wireErr: activityErr("host", err)}
	}
	return out
}

// workspace is d's WORKSPACE for the HostActivity: "" (the worker's own)
// unless the VM gave the run's worktree.
func (f *workflowHost) workspace(d confine.Dir) string {
	if d.Workspace == f.dirs.Workspace {
		return ""
	}
	return d.Workspace
}

// RunWorktree implements vm.Host.
func (f *workflowHost) RunWorktree(_ context.Context, _ confine.Dir, runID, base string) (step.RunTree, error) {
	out := f.host(HostInput{Op: hostRunWorktree, RunID: runID, From: base})
	return step.RunTree{Path: out.Path, Base: out.Base, Head: out.Head}, out.err()
}

// UnitWorktree implements vm.Host.
func (f *workflowHost) UnitWorktree(_ context.Context, _ confine.Dir, runWT, runID, step, key, from string, fresh bool) (string, error) {
	out := f.host(HostInput{Op: hostUnitWorktree, RunWT: runWT, RunID: runID, Step: step, Key: key, From: from, Fresh: fresh})
	return out.Path, out.err()
}

// RestoreWorktree implements vm.Host.
func (f *workflowHost) RestoreWorktree(_ context.Context, wt, branch, commit string, exclude []string) error {
	if !f.crashSafeGit() {
		return nil
	}
	return f.host(HostInput{Op: hostRestoreWorktree, WT: wt, Branch: branch, Rev: commit, Exclude: exclude}).err()
}

// crashSafeGitChange names the version marker of the host operations that
// make the git layer crash-safe (restore-worktree, sweep-units): a run
// recorded before them replays without them (its history has no such
// activities), a new one records the marker and runs them.
const crashSafeGitChange = "crash-safe-git"

// crashSafeGit reports whether this run runs the crash-safe git
// operations (workflow.GetVersion: deterministic on replay).
func (f *workflowHost) crashSafeGit() bool {
	return workflow.GetVersion(f.co.cur, crashSafeGitChange, workflow.DefaultVersion, 1) >= 1
}

// SweepUnits implements vm.Host.
func (f *workflowHost) SweepUnits(_ context.Context, _ confine.Dir, runWT, runID string, keep []string) {
	if !f.crashSafeGit() {
		return
	}
	f.host(HostInput{Op: hostSweepUnits, RunWT: runWT, RunID: runID, Keep: keep})
}

// MergeUnit implements vm.Host.
func (f *workflowHost) MergeUnit(_ context.Context, runWT, runID, step, key string) error {
	return f.host(HostInput{Op: hostMergeUnit, RunWT: runWT, RunID: runID, Step: step, Key: key}).err()
}

// RemoveUnit implements vm.Host.
func (f *workflowHost) RemoveUnit(_ context.Context, _ confine.Dir, runWT, runID, step, key string) {
	f.host(HostInput{Op: hostRemoveUnit, RunWT: runWT, RunID: runID, Step: step, Key: key})
}

// Head implements vm.Host.
func (f *workflowHost) Head(_ context.Context, wt string) (string, error) {
	out := f.host(HostInput{Op: hostHead, WT: wt})
	return out.Path, out.err()
}

// CommitStep implements vm.Host.
func (f *workflowHost) CommitStep(_ context.Context, c step.Commit) (string, error) {
	out := f.host(HostInput{Op: hostCommitStep, Commit: &c})
	return out.Path, out.err()
}

// PrepareAgents implements vm.Host.
func (f *workflowHost) PrepareAgents(d confine.Dir, folders []string) error {
	return f.host(HostInput{Op: hostPrepareAgents, Workspace: f.workspace(d), Folders: folders}).err()
}

// ConsumeMessages implements vm.Host.
func (f *workflowHost) ConsumeMessages(d confine.Dir, moves []step.Move) ([]step.Move, error) {
	out := f.host(HostInput{Op: hostConsumeMessages, Workspace: f.workspace(d), Moves: moves})
	return out.Moves, out.err()
}

// errNoRunRoot answers the effects on the run's own files: a run on
// Temporal has no RUN_ROOT (its state is the workflow's), so the VM never
// asks for them (captures stay in the state, no change plan or conflict
// notice is read); if it did, the workflow would fail rather than touch a
// file.
var errNoRunRoot = errors.New("a run on Temporal has no RUN_ROOT")

// Notices implements vm.Host: none.
func (f *workflowHost) Notices(string, int) ([]step.Conflict, error) { return nil, errNoRunRoot }

// ChangePlan implements vm.Host.
func (f *workflowHost) ChangePlan(string) ([]string, error) { return nil, errNoRunRoot }

// WriteFile implements vm.Host.
func (f *workflowHost) WriteFile(string, []byte) error { return errNoRunRoot }

// ReadFile implements vm.Host.
func (f *workflowHost) ReadFile(string) ([]byte, error) { return nil, errNoRunRoot }

// Remove implements vm.Host.
func (f *workflowHost) Remove(string) error { return errNoRunRoot }
