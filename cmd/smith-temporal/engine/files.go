package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/workflow"

	"smith/manifest/source"
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

// Files answers a read in the worker's BASE, confined there (vm.LocalFiles).
func (a *Activities) Files(ctx context.Context, in FilesInput) (FilesOutput, error) {
	dirs, err := confine.New(a.Base)
	if err != nil {
		return FilesOutput{}, err
	}
	l := vm.LocalFiles{Dirs: dirs}
	var out FilesOutput
	switch in.Op {
	case "exists":
		out.Exists, err = l.Exists(in.Rel)
	case "read":
		out.Content, err = l.Read(filepath.Join(dirs.Base, filepath.FromSlash(in.Dir)), in.Rel)
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

// workflowFiles is vm.Files in workflow code: every read is the
// FilesActivity, so the workflow touches no file and replays the answers.
type workflowFiles struct {
	ctx  workflow.Context
	base string
}

func (f *workflowFiles) call(in FilesInput) FilesOutput {
	ctx := workflow.WithActivityOptions(f.ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	var out FilesOutput
	if err := workflow.ExecuteActivity(ctx, FilesActivity, in).Get(f.ctx, &out); err != nil {
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

// Exists implements vm.Files.
func (f *workflowFiles) Exists(rel string) (bool, error) {
	out := f.call(FilesInput{Op: "exists", Rel: rel})
	return out.Exists, out.err()
}

// Read implements vm.Files.
func (f *workflowFiles) Read(dir, rel string) (string, error) {
	d, err := filepath.Rel(f.base, dir)
	if err != nil {
		return "", &StepError{Code: source.EExec, Msg: fmt.Sprintf("ARTIFACT:%s: %v", rel, err)}
	}
	out := f.call(FilesInput{Op: "read", Dir: filepath.ToSlash(d), Rel: rel})
	return out.Content, out.err()
}
