package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"smith/source"
	"smith/vm"
	"smith/vm/store"
	"smith/workers"
	"smith/workers/step"
)

func (e *env) cmdClean(args []string) int {
	var c flagVals
	fs := e.cleanFlags(&c)
	if st, done := e.parse(fs, args, 1); done {
		return st
	}
	proj, st, ok := e.branchProject("clean", c.base, fs.Arg(0))
	if !ok {
		return st
	}
	// A run a smithvm drives works in that worktree: not even --force
	// pulls it away from under its steps.
	if pid, driven, err := proj.store.Driver(fs.Arg(0)); err == nil && driven {
		by := "another smithvm process"
		if pid > 0 {
			by = fmt.Sprintf("smithvm process %d", pid)
		}
		e.fail(source.ERunLocked, "run '%s' is being driven by %s: stop it first (smithvm stop %s), then clean", fs.Arg(0), by, fs.Arg(0))
		return source.ERunLocked.ExitStatus()
	}
	if err := workers.RemoveWorktree(proj.dirs, fs.Arg(0), e.ownFolders(proj, fs.Arg(0)), !c.keepBranch, c.force, e.lookup); err != nil {
		return e.branchFail("clean", err)
	}
	if c.force && !c.keepBranch {
		// The branches of parallel threads a conflicting join kept.
		workers.RemoveUnits(proj.dirs, fs.Arg(0), e.lookup)
	}
	fmt.Fprintf(e.stderr, "INFO: Removed the worktree of run %s.\n", fs.Arg(0))
	return 0
}

// ownFolders are the folders of run id's worktree that hold Smith's own
// files (the agents' inboxes and processed messages, artifacts/), from
// the run's program recompiled from its workflow_path; artifacts/ alone
// when that fails (a warning says so when the workflow file is gone).
func (e *env) ownFolders(proj *project, id string) []string {
	if st, err := proj.store.ReadState(id); err == nil {
		if msg := workflowGone(st, "clean counts only "+step.ArtifactsDir+"/ as Smith's own folder of the worktree, so new files in the agents' inboxes count as uncommitted changes"); msg != "" {
			fmt.Fprintf(e.stderr, "WARNING: %s\n", msg)
			return []string{step.ArtifactsDir}
		}
		if p := loadProgram(e, st); p != nil {
			return vm.OwnFolders(p)
		}
	}
	return []string{step.ArtifactsDir}
}

func (e *env) cmdDiff(args []string) int {
	var c flagVals
	fs := e.diffFlags(&c)
	if st, done := e.parse(fs, args, 1); done {
		return st
	}
	proj, st, ok := e.branchProject("diff", c.base, fs.Arg(0))
	if !ok {
		return st
	}
	rs, _ := proj.store.ReadState(fs.Arg(0)) // for its secrets (nil: the presets' alone)
	out, err := workers.Diff(context.Background(), proj.dirs, fs.Arg(0), c.stat, e.runMasker(rs), e.lookup)
	if err != nil {
		return e.branchFail("diff", err)
	}
	fmt.Fprint(e.stdout, out)
	return 0
}

func (e *env) cmdMerge(args []string) int {
	var c flagVals
	fs := e.mergeFlags(&c)
	if st, done := e.parse(fs, args, 1); done {
		return st
	}
	proj, st, ok := e.branchProject("merge", c.base, fs.Arg(0))
	if !ok {
		return st
	}
	if !c.force {
		if err := runDone(proj, fs.Arg(0)); err != nil {
			return e.branchFail("merge", err)
		}
	}
	if _, err := workers.Merge(context.Background(), proj.dirs, fs.Arg(0), e.lookup); err != nil {
		return e.branchFail("merge", err)
	}
	fmt.Fprintf(e.stderr, "INFO: Merged %s into the checked-out branch of %s.\n", step.WorktreeBranch(fs.Arg(0)), proj.dirs.Workspace)
	return 0
}

// runDone refuses (E_RUN_NOT_DONE) to merge a run that is not completed
// (CONTRACT 12.4: merging waits for the person): halted for approval,
// failed, interrupted or running. A run with no readable state is left to
// Merge, which says what is missing.
func runDone(proj *project, id string) error {
	st, err := proj.store.ReadState(id)
	if err != nil || st.Status == vm.StatusCompleted {
		return nil
	}
	what := "resume it (smithvm resume " + id + ") and merge when it completes"
	switch st.Status {
	case vm.StatusHalted:
		what = "it waits for a person: resume it (smithvm resume " + id + ", with --signal to approve) and merge when it completes"
	case vm.StatusRunning:
		what = "wait until it completes"
		if _, driven, err := proj.store.Driver(id); err == nil && !driven {
			what = "it was cut off (no smithvm drives it): resume it (smithvm resume " + id + ") and merge when it completes"
		}
	}
	return &step.BranchError{Code: source.ERunNotDone,
		Msg: fmt.Sprintf("run '%s' is %s, not completed: %s, or pass --force to merge its branch as it is", id, st.Status, what)}
}

// branchProject is the project of run id for diff, merge and clean
// (command cmd), found as resume and status find it (locateBase); false
// with the exit status when there is none or id is not a run id.
func (e *env) branchProject(cmd, base, id string) (*project, int, bool) {
	base, st, ok := e.locateBase(base, id)
	if !ok {
		return nil, st, false
	}
	// diff, merge and clean run git on the user's repository: not one
	// that is too old to read Smith's overrides (merge would run its
	// hooks).
	if err := workers.CheckGit(context.Background(), e.lookup); err != nil {
		return nil, e.failErr(err, source.EGitVersion, ""), false
	}
	proj, err := e.runProject(base, id)
	if err != nil {
		e.failErr(err, source.EUsage, "")
		return nil, source.ExitConfig, false
	}
	if _, err := proj.store.ReadState(id); source.CodeOf(err, "") == source.EUsage {
		return nil, e.refuse("%v", err), false
	}
	return proj, 0, true
}

// runProject is project for a command on run id: the WORKSPACE is the one
// the run recorded (--workspace), when it recorded one.
func (e *env) runProject(base, id string) (*project, error) {
	proj, err := e.project(base)
	if err != nil || !store.ValidRunID(id) {
		return proj, err
	}
	var st struct {
		Workspace string `json:"workspace"`
	}
	if b, rerr := os.ReadFile(filepath.Join(proj.base, ".orchestrator", "runs", id, "state.json")); rerr == nil &&
		json.Unmarshal(b, &st) == nil && st.Workspace != "" {
		if err := setWorkspace(&proj.dirs, st.Workspace); err != nil {
			return nil, fmt.Errorf("run %s: %w", id, err)
		}
	}
	return proj, nil
}

// branchFail prints a diff, merge or clean failure with its code and
// returns its exit status.
func (e *env) branchFail(cmd string, err error) int {
	var be *step.BranchError
	if errors.As(err, &be) {
		fmt.Fprintf(e.stderr, "smithvm %s: %v\n", cmd, be)
		return be.Code.ExitStatus()
	}
	return e.fail(source.EExec, "%v", err)
}
