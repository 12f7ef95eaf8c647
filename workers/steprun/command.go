package steprun

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strings"

	"smith/lang"
	"smith/source"
	"smith/workers/proc"
	"smith/workers/provider"
	"smith/workers/step"
)

// Command runs a command step: confine its paths, wait for wait_for, check
// depends_on, then run Argv with retries.
func (e Env) Command(ctx context.Context, req *step.Request) step.Result {
	p, serr := Prepare(req)
	if serr != nil {
		return step.Failed(step.ExitNotRun, serr)
	}
	if len(req.Argv) == 0 {
		return step.Failed(step.ExitNotRun, source.Errorf(source.EExec, "step '%s' has an empty command", req.Step))
	}
	if _, res, ok := e.Preconditions(ctx, req, p); !ok {
		return res
	}
	var payload []byte
	if req.PayloadStdin {
		var err error
		if payload, err = payloadJSON(req); err != nil {
			return step.Failed(step.ExitNotRun, source.Errorf(source.EExec, "write the payload of step '%s' for its stdin: %v", req.Step, err))
		}
	}
	return e.Retry(ctx, req, 0, false, func(int) step.Result {
		var stdin *os.File
		if payload != nil {
			// A file with no name for each try (TempStdin): a try reads it
			// from its start, and a kill of smithvm leaves nothing of it.
			f, err := TempStdin(p, req.Step+"-payload-*.json", payload)
			if err != nil {
				return step.Failed(step.ExitNotRun, source.Errorf(source.EExec, "write the payload of step '%s' for its stdin: %v", req.Step, err))
			}
			defer f.Close()
			stdin = f
		}
		pr, outErr, err := e.runProcess(ctx, req, p, req.Argv, stdin, p.Output)
		if err != nil {
			return step.Failed(step.ExitNotRun, source.Wrap(source.EExec, fieldOf(err), err))
		}
		return processResult(ctx, req, p, pr, outErr)
	})
}

// payloadJSON is req's payload as a JSON array of segments, masked, for a
// manifest command worker's stdin (CONTRACT 12.5).
func payloadJSON(req *step.Request) ([]byte, error) {
	segs := req.Payload
	if segs == nil {
		segs = []step.Segment{}
	}
	data, err := json.Marshal(segs)
	if err != nil {
		return nil, err
	}
	return req.Mask.Bytes(data), nil
}

// WriteTemp writes data to a new file under RUN_ROOT/tmp named after
// pattern (as os.CreateTemp) and returns its path; the caller removes it.
// Nothing is left behind when it fails.
func WriteTemp(p Paths, pattern string, data []byte) (string, error) {
	if err := os.MkdirAll(p.TmpDir, 0o755); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(p.TmpDir, pattern)
	if err != nil {
		return "", err
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(f.Name())
		return "", werr
	}
	return f.Name(), nil
}

