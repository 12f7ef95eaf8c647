package vm

import "fmt"

// Problem says what makes s, loaded from the state of run runID, unusable
// ("" when nothing): a state must name its run, workflow, status, current
// step and phase. A damaged state.json that still parses as JSON (an empty
// object, a hand edit) is refused before anything reads or rewrites it.
func (s *State) Problem(runID string) string {
	switch {
	case s.RunID == "":
		return "it has no run_id"
	case s.RunID != runID:
		return fmt.Sprintf("its run_id is '%s', not '%s'", s.RunID, runID)
	case s.WorkflowPath == "":
		return "it has no workflow_path"
	case s.StartedAt == "":
		return "it has no started_at"
	case s.CurrentStep == "":
		return "it has no current_step"
	}
	switch s.Status {
	case StatusRunning, StatusCompleted, StatusFailed, StatusHalted, StatusInterrupted:
	default:
		return fmt.Sprintf("its status '%s' is not running, completed, failed, halted or interrupted", s.Status)
	}
	switch s.Phase {
	case PhaseStart, PhaseDispatch, PhaseBody, PhaseParallel, "":
	default:
		return fmt.Sprintf("its phase '%s' is not start, dispatch, body or parallel", s.Phase)
	}
	return ""
}
