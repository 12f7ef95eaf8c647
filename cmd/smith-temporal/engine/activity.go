package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"smith/isa"
	"smith/lang"
	"smith/workers"
	"smith/workers/confine"
	"smith/workers/provider"
	"smith/workers/step"
	"smith/workers/text"
)

// Activities are the effects of a Smith run, executed by workers.
type Activities struct {
	// Base is the worker's project directory (--base): WORKSPACE and the
	// runs' logs are under it.
	Base string
	// Exe, when set, is the smith-temporal binary the steps that start a
	// process run in: one child of the worker (step-host, stephost.go)
	// that dies with it, so a worker killed with SIGKILL leaves no step
	// behind. "" runs steps in the worker's own process (the in-memory
	// unit tests).
	Exe string
	// Lookup is the worker's environment; nil means os.LookupEnv.
	Lookup func(string) (string, bool)
	// HostQueue is the task queue of this worker's host (and BASE): a
	// run whose worktree this worker creates sends its activities there.
	HostQueue string
	// Heartbeat is how often a running step heartbeats; 0 means 1 s.
	Heartbeat time.Duration
	// Blobs is the fleet's blob store: with one, a run's files follow it
	// from worker to worker (snapshot.go); nil leaves them where the steps
	// wrote them.
	Blobs *Blobs

	filesOnce sync.Once
	files     *workspaceFiles

	hostOnce sync.Once
	host     *stepHost
}

func (a *Activities) lookup(name string) (string, bool) {
	if a.Lookup != nil {
		return a.Lookup(name)
	}
	return os.LookupEnv(name)
}

// EnvInput names what the workflow needs from the environment.
type EnvInput struct {
	Names   []string // env_allow: values wanted
	Secrets []string // secrets: only whether they are set
}

// EnvOutput is the environment as history may hold it: values of the
// env_allow names, and which secrets are set (never their values).
type EnvOutput struct {
	Values     map[string]string
	SecretsSet []string
}

// Environment reads the worker's environment once per run.
func (a *Activities) Environment(ctx context.Context, in EnvInput) (EnvOutput, error) {
	out := EnvOutput{Values: map[string]string{}}
	for _, n := range in.Names {
		if v, ok := a.lookup(n); ok {
			out.Values[n] = v
		}
	}
	for _, n := range in.Secrets {
		if _, ok := a.lookup(n); ok {
			out.SecretsSet = append(out.SecretsSet, n)
		}
	}
	return out, nil
}

// Step runs one execution of a step or block. It heartbeats while the step
// runs; when the activity is cancelled (a lost heartbeat, the run
// cancelled) the step's process group is killed.
//
// Before the step, the run's WORKSPACE is made equal to the snapshot the
// workflow sent (wr.Files: the files after the run's last step, wherever
// it ran); after it, a new snapshot is stored and named in the result.
func (a *Activities) Step(ctx context.Context, wr WireRequest) (WireResult, error) {
	stop := a.heartbeat(ctx)
	defer stop()
	ws, travel := a.workspace(&wr.Request)
	var fl *flight
	if travel {
		var err error
		if fl, err = a.runFiles().begin(a.Blobs, ws, wr.RunID, wr.Files); err != nil {
			return WireResult{}, fmt.Errorf("the run's files: %w", err) // retried
		}
		defer a.runFiles().land(fl) // a step that ends without a snapshot
	}
	var out WireResult
	if a.Exe == "" || !startsProcess(&wr.Request) {
		out = RunStep(ctx, a.Base, wr, a.lookup)
	} else {
		a.hostOnce.Do(func() { a.host = &stepHost{exe: a.Exe, base: a.Base} })
		var err error
		if out, err = a.host.run(ctx, wr); err != nil {
			return out, err
		}
	}
	if travel {
		ref, err := a.runFiles().end(a.Blobs, ws, fl)
		if err != nil {
			return WireResult{}, fmt.Errorf("the run's files: %w", err) // retried
		}
		out.Files = ref
	}
	out.Step = wr.Step
	return out, nil
}

