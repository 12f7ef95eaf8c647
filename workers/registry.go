package workers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"smith/lang"
	"smith/source"
	"smith/workers/proc"
	"smith/workers/provider"
	"smith/workers/step"
)

// A Registry executes requests: processes, providers (the presets, a
// workflow's own providers and the built-in mock) and internal workers. The
// zero value works: an empty parent environment, the real clock, no
// record/replay and no internal workers. cmd/smithvm builds one with
// NewRegistry and hands it to the VM; a Registry holds no state between calls
// except through files under a run's RUN_ROOT, so one value may serve
// several runs.
type Registry struct {
	Env    func(string) (string, bool)                      // the parent environment (os.LookupEnv); nil = empty
	Now    func() time.Time                                 // nil = time.Now
	Sleep  func(ctx context.Context, d time.Duration) error // backoff and poll waits; nil = a timer honouring ctx
	Record string                                           // --record DIR ("" = off)
	Replay string                                           // --replay DIR ("" = off)
	// Internal maps a worker name as written ("Internal:TestRunner") to its
	// implementation. NewRegistry fills it; a name that is absent fails the
	// request with E_EXEC.
	Internal map[string]InternalFunc
}

// An InternalFunc runs one Internal:* worker. It receives the Registry so it
// can run processes the way command steps do.
type InternalFunc func(ctx context.Context, r *Registry, req *step.Request) step.Result

// NewRegistry returns a Registry that reads the parent environment through env
// and knows every internal worker implemented so far.
func NewRegistry(env func(string) (string, bool)) *Registry {
	return &Registry{Env: env, Internal: internalWorkers()}
}

// internalWorkers returns the table of internal workers (internal.go).
func internalWorkers() map[string]InternalFunc {
	table := map[string]InternalFunc{}
	for _, name := range lang.InternalNames() {
		if fn, ok := Internal(name); ok {
			table[name] = fn
		}
	}
	return table
}

var _ step.Runner = (*Registry)(nil)

// Run executes req and reports what happened. It never panics on bad input
// and never returns a Go error: every failure is a Result with Signal
// SIGNAL:FAILURE or SIGNAL:TIMEOUT and, where the user should see why, a coded
// Err.
func (r *Registry) Run(ctx context.Context, req *step.Request) step.Result {
	start := r.now()
	var res step.Result
	switch req.Kind {
	case step.KindCommand:
		res = r.runCommand(ctx, req)
	case step.KindProvider:
		res = r.runProvider(ctx, req)
	case step.KindInternal:
		res = r.runInternal(ctx, req)
	case step.KindSend:
		res = r.runSend(req)
	default:
		res = step.Failed(step.ExitNotRun, source.Errorf(source.EInternal, "internal error: step '%s' has unknown kind %d", req.Step, req.Kind))
	}
	res.Duration = r.now().Sub(start)
	if res.Attempts == 0 {
		res.Attempts = 1
	}
	if wf := req.WaitFor; wf != nil && wf.Processed != "" && res.Err == nil && res.ExitCode == 0 {
		res.Consumed = consumed(req, req.WaitMatched)
	}
	return res
}

// runInternal runs an Internal:* worker from the table.
func (r *Registry) runInternal(ctx context.Context, req *step.Request) step.Result {
	fn, ok := r.Internal[req.Worker]
	if !ok || fn == nil {
		return step.Failed(step.ExitNotRun, source.Errorf(source.EExec, "internal worker '%s' is not available yet", req.Worker))
	}
	return fn(ctx, r, req)
}