// TempStdin returns an open file holding data, at its start, that has no
// name: created under RUN_ROOT/tmp (0600, as WriteTemp) and unlinked at
// once, before data is written. A child given it as its stdin reads what
// it would read from a named file, and a smithvm killed while the child
// runs leaves nothing of data on disk. The caller closes it.
func TempStdin(p Paths, pattern string, data []byte) (*os.File, error) {
	if err := os.MkdirAll(p.TmpDir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(p.TmpDir, pattern)
	if err != nil {
		return nil, err
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Preconditions checks that input_file exists, then waits for wait_for and
// checks depends_on. It returns the files depends_on matched, or the failure
// and false when the step must not run.
func (e Env) Preconditions(ctx context.Context, req *step.Request, p Paths) ([]string, step.Result, bool) {
	if p.Input != "" {
		if _, err := os.Stat(p.Input); err != nil {
			return nil, step.Failed(step.ExitNotRun, source.Errorf(source.EExec, "input_file '%s' cannot be read: %s", req.InputFile, OSErrText(err))), false
		}
	}
	if res, ok := e.waitFor(ctx, req); !ok {
		return nil, res, false
	}
	files, serr := dependsOn(req)
	if serr != nil {
		return nil, step.Failed(step.ExitNotRun, serr), false
	}
	return files, step.Result{}, true
}

// runProcess runs argv once the way every step runs: cwd WORKSPACE, the
// built environment, stdin from stdinPath (or /dev/null), the step's timeout,
// stdout spill and stderr log under RUN_ROOT/logs. When output is set the
// whole (masked) stdout also goes there; outErr reports a failure to create
// or write it, and err a failure to create it (the process did not run).
func (e Env) runProcess(ctx context.Context, req *step.Request, p Paths, argv []string, payload *os.File, output string) (pr proc.Result, outErr, err error) {
	stdinPath := p.Input
	if payload != nil {
		stdinPath = "" // the payload is stdin, in place of input_file
	}
	spec, closeStdin, err := Spec(req, p, argv, BuildEnv(e.Lookup, req.EnvAllow, req.Secrets, req.Env), stdinPath)
	if err != nil {
		return proc.Result{}, nil, err
	}
	defer closeStdin()
	if payload != nil {
		spec.Stdin = payload
	}
	// Its lines, as they come, for the viewer and smithvm logs.
	live := OpenLive(req, e.Now)
	defer live.Close()
	if live != nil {
		spec.Lines = live.Lines
	}
	var sink *errWriter
	if output != "" {
		f, err := req.Dirs.Create(output)
		if err != nil {
			return proc.Result{}, nil, err
		}
		defer func() {
			if err := f.Close(); err != nil && outErr == nil {
				outErr = err
			}
		}()
		sink = &errWriter{w: f}
		spec.Stdout = sink
	}
	pr = proc.Run(ctx, spec)
	FlushStderr(p)
	if sink != nil {
		outErr = sink.err
	}
	return pr, outErr, nil
}

// Spec is the ProcSpec of one try of a step's process (command, provider
// CLI or an internal worker's tool, which runs in the worktree): cwd WORKSPACE, env, the step's timeout, stdout spill and
// stderr log under RUN_ROOT/logs, its process group recorded under
// RUN_ROOT. When stdinPath is the user's input_file it is opened now,
// through the project, never following a link (a link swapped in after the
// checks is refused: an *inputErr); closeStdin closes it.
func Spec(req *step.Request, p Paths, argv, env []string, stdinPath string) (spec proc.Spec, closeStdin func(), err error) {
	spec = proc.Spec{
		Argv:         argv,
		Dir:          req.Dirs.Workspace,
		Env:          env,
		StdinPath:    stdinPath,
		Timeout:      TimeoutOf(req),
		StdoutSpill:  p.Spill,
		StderrLog:    p.StderrFile(),
		StderrHeader: StderrHeader(req),
		Mask:         req.Mask,
		Live:         req.Live,
		RunRoot:      req.RunRoot,
		// The leader dies with a smithvm killed mid-step (SIGKILL, a
		// crash): nothing of the step runs on unwatched until resume.
		// What the leader started itself lives on in its group until
		// resume kills it (KillLeftovers); docs/reliability.md.
		DieWithParent: true,
	}
	closeStdin = func() {}
	if stdinPath != "" && stdinPath == p.Input {
		f, err := req.Dirs.Open(stdinPath)
		if err != nil {
			return spec, closeStdin, &inputErr{err}
		}
		spec.Stdin, closeStdin = f, func() { f.Close() }
	}
	return spec, closeStdin, nil
}

// processResult turns one finished process into a Result and applies the
// output capture.
func processResult(ctx context.Context, req *step.Request, p Paths, pr proc.Result, outErr error) step.Result {
	res := step.Result{
		ExitCode:    pr.ExitCode,
		Truncated:   pr.StdoutTruncated,
		SpillStdout: pr.StdoutSpill,
		StderrLog:   p.StderrLog,
	}
	if pr.StartErr != nil {
		res.Signal, res.ExitCode, res.Err = lang.SigFailure, step.ExitNotFound, StartErr(req.Argv[0], pr.StartErr)
		if ctx.Err() != nil {
			res.ExitCode, res.Err = step.ExitNotRun, source.Errorf(source.EInterrupted, "step '%s' was interrupted", req.Step)
		}
		return res
	}
	res.Signal = SignalFor(pr.ExitCode)
	switch {
	case pr.TimedOut:
		res.Err = source.Errorf(source.ETimeout, "step '%s' timed out after %s", req.Step, TimeoutOf(req))
	case ctx.Err() != nil:
		res.Signal = lang.SigFailure
		res.Err = source.Errorf(source.EInterrupted, "step '%s' was interrupted", req.Step)
	}
	res.Output = TrimOutput(pr.Stdout)
	res.Stderr = TrimOutput(pr.Stderr)
	// Past the in-memory part, no capture reads the whole stream: lines
	// keep the first 1 MiB's, json reads the spill only up to JSONCap.
	if pr.StdoutTruncated {
		ApplySpilled(req, &res, pr.Stdout, pr.StdoutSpill, pr.StdoutSpill)
	} else {
		ApplyCapture(req, &res, pr.Stdout)
	}
	if outErr != nil && res.Signal == lang.SigSuccess {
		res.Signal, res.Err = lang.SigFailure, source.Errorf(source.EExec, "write output_file '%s': %v", req.OutputFile, outErr)
	}
	if outErr == nil {
		kept, err := KeepOutput(req, p)
		res.OutputFile = kept
		if err != nil && res.Signal == lang.SigSuccess {
			res.Signal, res.Err = lang.SigFailure, source.Errorf(source.EExec, "%v", err)
		}
	}
	return res
}

// StartErr describes a process that could not be started.
func StartErr(name string, err error) *source.Error {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		if strings.ContainsRune(name, '/') {
			return source.Errorf(source.EExec, "command '%s' not found: there is no such file (a command with a '/' is run from that path, relative to the step's working directory, and never looked up on PATH)", name)
		}
		return source.Errorf(source.EExec, "command '%s' not found%s", name, provider.InstallHint(name))
	}
	return source.Errorf(source.EExec, "command '%s' cannot be started: %v", name, err)
}

// OSErrText is the reason of a file system error without the path, which
// the caller names itself.
func OSErrText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// An errWriter passes writes on and remembers the first error, so that a
// failing output_file is told apart from a failing -v stream.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	if err != nil {
		e.err = err
	}
	return n, err
}

// An inputErr is a failure to open the input_file at the moment of use.
type inputErr struct{ err error }

func (e *inputErr) Error() string { return e.err.Error() }
func (e *inputErr) Unwrap() error { return e.err }

// fieldOf names the path field a runProcess error is about.
func fieldOf(err error) string {
	var ie *inputErr
	if errors.As(err, &ie) {
		return "input_file"
	}
	return "output_file"
}
