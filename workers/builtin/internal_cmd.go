package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"smith/lang"
	"smith/source"
	"smith/workers/proc"
	"smith/workers/step"
	"smith/workers/steprun"
	"smith/workers/text"
)

// The process workers: Internal:TestRunner, Internal:RunLinter and
// Internal:RunBuilder run a command of the manifest's config in the worktree
// path, the way command steps run (argv, never a shell; the environment built
// from the parent's inherited variables, env_allow, secrets and env; the
// step's timeout; stdout spill and stderr log under RUN_ROOT/logs). When the
// built environment has no PATH (no parent environment was given), the
// conventional defaultToolPath is used so that the tool can be found.

// defaultToolPath is the PATH of a tool when the environment gives none.
const defaultToolPath = "/usr/local/bin:/usr/bin:/bin"

// maxToolLog bounds the combined stdout+stderr log kept for a result
// segment; a longer log ends with "\n[truncated]".
const maxToolLog = 8 << 20

// Config keys, as errors name them.
const (
	keyTestCommand  = "config." + lang.ConfigTestCommand
	keyLintCommand  = "config." + lang.ConfigLintCommand
	keyBuildCommand = "config." + lang.ConfigBuildCommand
)

// A toolRun is one finished tool process.
type toolRun struct {
	proc proc.Result
	log  string // stdout and stderr as they arrived, masked
}

// runTestRunner is Internal:TestRunner: a TEST_RESULT segment with outcome
// PASS, or FAIL with the exit code and the whole log.
func runTestRunner(ctx context.Context, e Env, req *step.Request) step.Result {
	return runTool(ctx, e, req, keyTestCommand, req.Config.TestCommand, func(l *segmentList, run toolRun, passed bool) {
		if passed {
			l.add(step.SegTestResult, toolJSON(struct {
				Outcome string `json:"outcome"`
			}{"PASS"}))
			return
		}
		l.add(step.SegTestResult, toolJSON(struct {
			Outcome  string `json:"outcome"`
			ExitCode int    `json:"exit_code"`
			Log      string `json:"log"`
		}{"FAIL", run.proc.ExitCode, run.log}))
	})
}

// runLinter is Internal:RunLinter: on failure a LINT_RESULT segment with the
// linter's stdout when it is JSON (compacted), else the whole log.
func runLinter(ctx context.Context, e Env, req *step.Request) step.Result {
	return runTool(ctx, e, req, keyLintCommand, req.Config.LintCommand, func(l *segmentList, run toolRun, passed bool) {
		if passed {
			return
		}
		content := run.log
		var buf bytes.Buffer
		if out := strings.TrimSpace(run.proc.Stdout); len(out) > 0 && !run.proc.StdoutTruncated && json.Compact(&buf, []byte(out)) == nil {
			content = buf.String()
		}
		l.add(step.SegLintResult, content)
	})
}

// runBuilder is Internal:RunBuilder: on failure a BUILD_RESULT segment with
// the whole log.
func runBuilder(ctx context.Context, e Env, req *step.Request) step.Result {
	return runTool(ctx, e, req, keyBuildCommand, req.Config.BuildCommand, func(l *segmentList, run toolRun, passed bool) {
		if !passed {
			l.add(step.SegBuildResult, run.log)
		}
	})
}

// toolJSON prints v as compact JSON without HTML escaping.
func toolJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("internal error: encode segment: %v", err))
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// runTool runs argv (the config value named key) in the worktree and
// returns a Result whose signal follows the exit code (SUCCESS, FAILURE,
// TIMEOUT) with the segments report adds (passed: the signal is SUCCESS),
// or, when nothing could run (no command configured, a bad worktree path, a
// tool that cannot start), a FAILURE with an ERROR segment.
func runTool(ctx context.Context, e Env, req *step.Request, key string, argv []string, report func(l *segmentList, run toolRun, passed bool)) step.Result {
	l := &segmentList{req: req}
	if len(argv) == 0 || argv[0] == "" {
		return l.fail(lang.SigFailure, step.SegError, &source.Error{Code: source.EExec, Msg: fmt.Sprintf("%s is not set: %s needs a command to run", key, req.Worker)})
	}
	p, serr := steprun.Prepare(req)
	if serr != nil {
		return l.fail(lang.SigFailure, step.SegError, serr)
	}
	wt, err := worktreePath(req)
	if err != nil {
		return l.fail(lang.SigFailure, step.SegError, err)
	}
	env := steprun.BuildEnv(e.Lookup, req.EnvAllow, req.Secrets, req.Env)
	if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "PATH=") }) {
		env = append(env, "PATH="+defaultToolPath)
	}
	log := &toolLog{live: req.Live}
	spec, _, _ := steprun.Spec(req, p, argv, env, "") // no stdin: nothing to open, nothing to fail
	spec.Dir, spec.Live = wt, log
	pr := proc.Run(ctx, spec)
	steprun.FlushStderr(p)
	if pr.StartErr != nil {
		se := steprun.StartErr(argv[0], pr.StartErr)
		se.Msg = key + ": " + se.Msg
		res := l.fail(lang.SigFailure, step.SegError, se)
		res.ExitCode = step.ExitNotFound
		res.StderrLog = p.StderrLog
		return res
	}
	res := step.Result{
		Signal:      steprun.SignalFor(pr.ExitCode),
		ExitCode:    pr.ExitCode,
		Output:      steprun.TrimOutput(pr.Stdout),
		Truncated:   pr.StdoutTruncated,
		SpillStdout: pr.StdoutSpill,
		StderrLog:   p.StderrLog,
		Duration:    pr.Duration,
	}
	switch {
	case pr.TimedOut:
		res.Signal = lang.SigTimeout
		res.Err = &source.Error{Code: source.ETimeout, Msg: fmt.Sprintf("%s of step '%s' timed out after %s", key, req.Step, steprun.TimeoutOf(req))}
	case ctx.Err() != nil:
		res.Signal = lang.SigFailure
		res.Err = &source.Error{Code: source.EInterrupted, Msg: fmt.Sprintf("step '%s' was interrupted", req.Step)}
	}
	report(l, toolRun{proc: pr, log: log.String()}, res.Signal == lang.SigSuccess)
	res.Segments = l.segs
	return res
}

// A toolLog receives both (masked) streams of a tool in the order they
// arrive, keeping up to maxToolLog bytes, and passes them on to live (-v),
// whose failures are ignored so that the log stays whole.
type toolLog struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	truncated bool
	live      io.Writer
}

func (t *toolLog) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := maxToolLog - t.buf.Len(); room >= len(p) {
		t.buf.Write(p)
	} else {
		t.buf.Write(p[:max(room, 0)])
		t.truncated = true
	}
	if t.live != nil {
		_, _ = t.live.Write(p)
	}
	return len(p), nil
}

// String returns the log, marked when it was cut.
func (t *toolLog) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, _ := text.Excerpt(t.buf.Bytes(), t.buf.Len(), t.truncated)
	return s
}
