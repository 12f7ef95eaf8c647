package store

import (
	"encoding/json"
	"path/filepath"
	"time"

	"smith/source"
	"smith/vm"
)

// This file is the typed side of the store: it turns the snapshot and the
// journal into a *vm.State and back, and holds the snapshot policy, so
// that no command replays a journal by hand.

// ReadState reads run id's state without taking its lock: the snapshot
// plus the journal (Read), as `smithvm status` and the viewer show it.
func (s *Store) ReadState(id string) (*vm.State, error) {
	var st vm.State
	if err := s.Read(id, &st, applyTo(&st)); err != nil {
		return nil, err
	}
	return &st, nil
}

// State rebuilds the state of the locked run r to continue it: the
// snapshot plus the journal (Load). A state that cannot be continued
// (vm.State.Problem) is E_STATE_CORRUPT.
func (r *Run) State() (*vm.State, error) {
	var st vm.State
	if err := r.Load(&st, applyTo(&st)); err != nil {
		return nil, err
	}
	if err := Problem(r.ID(), &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// Problem is the E_STATE_CORRUPT error of a state of run id that cannot be
// continued, or nil.
func Problem(id string, st *vm.State) error {
	if p := st.Problem(id); p != "" {
		return &source.Error{Code: source.EStateCorrupt, Msg: "state of run '" + id + "' is corrupt: " + p, Hint: CorruptHint}
	}
	return nil
}

// applyTo returns the journal replay of st: each line is one vm.Delta.
func applyTo(st *vm.State) func(line []byte) error {
	return func(line []byte) error {
		var d vm.Delta
		if err := json.Unmarshal(line, &d); err != nil {
			return err
		}
		st.Apply(&d)
		return nil
	}
}

// Save makes the change d (of the whole state st) durable: its loop
// iteration records go to iterations/, then the delta to the journal. The
// snapshot policy: the first change of a run and every end of one are
// snapshotted at once, so state.json exists from the start and is current
// at the end; in between the journal carries each step (flat cost per
// step) and Policy decides.
func (r *Run) Save(d *vm.Delta, st *vm.State) error {
	if d.Iteration != nil {
		if err := r.AppendIteration(d.Iteration.Loop, d.Iteration.Record); err != nil {
			return err
		}
	}
	for _, it := range d.Iterations {
		if err := r.AppendIteration(it.Loop, it.Record); err != nil {
			return err
		}
	}
	// The first change of a run and every end of one are snapshotted at
	// once, so state.json exists from the start and is current at the end;
	// in between the journal carries each step (flat cost per step). A
	// thread's status (a parallel iteration or branch ending) is not the
	// run's: it goes to the journal like any step.
	force := forced(d)
	defer r.indexStatus(d, st)
	if d.SyncWithNext && !force {
		// A step's result that the next change's sync makes durable
		// (vm.Delta.SyncWithNext): the next step's running record, or the
		// run's end, whose snapshot holds it.
		return r.Owe(d, func() any { return st })
	}
	if d.Deferred && !force {
		// A step's running record: synced with the step's result
		// (vm.Delta.Deferred), and brought into state.json if the step
		// is still running after a while (armCatchUp).
		if err := r.Stage(d); err != nil {
			return err
		}
		r.armCatchUp()
		return nil
	}
	return r.Checkpoint(d, func() any { return st }, force)
}

// forced reports whether change d is snapshotted at once (Save).
func forced(d *vm.Delta) bool {
	return d.Start != nil || (d.Thread == "" && d.Status != "" && d.Status != vm.StatusRunning)
}

// SaveLater is Save for a change whose fdatasync may be shared with other
// changes (vm.Config.CheckpointLater: a parallel thread's): it writes d as
// Save does but returns before the journal is synced, with wait, which
// returns once d survives a crash. Calls of SaveLater keep their order in
// the journal; their waits may run concurrently, and one fdatasync then
// covers several changes (SyncThrough).
func (r *Run) SaveLater(d *vm.Delta, st *vm.State) (wait func() error, err error) {
	if d.Deferred || d.SyncWithNext || d.Iteration != nil || len(d.Iterations) > 0 || forced(d) {
		return noWait, r.Save(d, st)
	}
	seq, err := r.CheckpointLater(d, func() any { return st }, false)
	if err != nil {
		return nil, err
	}
	r.indexStatus(d, st)
	return func() error { return r.SyncThrough(seq) }, nil
}

func noWait() error { return nil }

// armCatchUp makes state.json current while a step runs. Readers that
// replay the journal (status, list, the viewer) see a running step at
// once; state.json itself, read by other tools, would name the previous
// snapshot's step for the whole of a long step. So when no change
// follows a step's running record for Policy.CatchUp, a snapshot is
// written from what is on disk (state.json plus the journal, replayed):
// no step pays for it unless it runs that long, and not the in-memory
// state, which the VM owns, so nothing is shared with its goroutine. The
// wait grows to 20 times the last catch-up's cost, so a very large state
// costs a long step at most about 5% of its time.
func (r *Run) armCatchUp() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lock == nil {
		return
	}
	r.catchUpSeq = r.seq
	wait := max(r.policy.CatchUp, 20*r.catchUpCost)
	if r.catchUp == nil {
		r.catchUp = time.AfterFunc(wait, r.runCatchUp)
		return
	}
	r.catchUp.Reset(wait)
}

// runCatchUp writes the snapshot armCatchUp asked for, unless the run
// changed since (a later delta: its own checkpoint and snapshot policy
// take over) or is closed. A failure leaves state.json as it was: the
// journal still holds every delta, durably or to be synced with the
// step's result as before.
func (r *Run) runCatchUp() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lock == nil || !r.loaded || r.seq != r.catchUpSeq || r.since == 0 {
		return
	}
	start := time.Now()
	var st vm.State
	base, _, err := r.readState(&st)
	if err != nil {
		return
	}
	deltas, seqs, err := r.readJournal(base)
	if err != nil || len(seqs) == 0 || seqs[len(seqs)-1] != r.seq {
		return
	}
	apply := applyTo(&st)
	for _, d := range deltas {
		if apply(d) != nil {
			return
		}
	}
	if r.writeSnapshot(&st) == nil {
		r.catchUpCost = time.Since(start)
	}
}

// indexStatus records the run in the index of runs (index.go) when d
// changed its status (its start, a resume, its end), after the snapshot
// of that change, so the line matches state.json as it is now.
func (r *Run) indexStatus(d *vm.Delta, st *vm.State) {
	if d.Thread != "" || d.Status == "" {
		return
	}
	r.mu.Lock()
	changed := r.indexed != d.Status && r.lock != nil
	r.indexed = d.Status
	r.mu.Unlock()
	if !changed {
		return
	}
	sum := Summary{RunID: r.id, WorkflowName: st.WorkflowName, Status: st.Status, StartedAt: st.StartedAt, EndedAt: st.EndedAt, CurrentStep: st.CurrentStep}
	if res := st.Steps[st.CurrentStep]; res != nil && res.Status == vm.StepRunning {
		sum.StepStartedAt = res.StartedAt
	}
	runs := filepath.Dir(r.root)
	appendIndex(filepath.Join(filepath.Dir(runs), indexFile), filepath.Join(r.root, stateFile), sum)
}