// now reads the injected clock.
func (r *Registry) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// sleep waits d or until ctx is done.
func (r *Registry) sleep(ctx context.Context, d time.Duration) error {
	if r.Sleep != nil {
		return r.Sleep(ctx, d)
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

// A paths holds a request's confined paths, all absolute.
type paths struct {
	input     string // "" = none
	prompt    string // "" = none
	output    string // "" = none
	spill     string // RUN_ROOT/logs/<Step>-stdout.log ("" without RUN_ROOT)
	stderrLog string // RUN_ROOT/logs/<Step>-stderr.log ("" without RUN_ROOT)
	tmpDir    string // RUN_ROOT/tmp (os.TempDir() without RUN_ROOT)
}

// prepare creates WORKSPACE and confines every path of req. A violation is
// E_PATH_ESCAPE; nothing is created for the step's files before every path has
// passed.
func prepare(req *step.Request) (paths, *source.Error) {
	var p paths
	if req.Step == "" || req.Step == "." || req.Step == ".." || strings.ContainsAny(req.Step, `/\`) {
		return p, source.Errorf(source.EPathEscape, "step name '%s' cannot name a directory", req.Step)
	}
	if req.Dirs.Workspace == "" {
		return p, source.Errorf(source.EInternal, "internal error: step '%s' has no workspace", req.Step)
	}
	var err error
	if req.InputFile != "" {
		if p.input, err = req.Dirs.Resolve(req.InputFile); err != nil {
			return p, escapeErr("input_file", err)
		}
	}
	if req.PromptFile != "" {
		if p.prompt, err = req.Dirs.Resolve(req.PromptFile); err != nil {
			return p, escapeErr("prompt_file", err)
		}
	}
	if req.OutputFile != "" {
		if filepath.Clean(req.OutputFile) == "." || strings.HasSuffix(req.OutputFile, "/") {
			return p, source.Errorf(source.EPathEscape, "output_file: path '%s' names no file", req.OutputFile)
		}
		dir := filepath.Join(req.Dirs.Workspace, "artifacts", req.Step)
		if p.output, err = req.Dirs.ResolveIn(dir, req.OutputFile); err != nil {
			return p, escapeErr("output_file", err)
		}
	}
	if err := os.MkdirAll(req.Dirs.Workspace, 0o755); err != nil {
		return p, source.Errorf(source.EExec, "create workspace: %v", err)
	}
	p.tmpDir = os.TempDir()
	if req.RunRoot != "" {
		logs := filepath.Join(req.RunRoot, "logs")
		if err := os.MkdirAll(logs, 0o755); err != nil {
			return p, source.Errorf(source.EExec, "create log directory: %v", err)
		}
		p.spill = filepath.Join(logs, req.Step+"-stdout.log")
		p.stderrLog = filepath.Join(logs, req.Step+"-stderr.log")
		p.tmpDir = filepath.Join(req.RunRoot, "tmp")
	}
	return p, nil
}

// isEscape reports whether err is a path violation.
func isEscape(err error) bool { return source.CodeOf(err, "") == source.EPathEscape }

// escapeErr is "key: err" with err's code: E_PATH_ESCAPE for a confinement
// error, E_EXEC for others (an unreadable directory).
func escapeErr(key string, err error) *source.Error {
	return source.Wrap(source.EExec, key, err)
}

// timeoutOf returns the step's timeout with its default.
func timeoutOf(req *step.Request) time.Duration {
	if req.Timeout <= 0 {
		return lang.DefaultTimeout
	}
	return req.Timeout
}

// retryable reports whether a try that ended with exit may be tried again.
func retryable(exit int) bool { return exit == provider.ExitRetryable || exit == proc.ExitTimeout }

// signalFor maps an exit code to its signal.
func signalFor(exit int) string {
	switch exit {
	case 0:
		return lang.SigSuccess
	case proc.ExitTimeout:
		return lang.SigTimeout
	}
	return lang.SigFailure
}

// retry runs try up to req.Attempts times (at least once). Only exit codes 1
// and 124 are tried again; before each new try it calls req.OnRetry and waits
// req.Backoff (0 = no wait; the VM applies the 2 s default). first is the
// number of tries made before (provider fallbacks continue the count), and
// the result's Attempts is the total. noWait skips the backoff (replay).
func (r *Registry) retry(ctx context.Context, req *step.Request, first int, noWait bool, try func(n int) step.Result) step.Result {
	attempts := max(req.Attempts, 1)
	for n := 1; ; n++ {
		if req.AttemptID != nil {
			req.AttemptID(first + n)
		}
		req.Attempt = first + n
		res := try(first + n)
		res.Attempts = first + n
		if n >= attempts || !retryable(res.ExitCode) || ctx.Err() != nil {
			return res
		}
		if req.OnRetry != nil {
			req.OnRetry(first+n, res.ExitCode, req.Backoff)
		}
		if noWait {
			continue
		}
		if err := r.sleep(ctx, req.Backoff); err != nil {
			return res
		}
	}
}

// stderrHeader is the line that opens each try's part of
// logs/<Step>-stderr.log, which keeps every attempt and iteration of a step
// (CONTRACT 12.5): "--- attempt N ---" or "--- attempt N, iteration I ---".
func stderrHeader(req *step.Request) string {
	h := fmt.Sprintf("--- attempt %d", max(req.Attempt, 1))
	if req.Iteration != "" {
		h += ", iteration " + req.Iteration
	}
	return h + " ---\n"
}

// displayPath returns abs relative to WORKSPACE with forward slashes, for
// messages and prompts.
func displayPath(req *step.Request, abs string) string {
	rel, err := filepath.Rel(req.Dirs.Workspace, abs)
	if err != nil {
		return filepath.ToSlash(abs)
	}
	return filepath.ToSlash(rel)
}
