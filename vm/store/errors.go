package store

import "smith/source"

// An Error is an error of the store that a user can see. Its Code maps to
// the exit status in CONTRACT section 11 (all of them exit 2).
type Error struct {
	// Code is EUsage, EStateNotFound, EStateCorrupt or ERunLocked.
	Code source.Code
	// Msg says what is wrong, lowercase, with names in single quotes.
	Msg string
	// Err is the underlying cause, or nil.
	Err error
	// Hint says what to do, or "".
	Hint string
}

// Error returns Msg, followed by the cause and the hint when there are.
func (e *Error) Error() string {
	msg := e.Msg
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

// ErrCode returns the error's code; *Error implements source.Coded.
func (e *Error) ErrCode() source.Code { return e.Code }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// corrupt returns the EStateCorrupt error of run id with cause err.
func corrupt(id string, err error) *Error {
	return &Error{Code: source.EStateCorrupt, Msg: "state of run '" + id + "' is corrupt", Err: err, Hint: CorruptHint}
}

// CorruptHint says what to do about a corrupt state.
const CorruptHint = "nothing was changed: restore RUN_ROOT/state.json (and journal.jsonl) from a backup, or start the workflow again with smithvm run"
