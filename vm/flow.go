package vm

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"smith/isa"
	"smith/lang"
	"smith/source"
	"smith/workers/step"
)

// dispatch returns the pc of the transition that table a selects for the
// signal register: the exact signal, SIGNAL:FAILURE for SIGNAL:TIMEOUT,
// then the default; none is E_NO_TRANSITION.
func (m *Machine) dispatch(a uint32) (uint32, error) {
	t := &m.p.Tables[a]
	sig := m.customFallback(t, m.st.Signal)
	if pc, ok := lookup(t, sig); ok {
		if m.cfg.Debug {
			how := ""
			if sig != m.st.Signal {
				how = " (as " + sig + ")"
			}
			m.debugf(&m.p.Blocks[t.Block], "transition for %s%s: %s", m.st.Signal, how, m.describe(pc))
		}
		return pc, nil
	}
	return 0, m.abort(source.ENoTransition, fmt.Sprintf("block '%s' has no transition for signal '%s'",
		m.p.Blocks[t.Block].ID, m.st.Signal))
}

// customFallback is the YAML rule for a custom signal (SIGNAL:APPROVED)
// that on.signals does not route: it follows success when the step's exit
// code was 0, else failure (CONTRACT 12.5). Manifests fall back to
// SIGNAL:FAIL_DEFAULT instead, so for them, as for every signal with an
// entry, the signal is returned as it is; but a manifest command worker,
// which is a process worker (its signals are SUCCESS, FAILURE and TIMEOUT)
// whose last stdout line may name a signal besides, follows the YAML rule
// when its block has no SIGNAL:FAIL_DEFAULT: a checked block that routes
// its process signals then always finds a transition.
func (m *Machine) customFallback(t *isa.Table, signal string) string {
	if yamlOutcome(signal) {
		return signal
	}
	if m.p.Format != "workflow" {
		blk := &m.p.Blocks[t.Block]
		if t.HasDefault || blk.Kind != isa.KindCommand || blk.Step == nil || !blk.Step.PayloadIO {
			return signal
		}
	}
	for _, e := range t.Entries {
		if e.Signal == signal {
			return signal
		}
	}
	if r := m.st.Steps[m.p.Blocks[t.Block].ID]; r != nil && r.ExitCode == 0 {
		return SigSuccess
	}
	return SigFailure
}

// yamlOutcome reports whether signal is one of YAML's own outcomes.
func yamlOutcome(signal string) bool {
	switch signal {
	case SigSuccess, SigFailure, SigTimeout, SigSkipped, SigValidationFail, SigMaxVisits, SigFailDefault:
		return true
	}
	return false
}

// lookup selects a transition of t for signal.
func lookup(t *isa.Table, signal string) (uint32, bool) {
	return lang.Dispatch(signal, func(s string) (uint32, bool) {
		for _, e := range t.Entries {
			if e.Signal == s {
				return e.PC, true
			}
		}
		if s == SigFailDefault {
			return t.Default, t.HasDefault
		}
		return 0, false
	})
}

// when evaluates block a's condition: true goes on at next; false records
// the block skipped and jumps to b (its dispatch) with SIGNAL:SKIPPED; an
// error fails the step.
func (m *Machine) when(a, next, b uint32) (uint32, error) {
	blk := &m.p.Blocks[a]
	ok, err := m.cond(blockScope(blk), blk.When)
	if m.cfg.Debug && err == nil {
		m.debugf(blk, "condition (when) is %t", ok)
	}
	switch {
	case err != nil:
		return b, m.failStep(blk, err)
	case ok:
		return next, nil
	}
	m.executed.Add(1)
	return b, m.done(blk, StepResult{Status: StepSkipped, Signal: SigSkipped, Visits: m.st.Visits[blk.ID]}, false, evStepSkipped(blk.ID))
}

// visit counts a visit of block a; past its max_visits it jumps to b (its
// dispatch) with SIGNAL:MAX_VISITS. The count is saved with the block's
// next change.
func (m *Machine) visit(a, next, b uint32) (uint32, error) {
	blk := &m.p.Blocks[a]
	n := m.st.Visits[blk.ID]
	if m.revisit == blk.ID {
		m.revisit = "" // the visit a crash cut off, counted already
	} else {
		n++
		m.st.Visits[blk.ID] = n
		m.visitChg = VisitChange{Block: blk.ID, Count: n}
		m.d.Visit = &m.visitChg
	}
	if blk.MaxVisits <= 0 || n <= blk.MaxVisits {
		return next, nil
	}
	m.enter(blk.ID, PhaseDispatch, SigMaxVisits)
	return b, m.finish(evStepMaxVisits(blk.ID, blk.MaxVisits))
}

