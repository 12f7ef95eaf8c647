package store

import (
	"encoding/json"

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
	force := d.Start != nil || (d.Thread == "" && d.Status != "" && d.Status != vm.StatusRunning)
	if d.Deferred && !force {
		return r.Stage(d) // synced with the step's result (vm.Delta.Deferred)
	}
	return r.Checkpoint(d, func() any { return st }, force)
}
