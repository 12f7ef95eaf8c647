package vm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"smith/compiler"
	"smith/internal/goldenfile"
	"smith/isa"
	"smith/source"
	"smith/vm"
	"smith/workers/step"
)

// parWorker is a worker that is safe for concurrent use: each call sleeps
// a pseudo-random time (from seed, the step and the thread) and answers
// with its argv joined; fail lists argv[1] values that fail. It counts the
// calls of each (thread, step) and the most calls in flight at once.
type parWorker struct {
	seed   int64
	maxMs  int
	fail   map[string]bool
	before func(req *step.Request)

	mu       sync.Mutex
	calls    map[string]int // "thread/step" -> calls
	inFlight atomic.Int32
	peak     atomic.Int32
}

func (w *parWorker) Run(ctx context.Context, req *step.Request) step.Result {
	n := w.inFlight.Add(1)
	defer w.inFlight.Add(-1)
	for {
		p := w.peak.Load()
		if n <= p || w.peak.CompareAndSwap(p, n) {
			break
		}
	}
	w.mu.Lock()
	if w.calls == nil {
		w.calls = map[string]int{}
	}
	w.calls[req.Thread+"/"+req.Step]++
	w.mu.Unlock()
	if w.before != nil {
		w.before(req)
	}
	if w.maxMs > 0 {
		h := fnv.New64a()
		fmt.Fprintf(h, "%d/%s/%s", w.seed, req.Thread, req.Step)
		d := time.Duration(rand.New(rand.NewSource(int64(h.Sum64()))).Intn(w.maxMs)) * time.Millisecond
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
	}
	out := strings.Join(req.Argv, " ")
	if len(req.Argv) > 1 && w.fail[req.Argv[1]] {
		return step.Result{Signal: vm.SigFailure, ExitCode: 1, Output: out, Attempts: 1, Duration: 10 * time.Millisecond}
	}
	return step.Result{Signal: vm.SigSuccess, Output: out, Attempts: 1, Duration: 10 * time.Millisecond}
}

func (w *parWorker) count(thread, step string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.calls[thread+"/"+step]
}

// parRec records a run's deltas and events; safe for concurrent use (the
// machine calls it under its lock, but the test reads it too).
type parRec struct {
	mu     sync.Mutex
	deltas [][]byte
	events []vm.Event
	killAt int
	onSave func(d *vm.Delta)
}

func (r *parRec) config(w step.Runner) vm.Config {
	var clockMu sync.Mutex
	t := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	return vm.Config{
		Registry: w,
		RunID:    "r1",
		Host: clocked{now: func() time.Time {
			clockMu.Lock()
			defer clockMu.Unlock()
			t = t.Add(time.Second)
			return t
		}},
		Events: func(e vm.Event) {
			r.mu.Lock()
			r.events = append(r.events, e)
			r.mu.Unlock()
		},
		Checkpoint: func(d *vm.Delta, st *vm.State) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.killAt > 0 && d.Seq >= r.killAt {
				return fmt.Errorf("killed")
			}
			b, err := json.Marshal(d)
			if err != nil {
				return err
			}
			r.deltas = append(r.deltas, b)
			if r.onSave != nil {
				r.onSave(d)
			}
			return nil
		},
	}
}

// rebuilt replays the recorded deltas.
func (r *parRec) rebuilt(t *testing.T) *vm.State {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	st := &vm.State{}
	for _, b := range r.deltas {
		var d vm.Delta
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		st.Apply(&d)
	}
	return st
}

func compileYAML(t *testing.T, src string) *isa.Program {
	t.Helper()
	res, ds := compiler.Compile("par.yaml", []byte(src), compiler.Options{})
	if res == nil || res.Prog == nil || ds.HasErrors() {
		t.Fatalf("compile: %v", ds.Error())
	}
	return res.Prog
}

// timingFree is the state as JSON without the fields that depend on time.
func timingFree(t *testing.T, st *vm.State) string {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	var strip func(any)
	strip = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range []string{"duration", "started_at", "ended_at", "started", "elapsed"} {
				delete(x, k)
			}
			for _, c := range x {
				strip(c)
			}
		case []any:
			for _, c := range x {
				strip(c)
			}
		}
	}
	strip(v)
	out, _ := json.MarshalIndent(v, "", "  ")
	return string(out)
}

