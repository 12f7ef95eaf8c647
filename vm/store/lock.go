package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"smith/manifest/source"
)

// lockRun opens RUN_ROOT/lock and takes an exclusive flock on it without
// waiting, then writes our pid into it. flock locks belong to the open file
// description, so a second open of the same file fails to lock even within
// one process, and the kernel drops the lock when the process dies.
func lockRun(id, root string) (*os.File, error) {
	path := filepath.Join(root, "lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock of run '%s': %w", id, err)
	}
	if err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			msg := "run '" + id + "' is being driven by another smithvm process"
			if b, rerr := os.ReadFile(path); rerr == nil {
				if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil && pid > 0 {
					msg += " (pid " + strconv.Itoa(pid) + ")"
				}
			}
			return nil, &Error{Code: source.ERunLocked, Msg: msg}
		}
		return nil, fmt.Errorf("lock run '%s': %w", id, err)
	}
	pid := []byte(strconv.Itoa(os.Getpid()) + "\n")
	if err := f.Truncate(0); err != nil {
		unlock(f)
		return nil, fmt.Errorf("write lock of run '%s': %w", id, err)
	}
	if _, err := f.WriteAt(pid, 0); err != nil {
		unlock(f)
		return nil, fmt.Errorf("write lock of run '%s': %w", id, err)
	}
	return f, nil
}

// unlock releases the lock taken by lockRun and closes its file.
func unlock(f *os.File) error {
	uerr := flock(f, syscall.LOCK_UN)
	cerr := f.Close()
	if uerr != nil {
		return fmt.Errorf("unlock %s: %w", f.Name(), uerr)
	}
	if cerr != nil {
		return fmt.Errorf("close %s: %w", f.Name(), cerr)
	}
	return nil
}

// flock calls flock(2), retrying on EINTR.
func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}
