package vm

import "maps"

// StepInterrupted is the status a step (or a thread of a parallel step)
// shows when the run stopped while it ran: an interrupt, a stop, a crash.
// It is never saved: the state keeps such a step "running", which is what
// resume reads to run it again (State.Shown).
const StepInterrupted = "interrupted"

// Shown returns s as status, status --json, the viewer and the graph show
// it: a step or thread that s still records running reads interrupted
// when the run no longer runs (its status is not running, or cutOff: it
// says running but no process drives it, a SIGKILL or a crash cut it
// off). Such a step runs again on resume. s itself is not changed; the
// result shares every part of s that needs no change, and is s when none
// does.
func (s *State) Shown(cutOff bool) *State {
	if s.Status == StatusRunning && !cutOff {
		return s
	}
	steps, stepsChanged := shownSteps(s.Steps)
	threads := s.Threads
	threadsChanged := false
	for k, t := range s.Threads {
		ts, changed := shownSteps(t.Steps)
		if !changed && t.Status != StatusRunning {
			continue
		}
		if !threadsChanged {
			threads, threadsChanged = maps.Clone(s.Threads), true
		}
		c := *t
		c.Steps = ts
		if c.Status == StatusRunning {
			c.Status = StepInterrupted
		}
		threads[k] = &c
	}
	if !stepsChanged && !threadsChanged {
		return s
	}
	c := *s
	c.Steps, c.Threads = steps, threads
	return &c
}

// shownSteps returns steps with each running result read as interrupted
// (a copy when one is), and whether one was.
func shownSteps(steps map[string]*StepResult) (map[string]*StepResult, bool) {
	var out map[string]*StepResult
	for n, r := range steps {
		if r == nil || r.Status != StepRunning {
			continue
		}
		if out == nil {
			out = maps.Clone(steps)
		}
		c := *r
		c.Status = StepInterrupted
		out[n] = &c
	}
	if out == nil {
		return steps, false
	}
	return out, true
}
