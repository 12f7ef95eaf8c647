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
)

// FilesInput is one read of the project's files by the VM (vm.Files).
type FilesInput struct {
	Op  string // exists, read
	Dir string `json:",omitempty"` // read: the directory, relative to BASE ('/')
	Rel string
}

// FilesOutput is its answer, the error as data.
type FilesOutput struct {
	Exists   bool   `json:",omitempty"`
	Content  string `json:",omitempty"`
	NotExist bool   `json:",omitempty"`
	ErrCode  string `json:",omitempty"`
	ErrMsg   string `json:",omitempty"`
}

// Files answers a read in the worker's BASE, confined there (workers.Local).
func (a *Activities) Files(ctx context.Context, in FilesInput) (FilesOutput, error) {
	dirs, err := confine.New(a.Base)
	if err != nil {
		return FilesOutput{}, err
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
	if err != nil {
		out.ErrMsg, out.NotExist = err.Error(), errors.Is(err, fs.ErrNotExist)
		var c source.Coded
		if errors.As(err, &c) {
			out.ErrCode = string(c.ErrCode())
		}
	}
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
}

var _ vm.Host = (*workflowHost)(nil)

// Now implements vm.Host: workflow time, which a replay reads back.
func (f *workflowHost) Now() time.Time { return workflow.Now(f.co.cur) }

func (f *workflowHost) call(in FilesInput) FilesOutput {
	var out FilesOutput
	var err error
	f.co.block(func(ctx workflow.Context) {
		ao := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{TaskQueue: f.queue, StartToCloseTimeout: time.Minute})
		err = workflow.ExecuteActivity(ao, FilesActivity, in).Get(ctx, &out)
	})
	if err != nil {
		return FilesOutput{ErrCode: string(source.EExec), ErrMsg: "files activity: " + err.Error()}
	}
	return out
}

func (o FilesOutput) err() error {
	switch {
	case o.NotExist:
		return fmt.Errorf("%s: %w", o.ErrMsg, fs.ErrNotExist)
	case o.ErrMsg != "":
		return &StepError{Code: source.Code(o.ErrCode), Msg: o.ErrMsg}
	}
	return nil
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
