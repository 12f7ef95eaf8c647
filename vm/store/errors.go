package store

import (
	"errors"
	"fmt"
	"syscall"

	"smith/source"
)

// The store's errors are *source.Error values with code EUsage,
// EStateNotFound, EStateCorrupt, EStateIO, ERunLocked or ELimit (CONTRACT section 11).

// corrupt returns the EStateCorrupt error of run id with cause err.
func corrupt(id string, err error) *source.Error {
	return &source.Error{Code: source.EStateCorrupt, Msg: "state of run '" + id + "' is corrupt", Err: err, Hint: CorruptHint}
}

// CorruptHint says what to do about a corrupt state.
const CorruptHint = "nothing was changed: restore RUN_ROOT/state.json (and journal.jsonl) from a backup, or start the workflow again with smithvm run"

// unreadable returns the error of run id's state file that could not be
// opened or read (what: "open journal.jsonl", "read state.json", ...):
// E_STATE_IO when the machine refused (too many open files, permissions, a
// full or read-only disk, an I/O error), as the state may be whole and
// nothing should tell the user to restore it; E_STATE_CORRUPT otherwise (a
// directory or a dangling link in the file's place).
func unreadable(id, what string, err error) *source.Error {
	for _, e := range machineRefusals {
		if errors.Is(err, e) {
			return &source.Error{Code: source.EStateIO, Msg: "cannot " + what + " of run '" + id + "'", Err: err}
		}
	}
	return corrupt(id, fmt.Errorf("%s: %w", what, err))
}

// machineRefusals are the errors of a file operation that say nothing
// about the file's content.
var machineRefusals = []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOMEM, syscall.EACCES, syscall.EPERM,
	syscall.EROFS, syscall.ENOSPC, syscall.EDQUOT, syscall.EIO, syscall.EFBIG, syscall.EAGAIN}
