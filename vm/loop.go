package vm

import (
	"context"
	"fmt"
	"time"

	"smith/isa"
	"smith/source"
)

// loopBegin evaluates loop a's items and pushes its frame at iteration 0;
// with no items the loop completes at once and jumps to b (its dispatch).
func (m *Machine) loopBegin(ctx context.Context, a, next, b uint32) (uint32, error) {
	blk := &m.p.Blocks[a]
	if blk.Loop.Parallel > 1 && m.thr == nil {
		return m.parLoop(ctx, a, b)
	}
	if empty, err := m.openLoop(blk, a, PhaseBody); empty || err != nil {
		return b, err
	}
	return next, nil
}

// openLoop is the start of LOOP_BEGIN for loop block blk (index a), serial
// or parallel: the step counts, its items are read, its body reset and its
// start reported. A loop with no items completes at once (empty);
// otherwise its frame is pushed at iteration 0 and the block is entered in
// phase. err is the step's failure (already recorded) or the finish's.
func (m *Machine) openLoop(blk *isa.Block, a uint32, phase string) (empty bool, err error) {
	items, err := m.loopItems(blk)
	if err != nil {
		return true, m.failStep(blk, err)
	}
	var kept resumedLoop
	if m.resumeLoop != "" {
		if kept = m.takeResumeLoop(blk, items, phase); kept.threads != nil {
			if err := m.seedThreads(blk, len(items), kept.threads); err != nil {
				return true, err
			}
		}
	}
	m.reset(append([]string{blk.ID}, m.bodyAll[a]...))
	m.emit(evStepStarted(blk.ID, try{}))
	if len(items) == 0 {
		return true, m.done(blk, StepResult{Status: StepCompleted, Signal: SigSuccess, Visits: m.st.Visits[blk.ID]}, true,
			evStepCompleted(blk.ID, try{}, 0, 0))
	}
	started := m.now().Format(time.RFC3339Nano)
	m.setStep(blk.ID, StepResult{Status: StepRunning, Visits: m.st.Visits[blk.ID], StartedAt: started,
		Iterations: kept.records, IterationsTotal: kept.total})
	m.st.LoopStack = append(m.st.LoopStack, LoopFrame{Loop: blk.ID, Index: kept.index, Total: len(items), Items: items,
		Started: started})
	m.pushed = true
	if phase == PhaseParallel && kept.threads == nil {
		m.st.Threads = nil
	}
	m.enter(blk.ID, phase, m.st.Signal)
	return false, m.finish()
}

// loopItems evaluates a loop's items: a literal list, or one reference to
// a list.
func (m *Machine) loopItems(blk *isa.Block) ([]any, error) {
	v, err := m.tvalue(blockScope(blk), blk.Loop.Items)
	if err != nil {
		return nil, err
	}
	if tooDeep(v) {
		return nil, errTooDeep("for_each items of '" + blk.ID + "'")
	}
	items, ok := m.maskValue(v).([]any)
	if !ok {
		return nil, &source.Error{Code: source.EStepFailed, Msg: fmt.Sprintf("for_each items of '%s' is %s, not a list", blk.ID, render(v))}
	}
	return items, nil
}

// top returns the top loop frame, which must be loop blk's.
func (m *Machine) top(blk *isa.Block) (*LoopFrame, error) {
	n := len(m.st.LoopStack)
	if n == 0 || m.st.LoopStack[n-1].Loop != blk.ID {
		return nil, m.internal(fmt.Sprintf("loop '%s' is not the innermost loop", blk.ID))
	}
	return &m.st.LoopStack[n-1], nil
}

// loopNext closes the current iteration of loop a: with items left it
// starts the next and jumps to b (the body); else the loop completes and
// execution goes on at next.
func (m *Machine) loopNext(a, next, b uint32) (uint32, error) {
	blk := &m.p.Blocks[a]
	f, err := m.top(blk)
	if err != nil {
		return 0, err
	}
	m.closeIteration(blk, f, StepCompleted)
	if f.Index+1 < f.Total {
		f.Index++
		f.Last = ""
		m.reset(m.bodyAll[a])
		m.enter(blk.ID, PhaseBody, m.st.Signal)
		return b, m.finish()
	}
	return next, m.finishLoop(blk, StepCompleted, SigSuccess)
}

// loopEnd closes the current iteration of loop a with status, pops the
// loop and jumps to b with signal (LOOP_BREAK, LOOP_FAIL).
func (m *Machine) loopEnd(a, b uint32, status, signal string) (uint32, error) {
	blk := &m.p.Blocks[a]
	f, err := m.top(blk)
	if err != nil {
		return 0, err
	}
	m.closeIteration(blk, f, status)
	return b, m.finishLoop(blk, status, signal)
}

// closeIteration records the current iteration of f: the results of the
// body's steps, and the exit code, output and duration of the last one run.
func (m *Machine) closeIteration(blk *isa.Block, f *LoopFrame, status string) {
	rec := m.iterationRecord(blk, f, status)
	m.st.appendIteration(blk.ID, rec)
	m.d.Iteration = &IterationChange{Loop: blk.ID, Record: rec}
}

// iterationRecord is the record of the current iteration of f: the results
// of the body's steps, and the exit code, output and duration of the last
// one run.
func (m *Machine) iterationRecord(blk *isa.Block, f *LoopFrame, status string) Iteration {
	rec := Iteration{Index: f.Index, Status: status, Steps: map[string]*StepResult{}}
	if f.Index < len(f.Items) {
		rec.Item = f.Items[f.Index]
	}
	for _, s := range blk.Loop.Steps {
		id := m.p.Blocks[s].ID
		if r := m.st.Steps[id]; r != nil {
			rec.Steps[id] = r
			m.share(id)
		}
	}
	if last := m.st.Steps[f.Last]; f.Last != "" && last != nil {
		rec.ExitCode, rec.Output, rec.Duration = last.ExitCode, last.Output, last.Duration
	}
	return rec
}

// finishLoop pops loop blk's frame and records the loop's result.
func (m *Machine) finishLoop(blk *isa.Block, status, signal string) error {
	n := len(m.st.LoopStack)
	f := m.st.LoopStack[n-1]
	m.st.LoopStack = m.st.LoopStack[:n-1]
	dur := f.Elapsed
	if t, err := time.Parse(time.RFC3339Nano, f.Started); err == nil {
		dur = m.now().Sub(t).Seconds()
	}
	r := StepResult{Status: status, Duration: dur, Attempts: 1, Signal: signal, Visits: m.st.Visits[blk.ID], StartedAt: f.Started}
	// ${steps.Loop.output} is the last inner step's (docs/workflow-reference.md,
	// for_each); the loop's exit code says how the loop ended.
	if last := m.st.Steps[f.Last]; f.Last != "" && last != nil {
		r.Output = last.Output
	}
	if status == StepFailed {
		r.ExitCode = 1
		var e *StepError
		if last := m.st.Steps[f.Last]; last != nil {
			e = last.Error
		}
		r.Error = &StepError{Code: endCode(e), Message: fmt.Sprintf("iteration %d failed", f.Index)}
	}
	return m.done(blk, r, true, evOutcome(blk.ID, try{}, &r))
}

// endCode is the code of a loop or parallel step whose iteration or
// branch failed on error e: a timeout or a path escape stays what it is,
// so that a run ending on that failure exits as it would outside the loop
// (124, 3); any other failure is E_STEP_FAILED.
func endCode(e *StepError) string {
	if e != nil {
		switch source.Code(e.Code) {
		case source.ETimeout, source.EWaitTimeout, source.EPathEscape:
			return e.Code
		}
	}
	return string(source.EStepFailed)
}