// failStep records block blk as failed before it ran (an unresolved
// reference, a bad condition, items that are no list) and sets
// SIGNAL:FAILURE for its dispatch.
func (m *Machine) failStep(blk *isa.Block, err error) error {
	se := stepErrorOf(err, m.mask.String)
	return m.done(blk, StepResult{Status: StepFailed, Error: se, Signal: SigFailure, Visits: m.st.Visits[blk.ID]}, false,
		evStepFailed(blk.ID, try{}, SigFailure, nil, 0, se.Code, se.Message))
}

// setContext merges block a's values into the context.
func (m *Machine) setContext(a uint32) error {
	blk := &m.p.Blocks[a]
	sc := blockScope(blk)
	c := cloneMap(m.st.Context)
	for _, f := range blk.Set {
		v, err := m.tvalue(sc, f.Val)
		if err != nil {
			return m.failStep(blk, err)
		}
		SetPath(c, f.Key, m.maskValue(v))
	}
	if tooDeep(c) {
		return m.failStep(blk, errTooDeep("the context after set_context"))
	}
	m.setContextMap(c)
	return m.done(blk, StepResult{Status: StepCompleted, Signal: SigSuccess, Attempts: 1, Visits: m.st.Visits[blk.ID]}, true,
		evStepStarted(blk.ID, try{}), evStepCompleted(blk.ID, try{}, 0, 0))
}

// cloneMap copies the maps of a context (lists and scalars are never
// changed in place, so they are shared).
func cloneMap(c map[string]any) map[string]any {
	out := make(map[string]any, len(c)+1)
	for k, v := range c {
		if mv, ok := v.(map[string]any); ok {
			v = cloneMap(mv)
		}
		out[k] = v
	}
	return out
}

// SetPath sets a dotted context key ("a.b.c") as set_context does,
// creating (or replacing non-map values with) maps on the way; cmd uses it
// for --context a.b=v, so that it satisfies ${context.a.b}.
func SetPath(c map[string]any, key string, v any) {
	parts := strings.Split(key, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := c[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			c[p] = next
		}
		c = next
	}
	c[parts[len(parts)-1]] = v
}

// call pushes a return frame and goes to node a's entry block; b is the pc
// RETURN goes back to. A CALL with source.MaxCallDepth frames on the stack
// already ends the run with E_LIMIT: a node that calls itself (or a cycle
// of nodes that call each other) with no RETURN on its way would otherwise
// grow the stack, and state.json with it, until --max-steps.
func (m *Machine) call(a, b uint32) (uint32, error) {
	node := &m.p.Nodes[a]
	if n := len(m.st.ReturnStack); n >= source.MaxCallDepth {
		from := m.st.CurrentStep
		if blk := m.block(from); blk != nil {
			from = fmt.Sprintf("'%s' of node '%s'", blk.ID, m.p.Nodes[blk.Node].ID)
		} else {
			from = "'" + from + "'"
		}
		return 0, m.abort(source.ELimit, fmt.Sprintf("block %s calls node '%s' with %d CALLs not returned yet, the limit (%d): "+
			"a RETURN is missing on the way out of node '%s', or the transition meant JUMP:, not CALL:",
			from, node.ID, n, source.MaxCallDepth, node.ID))
	}
	ret, ok := m.entryAt[b]
	if !ok {
		return 0, m.internal(fmt.Sprintf("CALL return pc %04d is no block's start or dispatch", b))
	}
	f := ReturnFrame{ReturnBlock: m.p.Blocks[ret.block].ID, Node: node.ID, CallBlock: m.st.CurrentStep}
	if ret.phase != PhaseStart {
		f.ReturnPhase = ret.phase
	}
	if !node.Inherit {
		f.Saved, f.SavedPayload = true, m.st.Payload
		m.replacePayload([]step.Segment{})
	}
	m.st.ReturnStack = append(slices.Clip(m.st.ReturnStack), f)
	m.d.SetReturn, m.d.ReturnStack = true, m.st.ReturnStack
	entry := &m.p.Blocks[node.Entry]
	m.enter(entry.ID, PhaseStart, m.st.Signal)
	return entry.Start, m.finish()
}

