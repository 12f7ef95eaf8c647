package workers

import (
	"context"

	"smith/isa"
	"smith/source"
	"smith/workers/agent"
	"smith/workers/builtin"
	"smith/workers/confine"
	"smith/workers/step"
	"smith/workers/steprun"
)

// A Registry executes requests: processes, providers (the presets, a
// workflow's own providers and the built-in mock) and internal workers. The
// zero value works: an empty parent environment, the real clock, no
// record/replay and no internal workers. cmd/smithvm builds one with
// NewRegistry and hands it to the VM; a Registry holds no state between calls
// except through files under a run's RUN_ROOT, so one value may serve
// several runs.
type Registry struct {
	// Runner runs provider steps; it holds the parent environment, the
	// clock and the waits (Lookup, Clock, Wait), which every step shares,
	// and --record and --replay (Record, Replay). Its Run is shadowed by the
	// Registry's, which dispatches on the request's kind.
	agent.Runner
	// Internal maps a worker name as written ("Internal:TestRunner") to its
	// implementation. NewRegistry fills it; a name that is absent fails the
	// request with E_EXEC.
	Internal map[string]builtin.Func
}

// NewRegistry returns a Registry that reads the parent environment through env
// and knows every internal worker implemented so far.
func NewRegistry(env func(string) (string, bool)) *Registry {
	return &Registry{Runner: agent.Runner{Env: steprun.Env{Lookup: env}}, Internal: builtin.Workers()}
}

// RecordedRuns returns the ids of the runs whose provider calls DIR holds
// the recordings of (--record DIR), sorted; none when DIR does not exist.
func RecordedRuns(dir string) ([]string, error) {
	return agent.RecordedRuns(dir)
}

// WasReplayed reports whether the run whose RUN_ROOT is runRoot answered
// provider calls from recordings (--replay).
func WasReplayed(runRoot string) bool {
	return agent.WasReplayed(runRoot)
}

var _ step.Runner = (*Registry)(nil)

// Run executes req and reports what happened. It never panics on bad input
// and never returns a Go error: every failure is a Result with Signal
// SIGNAL:FAILURE or SIGNAL:TIMEOUT and, where the user should see why, a coded
// Err.
func (r *Registry) Run(ctx context.Context, req *step.Request) step.Result {
	start := r.Now()
	var res step.Result
	switch req.Kind {
	case isa.KindCommand:
		res = r.Command(ctx, req)
	case isa.KindProvider:
		res = r.Runner.Run(ctx, req)
	case isa.KindInternal:
		res = r.runInternal(ctx, req)
	case isa.KindSend:
		res = r.runSend(req)
	default:
		res = step.Failed(step.ExitNotRun, source.Errorf(source.EInternal, "internal error: step '%s' has kind %s, which runs no worker", req.Step, req.Kind))
	}
	res.Duration = r.Now().Sub(start)
	if res.Attempts == 0 {
		res.Attempts = 1
	}
	if wf := req.WaitFor; wf != nil && wf.Processed != "" {
		if res.Err == nil && res.ExitCode == 0 {
			res.Consumed = consumed(req, req.WaitMatched)
		} else {
			steprun.Release(req, req.WaitMatched) // a failed step consumes nothing
		}
	}
	return res
}

// runInternal runs an Internal:* worker from the table.
func (r *Registry) runInternal(ctx context.Context, req *step.Request) step.Result {
	fn, ok := r.Internal[req.Worker]
	if !ok || fn == nil {
		return step.Failed(step.ExitNotRun, source.Errorf(source.EExec, "internal worker '%s' is not available yet", req.Worker))
	}
	changed := func(ctx context.Context, d confine.Dir, runID string) []string {
		return ChangedFiles(ctx, d, runID, r.Lookup)
	}
	return fn(ctx, builtin.Env{Env: r.Env, Changed: changed}, req)
}
