package vm

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strconv"

	"smith/isa"
)

// Resume of a failed run that stopped at a for_each (the loop failed in
// one of its iterations) continues the loop at its failed iteration: the
// iterations that completed are not run again and their records are kept
// as they were. A crash is resumed by the loop's frame and threads
// instead (reentry); this is only the path of a run whose status is
// failed.
//
// The kept iterations are matched by index and item: the resumed run
// re-evaluates the loop's items (the workflow may have been edited), and
// when an item of a completed iteration is no longer the same at its index
// (or the list is now shorter than it), no iteration is kept and the loop
// runs from its first item, as a loop entered afresh.

// resumedLoop is what a resumed loop keeps: for a serial loop the records
// before the failed iteration (records, total) and the index it continues
// at; for a parallel one the records of the iterations that completed, as
// threads that ended (threads).
type resumedLoop struct {
	records []Iteration
	total   int
	index   int
	threads []Iteration
}

// markResumeLoop sets resumeLoop when the run being resumed failed at a
// loop one of whose iterations failed.
func (m *Machine) markResumeLoop() {
	st := m.st
	if st.Status != StatusFailed || st.Phase != PhaseStart && st.Phase != "" {
		return
	}
	b := m.block(st.CurrentStep)
	r := st.Steps[st.CurrentStep]
	if b == nil || b.Loop == nil || r == nil || r.Status != StepFailed || len(r.Iterations) == 0 {
		return
	}
	m.resumeLoop = st.CurrentStep
}

// takeResumeLoop clears resumeLoop and, when it is loop blk (entered in
// phase with items), returns the iterations of its failed run to keep.
func (m *Machine) takeResumeLoop(blk *isa.Block, items []any, phase string) resumedLoop {
	id := m.resumeLoop
	m.resumeLoop = ""
	prev := m.st.Steps[blk.ID]
	if id != blk.ID || prev == nil || prev.Status != StepFailed {
		return resumedLoop{}
	}
	var done []Iteration
	for _, rec := range prev.Iterations {
		if rec.Status != StepCompleted {
			continue
		}
		if rec.Index >= len(items) || !sameItem(rec.Item, items[rec.Index]) {
			return resumedLoop{} // the workflow changed the items: run them all
		}
		done = append(done, rec)
	}
	if phase == PhaseParallel {
		// Under isolation the failed join merged their branches into the
		// run's branch already and removed them: the join of the resumed
		// loop finds no branch of theirs, which is nothing to merge.
		return resumedLoop{threads: done}
	}
	// Serial: the last record is the failed iteration, every one before
	// it completed (only the last 100 are inline; the total counts all).
	last := prev.Iterations[len(prev.Iterations)-1]
	if last.Status != StepFailed || last.Index >= len(items) || last.Index != prev.IterationsTotal-1 ||
		len(done) != len(prev.Iterations)-1 {
		return resumedLoop{}
	}
	return resumedLoop{records: slices.Clip(done), total: last.Index, index: last.Index}
}

// sameItem reports whether a loop item recorded in the state (decoded from
// JSON) is the same as one evaluated now.
func sameItem(a, b any) bool {
	ja, erra := json.Marshal(a)
	jb, errb := json.Marshal(b)
	return erra == nil && errb == nil && bytes.Equal(ja, jb)
}

// seedThreads records the iterations recs of parallel loop blk (of total
// items) as threads that completed, one saved change each, before the
// loop's first change: the loop then runs them no more, a resume after a
// crash neither (the run is still failed until that change, and its
// resume seeds them again), and the join merges their records in index
// order.
func (m *Machine) seedThreads(blk *isa.Block, total int, recs []Iteration) error {
	st := m.st
	st.Threads = nil
	for i := range recs {
		rec := recs[i]
		stack := append(slices.Clone(st.LoopStack), LoopFrame{Loop: blk.ID, Index: rec.Index, Total: total})
		d := &Delta{Thread: strconv.Itoa(rec.Index), Status: ThreadCompleted, CurrentStep: blk.ID,
			Phase: PhaseDispatch, LoopStack: loopStackDelta(nil, stack, false), ThreadRecord: &rec,
			Seq: st.Seq + 1, EventSeq: st.EventSeq}
		for _, name := range slices.Sorted(maps.Keys(rec.Steps)) {
			d.Steps = append(d.Steps, StepChange{Name: name, Result: *rec.Steps[name]})
		}
		st.Apply(d)
		if err := m.save(d, st); err != nil {
			return err
		}
	}
	return nil
}
