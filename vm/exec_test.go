package vm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"smith/isa"
	"smith/lang"
	"smith/vm"
	"smith/workers/step"
)

func TestRequest(t *testing.T) {
	s := cmd("run", "${context.who}")
	s.Timeout = 1.5
	s.Attempts = 3
	s.BackoffSec, s.HasBackoff = 0, true
	s.Env = []isa.EnvVar{{Name: "WHO", Val: tpl("${context.who}")}}
	s.Secrets, s.HasSecrets = []string{"B"}, true
	s.Prompt = tp("hi ${agent.name}")
	s.OutputFile = tp("${run.id}.txt")
	s.ProviderParams = []isa.Field{{Key: "model", Val: str("m-${context.who}")}}
	s.Transport = &isa.Transport{Mode: "argv", ArgvTemplate: []lang.Template{tpl("--p=${PROMPT}")}}
	s.WaitFor = &isa.WaitFor{Glob: tpl("${agent.inbox}/*.md"), TimeoutSec: 2, PollMs: 50, MinCount: 1}
	p := build(t, N{ID: "main", Blocks: []B{
		{ID: "Ask", Kind: isa.KindProvider, Agent: "eng", Step: s, On: ok},
		{ID: "Plain", On: ok},
	}})
	p.Secrets = []string{"A", "B"}
	p.EnvAllow = []string{"GOPATH"}
	p.Agents = []isa.AgentDef{{Name: "eng", Providers: []string{"claude"}, Inbox: "in/eng"}}
	p.Context = &isa.TValue{Kind: isa.TMap, Map: []isa.Field{{Key: "who", Val: str("bob")}}}
	p.Providers = []isa.ProviderDef{{Name: "claude", Command: []string{"claude", "${PROMPT}"}, Defaults: []isa.Field{{Key: "model", Val: str("x")}}}}
	f := &fake{}
	r := run(t, p, f, func(c *vm.Config) {
		c.Env = func(k string) (string, bool) { return "val-" + k, k == "A" || k == "B" }
	})
	if r.err != nil {
		t.Fatal(r.err)
	}
	q := f.req(t, "Ask")
	checks := []struct {
		name      string
		got, want any
	}{
		{"kind", q.Kind, isa.KindProvider},
		{"argv", q.Argv, []string{"run", "bob"}},
		{"providers", q.Providers, []string{"claude"}},
		{"timeout", q.Timeout, 1500 * time.Millisecond},
		{"attempts", q.Attempts, 3},
		{"backoff", q.Backoff, time.Duration(0)},
		{"env", q.Env, []step.EnvVar{{Name: "WHO", Value: "bob"}}},
		{"secrets", q.Secrets, []step.EnvVar{{Name: "B", Value: "val-B"}}},
		{"env allow", q.EnvAllow, []string{"GOPATH"}},
		{"prompt", q.Prompt, "hi eng"},
		{"output file", q.OutputFile, "r1.txt"},
		{"params", q.ProviderParams, []step.ProviderParam{{Key: "model", Value: "m-bob"}}},
		{"transport", q.Transport.ArgvTemplate, []string{"--p=${PROMPT}"}},
		{"wait glob", q.WaitFor.Glob, "in/eng/*.md"},
		{"wait poll", q.WaitFor.Poll, 50 * time.Millisecond},
		{"provider defs", q.ProviderDefs[0].Defaults, []step.ProviderParam{{Key: "model", Value: "x"}}},
		{"run id", q.RunID, "r1"},
		{"node", q.Node, "main"},
	}
	for _, c := range checks {
		if !equal(c.got, c.want) {
			t.Errorf("request %s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
	d := f.req(t, "Plain")
	if d.Timeout != 300*time.Second || d.Attempts != 1 || d.Backoff != 2*time.Second || len(d.Secrets) != 2 || d.Kind != isa.KindCommand {
		t.Errorf("defaults: timeout %v attempts %d backoff %v secrets %v kind %v", d.Timeout, d.Attempts, d.Backoff, d.Secrets, d.Kind)
	}
}

func equal(a, b any) bool {
	switch x := a.(type) {
	case []string:
		return slices.Equal(x, b.([]string))
	case []step.EnvVar:
		return slices.Equal(x, b.([]step.EnvVar))
	case []step.ProviderParam:
		return slices.Equal(x, b.([]step.ProviderParam))
	}
	return a == b
}

// retryRunner fails the first attempt, reports the retry, then succeeds,
// writing a secret to the live output.
type retryRunner struct{ ids []string }

func (rr *retryRunner) Run(_ context.Context, req *step.Request) step.Result {
	rr.ids = append(rr.ids, req.AttemptID(1))
	if req.Live != nil {
		req.Live.Write([]byte("token=s3cret\n"))
	}
	req.OnRetry(1, 1, 2*time.Second)
	rr.ids = append(rr.ids, req.AttemptID(2))
	return step.Result{Signal: vm.SigSuccess, Attempts: 2, Duration: time.Second}
}

func TestRetryAndLive(t *testing.T) {
	p := build(t, N{ID: "main", Blocks: []B{{ID: "Fetch", On: ok}}})
	p.Secrets = []string{"TOKEN"}
	rr := &retryRunner{}
	var live bytes.Buffer
	r := &rec{}
	cfg := r.config(&fake{})
	cfg.Registry = rr
	cfg.Verbose = &live
	cfg.Env = func(k string) (string, bool) { return "s3cret", k == "TOKEN" }
	// Each running record of Fetch is Deferred, so the store brings
	// state.json up to date with it while the try runs (store.Run.Save).
	var deferred []bool
	save := cfg.Checkpoint
	cfg.Checkpoint = func(d *vm.Delta, st *vm.State) error {
		for _, c := range d.Steps {
			if c.Name == "Fetch" && c.Result.Status == vm.StepRunning {
				deferred = append(deferred, d.Deferred)
			}
		}
		return save(d, st)
	}
	m, err := vm.New(p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	st, err := m.Run(context.Background())
	r.st = st
	if !slices.Equal(deferred, []bool{true, true}) {
		t.Errorf("running records of Fetch deferred %v, want [true true]", deferred)
	}
	if err != nil || st.Steps["Fetch"].Attempts != 2 {
		t.Fatalf("Run() = %v, attempts %d", err, st.Steps["Fetch"].Attempts)
	}
	if !slices.Contains(r.console, "WARNING: Step 'Fetch' attempt 1 failed with exit code 1; retrying in 2s.") {
		t.Errorf("console lacks the retry line: %q", r.console)
	}
	if rr.ids[0] == rr.ids[1] {
		t.Errorf("attempt ids %v are not distinct", rr.ids)
	}
	// attempt_id is the try's number on every event of the step (CONTRACT
	// 3.5, seed 004's integer); attempt_uid the try's own id.
	var started, retry, done vm.Event
	for _, e := range r.events {
		switch e.Kind {
		case vm.EvStepStarted:
			started = e
		case vm.EvStepRetry:
			retry = e
		case vm.EvStepCompleted:
			done = e
		}
	}
	if started.AttemptID != 1 || retry.AttemptID != 1 || done.AttemptID != 2 {
		t.Errorf("event attempt_ids %d, %d, %d; want 1, 1, 2", started.AttemptID, retry.AttemptID, done.AttemptID)
	}
	if started.AttemptUID != rr.ids[0] || retry.AttemptUID != rr.ids[0] || done.AttemptUID != rr.ids[1] {
		t.Errorf("event attempt_uids %q, %q, %q; want %q, %q, %q", started.AttemptUID, retry.AttemptUID, done.AttemptUID, rr.ids[0], rr.ids[0], rr.ids[1])
	}
	if got := live.String(); got != "token=***\n" {
		t.Errorf("live output = %q, want masked", got)
	}
	// Before the second try starts, its running record names attempt 2
	// (status shows the attempt that runs now, CONTRACT 6).
	var runningAttempts []int
	for _, b := range r.deltas {
		var d vm.Delta
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		for _, c := range d.Steps {
			if c.Name == "Fetch" && c.Result.Status == vm.StepRunning {
				runningAttempts = append(runningAttempts, c.Result.Attempts)
			}
		}
	}
	if !slices.Equal(runningAttempts, []int{1, 2}) {
		t.Errorf("running records of Fetch name attempts %v, want [1 2]", runningAttempts)
	}
	checkRebuilt(t, r)
}

// failRetryRunner fails its first try, reports the retry, then fails again.
type failRetryRunner struct{}

func (failRetryRunner) Run(_ context.Context, req *step.Request) step.Result {
	req.OnRetry(1, 1, 0)
	return step.Result{Signal: vm.SigFailure, ExitCode: 1, Attempts: 2, Duration: time.Second}
}

// The error: action that ends the run after a step's last try carries that
// try's number, as every event of the step does (CONTRACT 3.5).
func TestFailActionCarriesLastAttempt(t *testing.T) {
	p := build(t, N{ID: "main", Blocks: []B{{ID: "Fetch", On: ok}}})
	r := &rec{}
	cfg := r.config(&fake{})
	cfg.Registry = failRetryRunner{}
	m, err := vm.New(p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := m.Run(context.Background())
	r.st = st
	var failed, action vm.Event
	for _, e := range r.events {
		switch e.Kind {
		case vm.EvStepFailed:
			failed = e
		case vm.EvFailAction:
			action = e
		}
	}
	if failed.AttemptID != 2 || action.AttemptID != 2 {
		t.Errorf("attempt_id of step_failed %d, fail_action %d; want 2, 2", failed.AttemptID, action.AttemptID)
	}
}
