// Package builtin implements the internal workers of lang.InternalWorkers
// (Workers), and the change plans and conflict notices of
// Internal:UpdateChangePlan. It must never import workers or the VM (what it
// needs from the Registry comes in Env), start a process but through
// proc.Run, take a path from a user or a model without confine, or write
// Smith's own files but through confine.WriteFileAtomic.
package builtin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"

	"smith/lang"
	"smith/source"
	"smith/workers/confine"
	"smith/workers/step"
	"smith/workers/steprun"
)

// The internal workers (CONTRACT.md section 8, seed 001). Each reads the
// request's payload, config and worktree path and returns a Result whose
// Segments are the NEW segments to append to the payload, in order. A
// segment's ID is "<run id>/<step>/<n>", n being its 1-based index in the
// payload once appended (len(req.Payload) + its position); its Timestamp is
// left empty for the VM, which owns the clock, to fill.
//
// The worktree path is req.WorktreePath, or WORKSPACE when that is empty; it
// must lie inside BASE (it is WORKSPACE or BASE/.orchestrator/worktrees/<run>).

const (
	// workspacePerm is the mode of a WORKSPACE created for a worker.
	workspacePerm = 0o755
)

// A Func runs one Internal:* worker with what it takes from the
// Registry (e).
type Func func(ctx context.Context, e Env, req *step.Request) step.Result

// An Env is what an internal worker takes from the Registry: the
// environment every step runs in, and Changed, the files a run has
// changed (its branch's diff against its start, CONTRACT 12.4), which the
// change plan reports; nil Changed means none are known.
type Env struct {
	steprun.Env
	Changed func(ctx context.Context, d confine.Dir, runID string) []string
}

// internalImpls implements each internal worker of lang.InternalWorkers
// (TestInternalNames fails for a name of either table missing in the other).
var internalImpls = map[string]Func{
	lang.InternalTestRunner:          runTestRunner,
	lang.InternalRunLinter:           runLinter,
	lang.InternalRunBuilder:          runBuilder,
	lang.InternalFileSystemWriter:    runFileSystemWriter,
	lang.InternalDocumentationWriter: runDocumentationWriter,
	lang.InternalPreambleValidator:   runPreambleValidator,
	lang.InternalUpdateChangePlan:    runUpdateChangePlan,
}

// Workers returns a new table of the internal workers, by name as written
// ("Internal:TestRunner").
func Workers() map[string]Func { return maps.Clone(internalImpls) }

// A segmentList collects the new segments of one internal worker call.
type segmentList struct {
	req  *step.Request
	segs []step.Segment
}

// add appends a segment of type typ.
func (l *segmentList) add(typ, content string) {
	n := len(l.req.Payload) + len(l.segs) + 1
	l.segs = append(l.segs, step.Segment{
		ID:      fmt.Sprintf("%s/%s/%d", l.req.RunID, l.req.Step, n),
		Type:    typ,
		Content: content,
	})
}

// result returns a Result with signal, the exit code and the segments.
func (l *segmentList) result(signal string, exit int, err error) step.Result {
	return step.Result{Signal: signal, ExitCode: exit, Segments: l.segs, Err: err}
}

// worktreePath returns the absolute worktree path of req, checked to lie
// inside the project (BASE, or a WORKSPACE outside it). WORKSPACE is created
// when it is the worktree.
func worktreePath(req *step.Request) (string, error) {
	wt := req.WorktreePath
	if wt == "" {
		wt = req.Dirs.Workspace
		if wt == "" {
			return "", &source.Error{Code: source.EInternal, Msg: fmt.Sprintf("internal error: step '%s' has no workspace", req.Step)}
		}
		if err := os.MkdirAll(wt, workspacePerm); err != nil {
			return "", &source.Error{Code: source.EExec, Msg: fmt.Sprintf("create workspace: %v", err)}
		}
	}
	// The worktree stands in for WORKSPACE: paths are confined to it. It
	// must itself lie in the project (BASE, or a WORKSPACE outside BASE).
	if !filepath.IsAbs(wt) || !req.Dirs.Contains(wt) {
		return "", source.Wrap(source.EExec, "worktree_path", &confine.Error{Path: wt, Reason: "resolves outside the project"})
	}
	req.Dirs.Workspace = filepath.Clean(wt)
	abs, err := req.Dirs.ResolveIn(filepath.Clean(wt), ".")
	if err != nil {
		return "", source.Wrap(source.EExec, "worktree_path", err) // E_PATH_ESCAPE stays
	}
	return abs, nil
}

// fail adds a segment of type segType holding err's message and returns a
// result with signal and err as the Result's error, so that the console and
// status say what failed (a *source.Error keeps its code; any other error
// is the VM's E_STEP_FAILED).
func (l *segmentList) fail(signal, segType string, err error) step.Result {
	l.add(segType, err.Error())
	var se *source.Error
	if errors.As(err, &se) {
		return l.result(signal, step.ExitNotRun, se)
	}
	return l.result(signal, step.ExitNotRun, err)
}
