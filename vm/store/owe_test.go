package store

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"smith/compiler"
	"smith/vm"
	"smith/workers"
	"smith/workers/step"
)

// durableRunner is a step.Runner that, as each step's process would
// start, checks that the run's journal owes no sync: every earlier step's
// result is durable before the next step starts, although a result is
// appended without a sync of its own (vm.Delta.SyncWithNext, Run.Owe).
type durableRunner struct {
	r          *Run
	mu         sync.Mutex
	calls      int
	violations []string
}

func (d *durableRunner) Run(_ context.Context, req *step.Request) step.Result {
	d.r.mu.Lock()
	owed := d.r.owed
	d.r.mu.Unlock()
	d.mu.Lock()
	d.calls++
	if owed {
		d.violations = append(d.violations, req.Step)
	}
	d.mu.Unlock()
	return step.Result{Signal: vm.SigSuccess, Output: "ok", Attempts: 1, Duration: time.Millisecond}
}

// TestStepResultsDurableBeforeNextStep runs a chain, a serial loop and a
// parallel step with the real store: no step starts while an earlier
// result is owed, the chain's results are owed (shared with the next
// change's sync: one journal fdatasync per step, none for the last, whose
// result the end's snapshot holds), and the run reads back whole.
func TestStepResultsDurableBeforeNextStep(t *testing.T) {
	const src = `version: "1.0"
name: owe
steps:
  - name: A
    command: ["a"]
    on: {success: {goto: B}, failure: {error: "A failed"}}
  - name: B
    command: ["b"]
    on: {success: {goto: Each}, failure: {error: "B failed"}}
  - name: Each
    for_each:
      items: [x, y]
      steps:
        - name: Work
          command: ["work", "${item}"]
          on: {success: {goto: _loop_continue}, failure: {goto: _loop_break}}
    on: {success: {goto: Both}, failure: {error: "loop failed"}}
  - name: Both
    parallel:
      branches:
        one:
          - {name: P1, command: [p1], on: {success: {goto: _branch_end}, failure: {error: "p1"}}}
        two:
          - {name: P2, command: [p2], on: {success: {goto: _branch_end}, failure: {error: "p2"}}}
    on: {success: {goto: C}, failure: {error: "parallel failed"}}
  - name: C
    command: ["c"]
    on: {success: {end: true}, failure: {error: "C failed"}}
`
	res, ds := compiler.Compile("owe.yaml", []byte(src), compiler.Options{})
	if res == nil || res.Prog == nil || ds.HasErrors() {
		t.Fatalf("compile: %v", ds.Error())
	}
	s := newStore(t)
	s.Policy = Policy{Every: 1000, Interval: time.Hour}
	journal, _ := countSyncs(t)
	r, err := s.Create("owe-run")
	if err != nil {
		t.Fatal(err)
	}
	owes := 0
	runner := &durableRunner{r: r}
	cfg := vm.Config{
		Registry: runner,
		Host:     workers.Local{},
		RunID:    r.ID(),
		Checkpoint: func(d *vm.Delta, st *vm.State) error {
			if d.SyncWithNext {
				owes++
			}
			return r.Save(d, st)
		},
	}
	m, err := vm.New(res.Prog, cfg)
	if err != nil {
		t.Fatal(err)
	}
	final, err := m.Run(context.Background())
	if err != nil || final.Status != vm.StatusCompleted {
		t.Fatalf("run: %v, status %v", err, final)
	}
	j := *journal
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if *journal != j {
		t.Errorf("Close synced the journal %d times: the end's snapshot should have held the last result", *journal-j)
	}
	if len(runner.violations) > 0 {
		t.Errorf("steps started while an earlier result was not durable: %v", runner.violations)
	}
	if runner.calls != 7 || owes < 5 {
		t.Errorf("%d steps ran, %d results shared the next change's sync; want 7 and at least 5 (A, B, the loop's two, C)", runner.calls, owes)
	}
	got, err := s.ReadState("owe-run")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"A", "B", "Work", "P1", "P2", "C"} {
		if got.Steps[name] == nil || got.Steps[name].Status != vm.StepCompleted {
			t.Errorf("step %s after reading back: %+v", name, got.Steps[name])
		}
	}
}

// TestOweSnapshotsWhenDue: a run whose changes are all owed results and
// staged running records (a chain of steps) still snapshots every
// Policy.Every changes, so its journal, and the time a resume takes to
// replay it, stay short however long the run.
func TestOweSnapshotsWhenDue(t *testing.T) {
	s := newStore(t)
	s.Policy = Policy{Every: 10, Interval: time.Hour}
	r, err := s.Create("owe-snap")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	snaps := 0
	state := func() any { snaps++; return map[string]int{"n": snaps} }
	if err := r.Checkpoint(0, state, true); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 100; i++ {
		var err error
		if i%2 == 1 {
			err = r.Stage(i) // a running record
		} else {
			err = r.Owe(i, state) // a result
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if snaps < 1+100/10-1 {
		t.Errorf("%d snapshots in 100 changes with Every 10, want about 10", snaps)
	}
	b, err := os.ReadFile(filepath.Join(r.Root(), "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("\n")); n > 10 {
		t.Errorf("journal holds %d lines after 100 changes with Every 10, want at most 10", n)
	}
}
