package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"smith/workers"
	"time"

	"go.temporal.io/sdk/workflow"

	"smith/source"
	"smith/vm"
	"smith/workers/confine"
	"smith/workers/provider"
	"smith/workers/step"
)

// FilesInput is one read of the project's files by the VM (vm.Files).
type FilesInput struct {
	Op  string // exists, read
	Dir string `json:",omitempty"` // read: the directory, relative to BASE ('/')
	Rel string
	// Files is the run's snapshot, restored before the read (snapshot.go).
	Files string `json:",omitempty"`
	RunID string `json:",omitempty"`
}

// FilesOutput is its answer, the error as data.
type FilesOutput struct {
	Exists  bool   `json:",omitempty"`
	Content string `json:",omitempty"`
	wireErr
}

// A wireErr is an activity's error as data (the files and host
// activities answer errors, they do not fail): its code when it has one,
// its text, and what the VM tells apart.
type wireErr struct {
	ErrCode  string `json:",omitempty"`
	ErrMsg   string `json:",omitempty"`
	NotExist bool   `json:",omitempty"` // wraps fs.ErrNotExist (a missing ARTIFACT file)
	Branch   bool   `json:",omitempty"` // a step.BranchError (a merge conflict names its files)
}

// wireErrOf is err as data (nil: none).
func wireErrOf(err error) wireErr {
	if err == nil {
		return wireErr{}
	}
	var be *step.BranchError
	if errors.As(err, &be) {
		return wireErr{ErrCode: string(be.Code), ErrMsg: be.Msg, Branch: true}
	}
	w := wireErr{ErrMsg: err.Error(), NotExist: errors.Is(err, fs.ErrNotExist)}
	var c source.Coded
	if errors.As(err, &c) {
		w.ErrCode = string(c.ErrCode())
	}
	return w
}

// err is the error again on the workflow's side: coded as it was, or
// uncoded, so the VM gives it the code it gives this error locally.
func (w wireErr) err() error {
	switch {
	case w.NotExist:
		return fmt.Errorf("%s: %w", w.ErrMsg, fs.ErrNotExist)
	case w.Branch:
		return &step.BranchError{Code: source.Code(w.ErrCode), Msg: w.ErrMsg}
	case w.ErrCode != "":
		return &StepError{Code: source.Code(w.ErrCode), Msg: w.ErrMsg}
	case w.ErrMsg != "":
		return errors.New(w.ErrMsg)
	}
	return nil
}

// activityErr is the error of an activity that failed as one (its worker
// lost, its time out): E_EXEC.
func activityErr(name string, err error) wireErr {
	return wireErr{ErrCode: string(source.EExec), ErrMsg: name + " activity: " + err.Error()}
}

// Files answers a read in the worker's BASE, confined there (workers.Local).
func (a *Activities) Files(ctx context.Context, in FilesInput) (FilesOutput, error) {
	dirs, err := confine.New(a.Base)
	if err != nil {
		return FilesOutput{}, err
	}
	if a.Blobs != nil && in.Files != "" {
		if err := a.runFiles().restore(a.Blobs, dirs.Workspace, in.RunID, in.Files); err != nil {
			return FilesOutput{}, fmt.Errorf("the run's files: %w", err)
		}
	}
	var l workers.Local
	var out FilesOutput
	switch in.Op {
	case "exists":
		out.Exists, err = l.FileExists(dirs, in.Rel)
	case "read":
		out.Content, err = l.ReadArtifact(dirs, filepath.Join(dirs.Base, filepath.FromSlash(in.Dir)), in.Rel)
	default:
		return out, fmt.Errorf("files: unknown op %q", in.Op)
	}
	out.wireErr = wireErrOf(err)
	return out, nil
}

// workflowHost is the vm.Host of workflow code: every effect on the
// project's files and git is an activity (the FilesActivity for reads,
// the HostActivity of host.go for the rest) sent to the run's queue, so
// the workflow touches no file and replays the answers; the clock is
// workflow time.
type workflowHost struct {
	co *coroutine
	// dirs is this worker's project layout: the VM's paths are in it.
	dirs confine.Dir
	// queue is the task queue of the host that holds the run's worktree
	// ("": the run's own task queue, any worker).
	queue string
	runID string
	local bool // local activities when the queue is the run's (local.go)
}

var _ vm.Host = (*workflowHost)(nil)

// PresetVars implements vm.Host: a constant table, the same in a replay.
func (h *workflowHost) PresetVars() step.PresetVars { return provider.AllVars() }

// Now implements vm.Host: workflow time, which a replay reads back.
func (f *workflowHost) Now() time.Time { return workflow.Now(f.co.cur) }

// execute runs activity name on the run's queue (f.queue) and waits for
// its result in out.
func (f *workflowHost) execute(name string, ao workflow.ActivityOptions, in, out any) error {
	ao.TaskQueue = f.queue
	var err error
	f.co.block(func(ctx workflow.Context) {
		if f.local && f.queue == "" {
			if f.co.hist != nil {
				f.co.hist.local++
			}
			err = workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, localOptions(ao)), name, in).Get(ctx, out)
			return
		}
		f.co.beforeWait()
		err = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, ao), name, in).Get(ctx, out)
	})
	return err
}

func (f *workflowHost) call(in FilesInput) FilesOutput {
	var out FilesOutput
	// The read sees the files after the run's (or thread's) last step.
	if c := chainOf(f.co.cur); c != nil && c.ref != "" {
		in.Files, in.RunID = c.ref, f.runID
	}
	if err := f.execute(FilesActivity, workflow.ActivityOptions{StartToCloseTimeout: time.Minute}, in, &out); err != nil {
		return FilesOutput{wireErr: activityErr("files", err)}
	}
	return out
}

// FileExists implements vm.Host.
func (f *workflowHost) FileExists(_ confine.Dir, rel string) (bool, error) {
	out := f.call(FilesInput{Op: "exists", Rel: rel})
	return out.Exists, out.err()
}

// ReadArtifact implements vm.Host.
func (f *workflowHost) ReadArtifact(_ confine.Dir, dir, rel string) (string, error) {
	d, err := filepath.Rel(f.dirs.Base, dir)
	if err != nil {
		return "", &StepError{Code: source.EExec, Msg: fmt.Sprintf("ARTIFACT:%s: %v", rel, err)}
	}
	out := f.call(FilesInput{Op: "read", Dir: filepath.ToSlash(d), Rel: rel})
	return out.Content, out.err()
}