const parWorkflow = `version: "1.0"
name: par
steps:
  - name: Each
    for_each:
      items: [a, b, c, d, e, f]
      parallel: 3
      steps:
        - name: Work
          command: ["work", "${item}", "${loop.index}"]
          on: {success: {goto: Mark}, failure: {goto: _loop_break}}
        - name: Mark
          set_context: {last_seen: "${steps.Work.output}"}
          on: {success: {goto: Tag}, failure: {error: "mark failed"}}
        - name: Tag
          command: ["tag", "${steps.Work.output}"]
          on: {success: {goto: _loop_continue}, failure: {goto: _loop_break}}
    on: {success: {goto: Review}, failure: {error: "loop failed"}}
  - name: Review
    parallel:
      max: 2
      branches:
        style:
          - {name: Lint, command: [lint, x], on: {success: {goto: _branch_end}, failure: {error: "lint failed"}}}
        security:
          - {name: Scan, command: [scan, x], on: {success: {goto: Audit}, failure: {goto: _error}}}
          - {name: Audit, command: [audit, "${steps.Scan.output}"], on: {always: {goto: _branch_end}}}
        docs:
          - {name: Docs, command: [docs, "${steps.Lint.output}"], allow_missing_vars: [steps.Lint.output], on: {always: {goto: _branch_end}}}
    on: {success: {goto: Report}, failure: {error: "a review failed"}}
  - name: Report
    command: [report, "${steps.Tag.output}", "${steps.Audit.output}", "${context.last_seen}"]
    on: {success: {goto: _end}, failure: {goto: _error}}
`

