package store

import "smith/source"

// The store's errors are *source.Error values with code EUsage,
// EStateNotFound, EStateCorrupt, ERunLocked or ELimit (CONTRACT section 11).

// corrupt returns the EStateCorrupt error of run id with cause err.
func corrupt(id string, err error) *source.Error {
	return &source.Error{Code: source.EStateCorrupt, Msg: "state of run '" + id + "' is corrupt", Err: err, Hint: CorruptHint}
}

// CorruptHint says what to do about a corrupt state.
const CorruptHint = "nothing was changed: restore RUN_ROOT/state.json (and journal.jsonl) from a backup, or start the workflow again with smithvm run"
