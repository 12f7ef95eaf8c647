package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"smith/vm"
)

// stopFile is the stop request of a run: `smithvm stop` writes it, then
// signals the driver (Driver's pid), which reads it (StopRequested).
const stopFile = "stop"

// Driver reports whether run id is being driven (its lock is held) and
// by which process (the pid written in the lock, 0 when unknown). It
// takes no lock that lasts: a shared flock tried and dropped at once.
func (s *Store) Driver(id string) (pid int, running bool, err error) {
	if !ValidRunID(id) {
		return 0, false, invalidID(id)
	}
	path := filepath.Join(s.root(id), "lock")
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read lock of run '%s': %w", id, err)
	}
	defer f.Close()
	err = flock(f, syscall.LOCK_SH|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return holderPid(path), true, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read lock of run '%s': %w", id, err)
	}
	flock(f, syscall.LOCK_UN)
	return 0, false, nil
}

// CutOffNote says that a run whose state says running has no smithvm
// process driving it: a crash or a SIGKILL cut it off.
const CutOffNote = "cut off: no smithvm process drives it"

// CutOff reports whether run id, whose state says status, was cut off: it
// says running, but no process holds its lock. An unreadable lock counts
// as held: nothing is claimed that is not known. status, list and the
// viewer all ask this.
func (s *Store) CutOff(id, status string) bool {
	if status != vm.StatusRunning {
		return false
	}
	_, running, err := s.Driver(id)
	return !running && err == nil
}

// RequestStop records a request to stop run id (RUN_ROOT/stop): its
// driver, once signalled, sees it with StopRequested and ends the run as
// an interrupt would.
func (s *Store) RequestStop(id string) error {
	if !ValidRunID(id) {
		return invalidID(id)
	}
	if err := os.WriteFile(filepath.Join(s.root(id), stopFile), []byte("stop\n"), 0o644); err != nil {
		return fmt.Errorf("request stop of run '%s': %w", id, err)
	}
	return nil
}

// StopRequested reports whether a stop of r was requested since it was
// opened.
func (r *Run) StopRequested() bool {
	_, err := os.Lstat(filepath.Join(r.root, stopFile))
	return err == nil
}

// clearStop removes a stop request left from an earlier driver.
func clearStop(root string) error {
	if err := os.Remove(filepath.Join(root, stopFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
