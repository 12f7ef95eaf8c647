package store

import (
	"smith/source"

	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Read loads a run's state (the snapshot, then apply for each journal line)
// without taking its lock and without changing any file, so that status,
// graph and list work while another process drives the run. What it sees
// is every delta made durable so far.
func (s *Store) Read(runID string, state any, apply func(delta []byte) error) error {
	if !ValidRunID(runID) {
		return &source.Error{Code: source.EUsage, Msg: fmt.Sprintf("invalid run id %q", runID)}
	}
	root := filepath.Join(s.RunsDir(), runID)
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return &source.Error{Code: source.EStateNotFound, Msg: fmt.Sprintf("no run '%s' under %s", runID, s.Base)}
		}
		return fmt.Errorf("read run '%s': %w", runID, err)
	}
	r := &Run{id: runID, root: root}
	base, haveState, err := r.readState(state)
	if err != nil {
		return err
	}
	deltas, seqs, err := r.readJournalIfAny(base)
	if err != nil {
		return err
	}
	if !haveState && len(deltas) == 0 {
		return corrupt(runID, errors.New("run has no state"))
	}
	for i, d := range deltas {
		if err := apply(d); err != nil {
			return corrupt(runID, fmt.Errorf("journal entry %d: %w", seqs[i], err))
		}
	}
	return nil
}

// readJournalIfAny is readJournal for a journal that may not exist.
func (r *Run) readJournalIfAny(base int64) ([][]byte, []int64, error) {
	if _, err := os.Stat(filepath.Join(r.root, journalFile)); errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	return r.readJournal(base)
}