// ret pops a return frame and goes back to its block (restoring a saved
// payload plus the callee's last segment); with an empty stack the run
// completes.
func (m *Machine) ret() (uint32, error) {
	n := len(m.st.ReturnStack)
	if n == 0 {
		return 0, m.end()
	}
	f := m.st.ReturnStack[n-1]
	m.st.ReturnStack = slices.Clone(m.st.ReturnStack[:n-1])
	m.d.SetReturn, m.d.ReturnStack = true, m.st.ReturnStack
	if f.Saved {
		p := slices.Clone(f.SavedPayload)
		if k := len(m.st.Payload); k > 0 {
			p = append(p, m.st.Payload[k-1])
		}
		if p == nil {
			p = []step.Segment{}
		}
		m.replacePayload(p)
	}
	blk := m.block(f.ReturnBlock)
	if f.ReturnPhase == PhaseDispatch {
		m.enter(blk.ID, PhaseDispatch, m.st.Signal)
		return blk.Dispatch, m.finish()
	}
	m.enter(blk.ID, PhaseStart, m.st.Signal)
	return blk.Start, m.finish()
}

// halt saves the state halted at block a and stops the run.
func (m *Machine) halt(a uint32) error {
	blk := &m.p.Blocks[a]
	if m.thr != nil {
		return m.internal("HALT_AND_FLAG inside a thread")
	}
	st := m.st
	st.Status, st.IsHalted, st.HaltedBlock = StatusHalted, true, blk.ID
	m.enter(blk.ID, PhaseStart, st.Signal)
	if err := m.finish(evRunHalted(blk.ID)); err != nil {
		return err
	}
	return fmt.Errorf("run %s halted at '%s': %w", st.RunID, blk.ID, ErrHalted)
}

// end completes the run.
func (m *Machine) end() error {
	if m.thr != nil {
		return m.internal("END inside a thread")
	}
	m.st.Status, m.st.EndedAt = StatusCompleted, m.now().Format(time.RFC3339)
	if err := m.finish(evRunCompleted()); err != nil {
		return err
	}
	return errEnd
}

// endStep is END_STEP: the run ends with block a's outcome (a program
// made by isa's Only, smithvm run-step).
func (m *Machine) endStep(a uint32) error {
	if m.st.Signal == SigSuccess || m.st.Signal == SigSkipped {
		return m.end()
	}
	return m.failRun(fmt.Sprintf("step '%s' ended with %s", m.p.Blocks[a].ID, m.st.Signal))
}

// failTemplate is FAIL: it ends the run in failure with template a of the
// Templates pool substituted in the scope of the block whose transition led
// here (the current step: the dispatching block, with the loop variables of
// the current iteration when it is in a loop body). A reference that cannot
// be resolved does not hide the failure: the message is then the
// template's source text and the error in parentheses. Secrets are masked.
func (m *Machine) failTemplate(a uint32) error {
	t := m.p.Templates[a]
	sc := scope{}
	if blk := m.block(m.st.CurrentStep); blk != nil {
		sc = blockScope(blk)
	}
	msg, err := m.subst(sc, t)
	if err != nil {
		msg = t.Source() + " (" + err.Error() + ")"
	}
	return m.fail(m.mask.String(msg))
}

// fail ends the run in failure with msg: E_TIMEOUT when the signal is
// SIGNAL:TIMEOUT, E_PATH_ESCAPE when the current step failed with a path
// security violation (CONTRACT 2: the run exits 3 if it ends there), else
// E_STEP_FAILED. The current step is re-run on resume.
func (m *Machine) fail(msg string) error {
	ev := evFailAction(m.st.CurrentStep, msg)
	if r := m.st.Steps[m.st.CurrentStep]; r != nil && r.Attempts > 1 {
		ev.AttemptID = r.Attempts // the step's last try, as its outcome's event says
	}
	m.emit(ev)
	if m.thr != nil {
		// _error and error: end the thread in failure (CONTRACT 12.3).
		// A timeout or a path escape stays what the thread failed on.
		return m.threadEnd(ThreadFailed, &StepError{Code: string(m.failCode()), Message: msg})
	}
	return m.failRun(msg)
}

// failRun ends the run in failure after the current step's outcome, with
// failCode. The step is re-run on resume.
func (m *Machine) failRun(msg string) error {
	m.st.Phase = PhaseStart
	return m.abort(m.failCode(), msg)
}

// failCode is the code of a failure after the current step's outcome:
// E_TIMEOUT when the signal is SIGNAL:TIMEOUT, the step's E_PATH_ESCAPE,
// E_TIMEOUT or E_WAIT_TIMEOUT (a loop's or parallel step's whose iteration
// or branch failed so: endCode), else E_STEP_FAILED.
func (m *Machine) failCode() source.Code {
	if m.st.Signal == SigTimeout {
		return source.ETimeout
	}
	if r := m.st.Steps[m.st.CurrentStep]; r != nil {
		return source.Code(endCode(r.Error))
	}
	return source.EStepFailed
}
