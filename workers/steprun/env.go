// Package steprun holds what running any step shares: Env (the parent
// environment, the clock, the waits), Prepare (the step's confined paths),
// wait_for and depends_on, Env.Retry, Spec (the one process spec of a step),
// the command step (Env.Command), the output capture and the kept replies.
// It must never run a provider or an internal worker, take a path from a
// user or a model without confine, or start a process but through proc.Run.
package steprun

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"smith/lang"
	"smith/source"
	"smith/workers/proc"
	"smith/workers/provider"
	"smith/workers/step"
)

// An Env is what running a step takes from its surroundings: the parent
// environment, the clock and the waits. The zero value works: an empty
// parent environment, the real clock and timers honouring ctx.
type Env struct {
	Lookup func(string) (string, bool)                      // the parent environment (os.LookupEnv); nil = empty
	Clock  func() time.Time                                 // nil = time.Now
	Wait   func(ctx context.Context, d time.Duration) error // backoff and poll waits; nil = a timer honouring ctx
}

// Now reads the injected clock.
func (e Env) Now() time.Time {
	if e.Clock != nil {
		return e.Clock()
	}
	return time.Now()
}

// sleep waits d or until ctx is done.
func (e Env) sleep(ctx context.Context, d time.Duration) error {
	if e.Wait != nil {
		return e.Wait(ctx, d)
	}
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A Paths holds a request's confined paths, all absolute.
type Paths struct {
	Input     string // "" = none
	Prompt    string // "" = none
	Output    string // "" = none
	Spill     string // RUN_ROOT/logs/<Step>-stdout.log, <Step>.<Iteration>-stdout.log in a loop or branch ("" without RUN_ROOT)
	StderrLog string // RUN_ROOT/logs/<Step>-stderr.log ("" without RUN_ROOT)
	// StderrPart is, in a thread of a parallel step, where a try writes its
	// stderr (RUN_ROOT/logs/<Step>.<Thread>-stderr.part); FlushStderr then
	// appends it whole to StderrLog, so that threads running the step at
	// once never mix their lines under one another's header. "" otherwise.
	StderrPart string
	TmpDir     string // RUN_ROOT/tmp (os.TempDir() without RUN_ROOT)
}

// Prepare creates WORKSPACE and confines every path of req. A violation is
// E_PATH_ESCAPE; nothing is created for the step's files before every path has
// passed.
func Prepare(req *step.Request) (Paths, *source.Error) {
	var p Paths
	if req.Step == "" || req.Step == "." || req.Step == ".." || strings.ContainsAny(req.Step, `/\`) {
		return p, source.Errorf(source.EPathEscape, "step name '%s' cannot name a directory", req.Step)
	}
	if req.Dirs.Workspace == "" {
		return p, source.Errorf(source.EInternal, "internal error: step '%s' has no workspace", req.Step)
	}
	var err error
	if req.InputFile != "" {
		if p.Input, err = req.Dirs.Resolve(req.InputFile); err != nil {
			return p, source.Wrap(source.EExec, "input_file", err)
		}
	}
	if req.PromptFile != "" {
		if p.Prompt, err = req.Dirs.Resolve(req.PromptFile); err != nil {
			return p, source.Wrap(source.EExec, "prompt_file", err)
		}
	}
	if req.OutputFile != "" {
		if filepath.Clean(req.OutputFile) == "." || strings.HasSuffix(req.OutputFile, "/") {
			return p, source.Errorf(source.EPathEscape, "output_file: path '%s' names no file", req.OutputFile)
		}
		dir := filepath.Join(req.Dirs.Workspace, "artifacts", req.Step)
		if p.Output, err = req.Dirs.ResolveIn(dir, req.OutputFile); err != nil {
			return p, source.Wrap(source.EExec, "output_file", err)
		}
	}
	if err := os.MkdirAll(req.Dirs.Workspace, 0o755); err != nil {
		return p, source.Errorf(source.EExec, "create workspace: %v", err)
	}
	p.TmpDir = os.TempDir()
	if req.RunRoot != "" {
		logs := filepath.Join(req.RunRoot, "logs")
		if err := os.MkdirAll(logs, 0o755); err != nil {
			return p, source.Errorf(source.EExec, "create log directory: %v", err)
		}
		// An iteration's spill is its own (a step name has no '.'), so
		// that a later iteration does not write over it.
		spill := req.Step
		if req.Iteration != "" {
			spill += "." + req.Iteration
		}
		p.Spill = filepath.Join(logs, spill+"-stdout.log")
		p.StderrLog = filepath.Join(logs, req.Step+"-stderr.log")
		if req.Thread != "" {
			p.StderrPart = filepath.Join(logs, req.Step+"."+req.Thread+"-stderr.part")
		}
		p.TmpDir = filepath.Join(req.RunRoot, "tmp")
	}
	return p, nil
}

// IsEscape reports whether err is a path violation.
func IsEscape(err error) bool { return source.CodeOf(err, "") == source.EPathEscape }

// TimeoutOf returns the step's timeout with its default.
func TimeoutOf(req *step.Request) time.Duration {
	if req.Timeout <= 0 {
		return lang.DefaultTimeout
	}
	return req.Timeout
}

// Retryable reports whether a try that ended with exit may be tried again.
func Retryable(exit int) bool { return exit == provider.ExitRetryable || exit == proc.ExitTimeout }

// SignalFor maps an exit code to its signal.
func SignalFor(exit int) string {
	switch exit {
	case 0:
		return lang.SigSuccess
	case proc.ExitTimeout:
		return lang.SigTimeout
	}
	return lang.SigFailure
}

// Retry runs try up to req.Attempts times (at least once). Only exit codes 1
// and 124 are tried again; before each new try it calls req.OnRetry and waits
// req.Backoff (0 = no wait; the VM applies the 2 s default). first is the
// number of tries made before (provider fallbacks continue the count), and
// the result's Attempts is the total. noWait skips the backoff (replay).
func (e Env) Retry(ctx context.Context, req *step.Request, first int, noWait bool, try func(n int) step.Result) step.Result {
	attempts := max(req.Attempts, 1)
	for n := 1; ; n++ {
		if req.AttemptID != nil {
			req.AttemptID(first + n)
		}
		req.Attempt = first + n
		res := try(first + n)
		res.Attempts = first + n
		if n >= attempts || !Retryable(res.ExitCode) || ctx.Err() != nil {
			return res
		}
		if req.OnRetry != nil {
			req.OnRetry(first+n, res.ExitCode, req.Backoff)
		}
		if noWait {
			continue
		}
		if err := e.sleep(ctx, req.Backoff); err != nil {
			return res
		}
	}
}

// StderrHeader is the line that opens each try's part of
// logs/<Step>-stderr.log, which keeps every attempt and iteration of a step
// (CONTRACT 12.5): "--- attempt N ---" or "--- attempt N, iteration I ---".
func StderrHeader(req *step.Request) string {
	h := fmt.Sprintf("--- attempt %d", max(req.Attempt, 1))
	if req.Iteration != "" {
		h += ", iteration " + req.Iteration
	}
	return h + " ---\n"
}

// StderrFile is the file a try of the step writes its stderr to: its
// thread's part in a parallel step, else the step's stderr log.
func (p Paths) StderrFile() string {
	if p.StderrPart != "" {
		return p.StderrPart
	}
	return p.StderrLog
}

// stderrMu serializes the appends of threads' parts to the stderr logs
// (one process drives a run).
var stderrMu sync.Mutex

// FlushStderr appends what a try in a thread of a parallel step wrote to
// its part (header included) to the step's stderr log, whole, and removes
// the part; a part the append could not take is kept. Outside a thread,
// and when the try wrote no stderr, it does nothing. A part a crash left
// is flushed with the try that runs the step again.
func FlushStderr(p Paths) {
	if p.StderrPart == "" || p.StderrLog == "" {
		return
	}
	part, err := os.Open(p.StderrPart)
	if err != nil {
		return
	}
	defer part.Close()
	stderrMu.Lock()
	defer stderrMu.Unlock()
	f, err := os.OpenFile(p.StderrLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600) // as proc creates it
	if err != nil {
		return
	}
	// Copied, not read whole: an agent's stderr may be large.
	_, werr := io.Copy(f, part)
	if cerr := f.Close(); werr == nil && cerr == nil {
		os.Remove(p.StderrPart)
	}
}

// displayPath returns abs relative to WORKSPACE with forward slashes, for
// messages and prompts.
func displayPath(req *step.Request, abs string) string {
	if rel, ok := mailRel(req, abs); ok {
		return rel
	}
	rel, err := filepath.Rel(req.Dirs.Workspace, abs)
	if err != nil {
		return filepath.ToSlash(abs)
	}
	return filepath.ToSlash(rel)
}

// FileErr describes a file that cannot be read.
func FileErr(key, rel string, err error) *source.Error {
	if IsEscape(err) {
		return source.Wrap(source.EExec, key, err)
	}
	return source.Errorf(source.EExec, "%s '%s' cannot be read: %s", key, rel, OSErrText(err))
}