// workspace is the WORKSPACE of the step's run on this worker, and
// whether its files travel: with a blob store, and not for a run with a
// git worktree (its activities stay on the host that holds it).
func (a *Activities) workspace(r *step.Request) (string, bool) {
	if a.Blobs == nil || r.WorktreePath != "" {
		return "", false
	}
	return filepath.Join(a.Base, "workspace"), true
}

// processStart is when this process started: a worker's files changed
// before it are a dead process's (snapshot.go).
var processStart = time.Now()

func (a *Activities) runFiles() *workspaceFiles {
	a.filesOnce.Do(func() {
		a.files = newWorkspaceFiles(filepath.Join(a.Base, ".orchestrator", "runs"), processStart)
	})
	return a.files
}

// startsProcess reports whether a request may start a process: commands,
// the Internal workers that run the project's test, lint and build
// commands, and every provider but the built-in mock. The others (the
// mock, file writers, sends) run inside the worker, cancelled with it.
func startsProcess(r *step.Request) bool {
	switch r.Kind {
	case isa.KindCommand:
		return true
	case isa.KindInternal:
		switch r.Worker {
		case lang.InternalTestRunner, lang.InternalRunLinter, lang.InternalRunBuilder:
			return true
		}
		return false
	case isa.KindSend:
		return false
	case isa.KindProvider:
		if len(r.CommandOverride) > 0 || len(r.Providers) == 0 {
			return true
		}
		for _, p := range r.Providers {
			if p != "mock" {
				return true
			}
			for _, d := range r.ProviderDefs {
				if d.Name == p {
					return true
				}
			}
		}
		return false
	}
	return true // a kind this list does not know yet: the safe side
}

// heartbeat records a heartbeat every interval until stop is called.
func (a *Activities) heartbeat(ctx context.Context) (stop func()) {
	every := a.Heartbeat
	if every <= 0 {
		every = time.Second
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}

// RunStep executes a step in this process with the worker's directories
// and environment: the secrets' placeholders are filled, the callbacks
// recorded, and everything returned masked.
func RunStep(ctx context.Context, base string, wr WireRequest, lookup func(string) (string, bool)) WireResult {
	fail := func(err error) WireResult {
		return WireResult{Result: step.Result{Signal: "SIGNAL:FAILURE", ExitCode: 1, Attempts: 1,
			Err: &StepError{Code: "E_EXEC", Msg: err.Error()}}}
	}
	values, err := fillSecrets(&wr, lookup)
	if err != nil {
		return fail(err)
	}
	// The presets' own variables reach their CLIs from this worker's
	// environment: masked like secrets (CONTRACT 5).
	values = append(values, provider.AllVars().Values(lookup)...)
	mask := text.NewMasker(values)
	dirs, err := confine.New(base)
	if err != nil {
		return fail(err)
	}
	req := wr.Request
	req.Dirs = dirs
	if req.WorktreePath != "" {
		req.Dirs.Workspace = req.WorktreePath
	}
	req.RunRoot = filepath.Join(base, ".orchestrator", "runs", req.RunID)
	if err := os.MkdirAll(req.RunRoot, 0o755); err != nil {
		return fail(err)
	}
	if err := os.MkdirAll(dirs.Workspace, 0o755); err != nil {
		return fail(err)
	}
	req.Mask = mask
	var out WireResult
	req.AttemptID = func(n int) string {
		out.Calls = append(out.Calls, Call{Kind: "attempt", Attempt: n})
		return ""
	}
	req.OnRetry = func(attempt, exitCode int, wait time.Duration) {
		out.Calls = append(out.Calls, Call{Kind: "retry", Attempt: attempt, ExitCode: exitCode, Wait: wait})
	}
	req.OnFallback = func(from, to, reason string) {
		out.Calls = append(out.Calls, Call{Kind: "fallback", From: from, To: to, Reason: mask.String(reason)})
	}
	reg := workers.NewRegistry(lookup)
	out.Result = reg.Run(ctx, &req)
	maskResult(&out.Result, mask)
	return out
}
