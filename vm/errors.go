package vm

import (
	"errors"
	"strings"

	"smith/source"
)

// ErrHalted is wrapped by the error Run and Resume return when a
// HALT_AND_FLAG stopped the run: the state is saved with status halted and
// the caller exits with status 4 (source.ExitHalted).
var ErrHalted = errors.New("run halted awaiting resume")

// ExitStatus is the process exit status of the error a run, a resume or
// a load ended with (CONTRACT 11), the one mapping of every engine: 0 for
// none, 4 for a halt, a coded error's status, the highest status of a
// diagnostic list, and 1 (source.ExitExec) for anything else.
func ExitStatus(err error) int {
	if err == nil {
		return 0
	}
	if errors.Is(err, ErrHalted) {
		return source.ExitHalted
	}
	var c source.Coded
	if errors.As(err, &c) {
		return c.ErrCode().ExitStatus()
	}
	if ds := source.AsDiagnostics(err); ds != nil {
		return ds.ExitStatus()
	}
	return source.ExitExec
}

// A RuntimeError ends a run: a failure, a missing transition, the step
// budget, a cancellation, a bad program or state. Error returns Msg.
type RuntimeError struct {
	Code source.Code
	Msg  string
	// Pos is the source position of the failing instruction (zero when
	// none).
	Pos source.Pos
	// Traceback lists the CALL sites on the return stack, outermost first.
	Traceback []string
	// Err is a wrapped cause (ErrHalted for a halt), or nil.
	Err error
}

// Error returns the message.
func (e *RuntimeError) Error() string { return e.Msg }

// ErrCode returns the code.
func (e *RuntimeError) ErrCode() source.Code { return e.Code }

// Unwrap returns the wrapped cause.
func (e *RuntimeError) Unwrap() error { return e.Err }

// stepErrorOf returns the code and message of err for a StepResult; an
// error without a code is E_STEP_FAILED.
func stepErrorOf(err error, mask func(string) string) *StepError {
	if err == nil {
		return nil
	}
	return &StepError{Code: string(source.CodeOf(err, source.EStepFailed)), Message: mask(err.Error())}
}

// atPos is the message of a failed step or run with the source position of
// the failing instruction appended, "... (at flow.yaml:12:5)", so the
// console line and the event's message name where in the workflow it
// failed (docs/diagnostics.md). Other events, a step failure that its exit
// code says all about, and an unknown position leave the message as is.
func atPos(e *Event, p source.Pos) string {
	if (e.Kind != EvStepFailed && e.Kind != EvRunFailed) || e.Msg == "" || !p.IsValid() {
		return e.Msg
	}
	return strings.TrimRight(strings.TrimSpace(e.Msg), ".") + " (at " + p.String() + ")"
}