// runPar runs p once with the worker w and returns the final state, the
// recorder and the error.
func runPar(t *testing.T, p *isa.Program, w *parWorker, edit func(*vm.Config)) (*vm.State, *parRec, error) {
	t.Helper()
	r := &parRec{}
	cfg := r.config(w)
	if edit != nil {
		edit(&cfg)
	}
	m, err := vm.New(p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	st, err := m.Run(context.Background())
	return st, r, err
}

// TestParallelDeterministic runs one parallel workflow many times with
// random delays per step (so the threads finish in different orders) and
// asserts the same final state every time, equal to what the journal
// rebuilds, with results by index and branch name.
func TestParallelDeterministic(t *testing.T) {
	p := compileYAML(t, parWorkflow)
	var want string
	for seed := int64(1); seed <= 12; seed++ {
		w := &parWorker{seed: seed, maxMs: 15}
		st, r, err := runPar(t, p, w, func(c *vm.Config) { c.MaxParallel = 4 })
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		got := timingFree(t, st)
		if rb := timingFree(t, r.rebuilt(t)); rb != got {
			t.Fatalf("seed %d: the journal rebuilds another state:\n%s", seed, goldenfile.FirstDiff(rb, got))
		}
		if want == "" {
			want = got
			continue
		}
		if got != want {
			t.Fatalf("seed %d: state differs from seed 1:\n%s", seed, goldenfile.FirstDiff(got, want))
		}
		if peak := w.peak.Load(); peak > 3 {
			t.Errorf("seed %d: %d calls in flight, want at most 3 (parallel: 3)", seed, peak)
		}
	}
	st, _, _ := runPar(t, p, &parWorker{}, nil)
	if got := st.Steps["Report"].Output; got != "report tag work f 5 audit scan x work f 5" {
		t.Errorf("Report output = %q", got)
	}
	its := st.Steps["Each"].Iterations
	if len(its) != 6 {
		t.Fatalf("iterations = %d, want 6", len(its))
	}
	for i, it := range its {
		want := fmt.Sprintf("tag work %c %d", 'a'+i, i)
		if it.Index != i || it.Output != want || it.Status != vm.StepCompleted {
			t.Errorf("iteration %d = {index %d, output %q, status %s}, want output %q", i, it.Index, it.Output, it.Status, want)
		}
	}
	if st.Threads != nil || len(st.LoopStack) != 0 {
		t.Errorf("threads or loop frames left after the joins: %v %v", st.Threads, st.LoopStack)
	}
	if got := st.Steps["Docs"].Output; got != "docs " {
		t.Errorf("Docs output = %q, want %q (a branch never sees another branch's results)", got, "docs ")
	}
}

// TestParallelSameAsSequential: a parallel loop leaves the same iterations,
// step results and context as the same loop run one iteration at a time.
func TestParallelSameAsSequential(t *testing.T) {
	par, _, err := runPar(t, compileYAML(t, parWorkflow), &parWorker{seed: 3, maxMs: 5}, nil)
	if err != nil {
		t.Fatal(err)
	}
	seq, _, err := runPar(t, compileYAML(t, strings.Replace(parWorkflow, "parallel: 3", "parallel: 1", 1)), &parWorker{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Work", "Mark", "Tag", "Report"} {
		if a, b := par.Steps[name].Output, seq.Steps[name].Output; a != b {
			t.Errorf("steps.%s.output = %q parallel, %q sequential", name, a, b)
		}
	}
	if a, b := jsonOf(t, par.Context), jsonOf(t, seq.Context); a != b {
		t.Errorf("context differs:\n%s", goldenfile.FirstDiff(a, b))
	}
	a, b := par.Steps["Each"].Iterations, seq.Steps["Each"].Iterations
	for i := range a {
		if a[i].Output != b[i].Output || a[i].Index != b[i].Index {
			t.Errorf("iteration %d: %q parallel, %q sequential", i, a[i].Output, b[i].Output)
		}
	}
	if par.Visits["Work"] != seq.Visits["Work"] {
		t.Errorf("visits differ: %v vs %v", par.Visits, seq.Visits)
	}
}

// TestParallelFailureStartsNothingNew: iteration 1 fails while iteration 0
// runs; iteration 0 finishes, nothing else starts, the loop fails naming
// iteration 1.
func TestParallelFailureStartsNothingNew(t *testing.T) {
	src := `version: "1.0"
name: fail
steps:
  - name: Each
    for_each:
      items: [a, b, c, d]
      parallel: 2
      steps:
        - name: Work
          command: ["work", "${item}"]
          on: {success: {goto: _loop_continue}, failure: {error: "work failed"}}
    on: {success: {goto: _end}, failure: {error: "loop failed"}}
`
	failed := make(chan struct{})
	var once sync.Once
	w := &parWorker{fail: map[string]bool{"b": true}}
	w.before = func(req *step.Request) {
		if req.Argv[1] == "a" {
			<-failed // iteration 0 ends only after iteration 1 failed
		}
	}
	r := &parRec{onSave: func(d *vm.Delta) {
		if d.Thread == "1" && d.Status == vm.ThreadFailed {
			once.Do(func() { close(failed) })
		}
	}}
	cfg := r.config(w)
	cfg.MaxParallel = 4
	m, err := vm.New(compileYAML(t, src), cfg)
	if err != nil {
		t.Fatal(err)
	}
	st, err := m.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "loop failed") {
		t.Fatalf("Run = %v, want the loop's failure", err)
	}
	its := st.Steps["Each"].Iterations
	if len(its) != 2 || its[0].Status != vm.StepCompleted || its[1].Status != vm.StepFailed {
		t.Fatalf("iterations = %+v, want 0 completed and 1 failed", its)
	}
	if got := st.Steps["Each"].Error; got == nil || !strings.Contains(got.Message, "iteration 1 failed") || !strings.Contains(got.Message, "work failed") {
		t.Errorf("loop error = %+v", got)
	}
	if w.count("2", "Work")+w.count("3", "Work") != 0 {
		t.Errorf("iterations 2 and 3 started after the failure: %v", w.calls)
	}
}

// TestParallelLoopBreak: _loop_break in one iteration starts nothing new
// and the loop succeeds.
func TestParallelLoopBreak(t *testing.T) {
	src := `version: "1.0"
name: brk
steps:
  - name: Each
    for_each:
      items: [a, b, c]
      parallel: 2
      steps:
        - name: Work
          command: ["work", "${item}"]
          on: {success: {goto: _loop_continue}, failure: {goto: _loop_break}}
    on: {success: {goto: _end}, failure: {error: "loop failed"}}
`
	st, _, err := runPar(t, compileYAML(t, src), &parWorker{fail: map[string]bool{"a": true}}, func(c *vm.Config) { c.MaxParallel = 1 })
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if r := st.Steps["Each"]; r.Status != vm.StepCompleted || len(r.Iterations) != 1 {
		t.Errorf("Each = %s with %d iterations, want completed after 1 (break, one at a time)", r.Status, len(r.Iterations))
	}
}

// TestParallelBranchFailure: a failing branch fails the step after the
// other branches finished; their results are kept under their names.
func TestParallelBranchFailure(t *testing.T) {
	src := `version: "1.0"
name: br
steps:
  - name: Review
    parallel:
      branches:
        a: [{name: A1, command: [run, ok], on: {success: {goto: A2}, failure: {goto: _error}}},
            {name: A2, command: [run, "${steps.A1.output}"]}]
        b: [{name: B1, command: [run, bad]}]
    on: {success: {goto: _end}, failure: {goto: Handle}}
  - name: Handle
    command: [handle, "${steps.Review.status}", "${steps.A2.output}", "${steps.B1.exit_code}"]
    on: {always: {goto: _end}}
strict_flow: false
`
	st, _, err := runPar(t, compileYAML(t, src), &parWorker{fail: map[string]bool{"bad": true}}, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := st.Steps["Handle"].Output; got != "handle failed run run ok 1" {
		t.Errorf("Handle output = %q", got)
	}
	if e := st.Steps["Review"].Error; e == nil || !strings.Contains(e.Message, "branch 'b' failed") {
		t.Errorf("Review error = %+v, want branch 'b' named", e)
	}
}

// TestParallelStepBudget: --max-steps counts every thread's steps.
func TestParallelStepBudget(t *testing.T) {
	_, _, err := runPar(t, compileYAML(t, parWorkflow), &parWorker{}, func(c *vm.Config) { c.MaxSteps = 8 })
	var re *vm.RuntimeError
	if err == nil || !errorsAs(err, &re) || re.Code != source.EStepBudget {
		t.Fatalf("Run = %v, want E_STEP_BUDGET", err)
	}
}

func errorsAs(err error, re **vm.RuntimeError) bool {
	r, ok := err.(*vm.RuntimeError)
	*re = r
	return ok
}

// TestParallelCrashResume kills the run at every change in turn (the
// checkpoint of that change fails, as in a crash before it is durable) and
// resumes from what was saved: the final state is the uninterrupted one,
// and no step that had completed (in any thread) runs again.
func TestParallelCrashResume(t *testing.T) {
	p := compileYAML(t, parWorkflow)
	want, full, err := runPar(t, p, &parWorker{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantJSON := timingFree(t, want)
	total := len(full.deltas)
	for kill := 2; kill <= total; kill++ {
		crashed := &parRec{killAt: kill}
		m, err := vm.New(p, crashed.config(&parWorker{seed: int64(kill), maxMs: 3}))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Run(context.Background()); err == nil {
			t.Fatalf("kill at %d: the run did not stop", kill)
		}
		saved := crashed.rebuilt(t)
		done := map[string]bool{} // "thread/step" completed before the crash
		for name, r := range saved.Steps {
			if r.Status == vm.StepCompleted {
				done["/"+name] = true
			}
		}
		for key, th := range saved.Threads {
			for name, r := range th.Steps {
				if r.Status == vm.StepCompleted {
					done[key+"/"+name] = true
				}
			}
		}
		w := &parWorker{seed: int64(kill) + 100, maxMs: 3}
		after := &parRec{}
		m, err = vm.New(p, after.config(w))
		if err != nil {
			t.Fatal(err)
		}
		st, err := m.Resume(context.Background(), saved, vm.ResumeOptions{})
		if err != nil {
			t.Fatalf("kill at %d: resume: %v", kill, err)
		}
		if got := timingFree(t, st); got != wantJSON {
			// seq and event_seq count the resume's own changes.
			if stripSeq(got) != stripSeq(wantJSON) {
				t.Fatalf("kill at %d: resumed state differs:\n%s", kill, goldenfile.FirstDiff(stripSeq(got), stripSeq(wantJSON)))
			}
		}
		for k := range done {
			thread, step, _ := strings.Cut(k, "/")
			if n := w.count(thread, step); n > 0 {
				t.Errorf("kill at %d: step %s of thread %q completed before the crash and ran again", kill, step, thread)
			}
		}
	}
}

// stripSeq drops the seq and event_seq lines.
func stripSeq(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, `"seq":`) || strings.Contains(l, `"event_seq":`) {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// TestParallelNoDefaultCap: with no --max-parallel (0), a step's own
// parallel: N runs N iterations at once, even past the number of CPUs
// (CONTRACT 12.3: agent steps wait on the network, not on the CPUs).
func TestParallelNoDefaultCap(t *testing.T) {
	n := runtime.NumCPU() + 2
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprint(i)
	}
	src := fmt.Sprintf(`version: "1.0"
name: nocap
steps:
  - name: Each
    for_each:
      items: [%s]
      parallel: %d
      steps:
        - name: Work
          command: ["work", "${item}"]
          on: {success: {goto: _loop_continue}, failure: {error: "work failed"}}
    on: {success: {goto: _end}, failure: {error: "loop failed"}}
`, strings.Join(items, ", "), n)
	w := &parWorker{}
	w.before = func(*step.Request) {
		// Wait (a bounded time) until every iteration is in flight.
		for deadline := time.Now().Add(5 * time.Second); int(w.peak.Load()) < n && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	if _, _, err := runPar(t, compileYAML(t, src), w, nil); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if peak := int(w.peak.Load()); peak != n {
		t.Errorf("%d calls in flight at most, want %d (parallel: %d, no --max-parallel)", peak, n, n)
	}
}

// TestStepTimesEveryResult: every step result, the parallel loop's, the
// parallel step's, set_context's and the iterations' own included, records
// started_at and ended_at, in that order (CONTRACT 12.5).
func TestStepTimesEveryResult(t *testing.T) {
	src := `version: "1.0"
name: times
steps:
  - name: Each
    for_each:
      items: [a, b]
      parallel: 2
      steps:
        - name: Work
          command: ["work", "${item}"]
          on: {success: {goto: _loop_continue}, failure: {error: "work failed"}}
    on: {success: {goto: Review}, failure: {error: "loop failed"}}
  - name: Review
    parallel:
      branches:
        a: [{name: A1, command: [run, ok]}]
        b: [{name: B1, command: [run, ok]}]
    on: {success: {goto: Mark}, failure: {error: "review failed"}}
  - name: Mark
    set_context: {done: "yes"}
    on: {success: {goto: Serial}, failure: {error: "mark failed"}}
  - name: Serial
    for_each:
      items: [x]
      steps:
        - name: Inner
          command: ["work", "${item}"]
          on: {success: {goto: _loop_continue}, failure: {error: "inner failed"}}
    on: {success: {goto: _end}, failure: {error: "serial failed"}}
strict_flow: false
`
	st, _, err := runPar(t, compileYAML(t, src), &parWorker{}, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	check := func(where string, r *vm.StepResult) {
		start, err1 := time.Parse(time.RFC3339Nano, r.StartedAt)
		end, err2 := time.Parse(time.RFC3339Nano, r.EndedAt)
		if err1 != nil || err2 != nil || end.Before(start) {
			t.Errorf("%s: started_at %q, ended_at %q, want both, in order", where, r.StartedAt, r.EndedAt)
		}
	}
	for _, name := range []string{"Each", "Work", "Review", "A1", "B1", "Mark", "Serial", "Inner"} {
		r := st.Steps[name]
		if r == nil {
			t.Errorf("no result for %s", name)
			continue
		}
		check(name, r)
		for _, it := range r.Iterations {
			for s, ir := range it.Steps {
				check(fmt.Sprintf("%s[%d].%s", name, it.Index, s), ir)
			}
		}
	}
}

// TestParallelStepBudgetManyThreads: 2,000 parallel iterations under a
// budget of 50 blocks run at most 50 blocks in all: every thread reserves
// its block before running it (one atomic check-and-count), so threads
// starting at once cannot all pass the check before any counted.
func TestParallelStepBudgetManyThreads(t *testing.T) {
	items := make([]string, 2000)
	for i := range items {
		items[i] = fmt.Sprint(i)
	}
	src := `version: "1.0"
name: many
strict_flow: false
steps:
  - name: Each
    for_each:
      items: [` + strings.Join(items, ", ") + `]
      parallel: 2000
      steps:
        - {name: Work, command: [run, "${item}"]}
`
	w := &parWorker{maxMs: 2}
	_, _, err := runPar(t, compileYAML(t, src), w, func(c *vm.Config) {
		c.MaxSteps = 50
		c.MaxParallel = 2000
	})
	var re *vm.RuntimeError
	if err == nil || !errorsAs(err, &re) || re.Code != source.EStepBudget {
		t.Fatalf("Run = %v, want E_STEP_BUDGET", err)
	}
	w.mu.Lock()
	n := 0
	for _, c := range w.calls {
		n += c
	}
	w.mu.Unlock()
	if n >= 50 {
		t.Errorf("%d steps ran under a budget of 50 blocks (the loop itself is one)", n)
	}
}

// TestParallelCheckpointLater: with Config.CheckpointLater, whose waits
// return out of order (random delays), the run ends in the same state as
// with Checkpoint, the deltas rebuild it, every change is durable (its
// wait returned) before the thread goes on, and events leave in the order
// of their seqs, each only after the wait of the change that holds it.
func TestParallelCheckpointLater(t *testing.T) {
	p := compileYAML(t, parWorkflow)
	want, _, err := runPar(t, p, &parWorker{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for seed := int64(1); seed <= 6; seed++ {
		var mu sync.Mutex
		rnd := rand.New(rand.NewSource(seed))
		durable := map[int]bool{} // EventSeq of every durable change
		var events []vm.Event
		var bad []string
		st, r, err := runPar(t, p, &parWorker{seed: seed, maxMs: 3}, func(c *vm.Config) {
			c.MaxParallel = 4
			save := c.Checkpoint
			c.CheckpointLater = func(d *vm.Delta, st *vm.State) (func() error, error) {
				if err := save(d, st); err != nil {
					return nil, err
				}
				mu.Lock()
				delay := time.Duration(rnd.Intn(2000)) * time.Microsecond
				mu.Unlock()
				es := d.EventSeq
				return func() error {
					time.Sleep(delay)
					mu.Lock()
					durable[es] = true
					mu.Unlock()
					return nil
				}, nil
			}
			c.Events = func(e vm.Event) {
				mu.Lock()
				defer mu.Unlock()
				if n := len(events); n > 0 && e.Seq <= events[n-1].Seq {
					bad = append(bad, fmt.Sprintf("event %d after %d", e.Seq, events[n-1].Seq))
				}
				if e.Thread != "" {
					ok := false
					for s := range durable {
						ok = ok || s >= e.Seq
					}
					if !ok {
						bad = append(bad, fmt.Sprintf("event %d left before a durable change held it", e.Seq))
					}
				}
				events = append(events, e)
			}
		})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if len(bad) > 0 {
			t.Errorf("seed %d: %s", seed, strings.Join(bad, "; "))
		}
		if got, w := timingFree(t, st), timingFree(t, want); got != w {
			t.Fatalf("seed %d: state differs from Checkpoint's:\n%s", seed, goldenfile.FirstDiff(got, w))
		}
		if rb, got := timingFree(t, r.rebuilt(t)), timingFree(t, st); rb != got {
			t.Fatalf("seed %d: the journal rebuilds another state:\n%s", seed, goldenfile.FirstDiff(rb, got))
		}
		if n := len(events); n != st.EventSeq || events[n-1].Seq != st.EventSeq {
			t.Errorf("seed %d: %d events; want every event up to seq %d", seed, n, st.EventSeq)
		}
	}
}

// TestParallelNestedContextMerge: threads that set different keys of one
// nested context map (set_context "cfg.a", "cfg.b") all keep them at the
// join, as the same steps run one after the other do; a key two threads
// set takes the later index's (or name's) value, also when the later one
// sets it back to its value at the fork (who), and a whole value set by a
// later thread replaces the map an earlier one set a key in (gone). Random
// delays before each set_context change the order the threads finish in.
func TestParallelNestedContextMerge(t *testing.T) {
	src := `version: "1.0"
name: ctx
strict_flow: false
steps:
  - {name: Init, set_context: {"cfg.base": "0", "cfg.a": "init", "who": "init", "keep": "k0"}}
  - name: Par
    parallel:
      branches:
        a: [{name: WA, command: [w, a]}, {name: SetA, set_context: {"cfg.a": "va", "cfg.deep.a": "da"}}]
        b: [{name: WB, command: [w, b]}, {name: SetB, set_context: {"cfg.b": "vb", "top": "b"}}]
        c: [{name: WC, command: [w, c]}, {name: SetC, set_context: {"cfg.a": "from-c", "cfg.deep.c": "dc"}}]
        d: [{name: WD, command: [w, d]}, {name: SetD, set_context: {"who": "d", "keep": "k0", "gone.x": "1"}}]
        e: [{name: WE, command: [w, e]}, {name: SetE, set_context: {"who": "init", "gone": "flat"}}]
  - name: Each
    for_each:
      items: [x, y, z]
      parallel: 3
      steps:
        - {name: WI, command: [w, "${item}"]}
        - {name: SetI, set_context: {"loop.last": "${item}", "loop.seen_${item}": "yes"}}
`
	want := `{
  "cfg": {
    "a": "from-c",
    "b": "vb",
    "base": "0",
    "deep": {
      "a": "da",
      "c": "dc"
    }
  },
  "gone": "flat",
  "keep": "k0",
  "loop": {
    "last": "z",
    "seen_${item}": "yes"
  },
  "top": "b",
  "who": "init"
}`
	p := compileYAML(t, src)
	for seed := int64(1); seed <= 12; seed++ {
		st, _, err := runPar(t, p, &parWorker{seed: seed, maxMs: 15}, nil)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if got := jsonOf(t, st.Context); got != want {
			t.Fatalf("seed %d: context after the joins:\n%s", seed, goldenfile.FirstDiff(got, want))
		}
	}
}
