package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"smith/source"
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
	err = flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
	// A reader asking who drives the run (Store.Driver) holds a shared
	// lock for an instant (longer when the machine is loaded and it is
	// descheduled). A driver holds an exclusive one. While the lock is held
	// only shared, it is a probe: try again rather than refuse.
	for start := time.Now(); errors.Is(err, syscall.EWOULDBLOCK) && time.Since(start) < probeWait && heldShared(path); {
		time.Sleep(time.Millisecond)
		err = flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
	}
	// A holder that is dead (just SIGKILLed, its files not yet released)
	// lets go within moments: wait for it rather than refuse.
	for waited := time.Duration(0); errors.Is(err, syscall.EWOULDBLOCK) && waited < deadHolderWait && !holderAlive(path); waited += 10 * time.Millisecond {
		time.Sleep(10 * time.Millisecond)
		err = flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
	}
	if err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, lockedError(id, path)
		}
		return nil, fmt.Errorf("lock run '%s': %w", id, err)
	}
	// The lock is emptied first (the pid of an earlier holder, which may
	// now be another process's, is no more to signal), then an earlier
	// driver's stop request is cleared, then this one's pid written:
	// smithvm stop signals the pid in the lock only after writing its own
	// request, which must then not be cleared.
	if err := f.Truncate(0); err != nil {
		unlock(f)
		return nil, fmt.Errorf("write lock of run '%s': %w", id, err)
	}
	if err := clearStop(root); err != nil {
		unlock(f)
		return nil, fmt.Errorf("open run '%s': %w", id, err)
	}
	pid := []byte(strconv.Itoa(os.Getpid()) + "\n")
	if _, err := f.WriteAt(pid, 0); err != nil {
		unlock(f)
		return nil, fmt.Errorf("write lock of run '%s': %w", id, err)
	}
	return f, nil
}

// lockedError is the ERunLocked error of run id, whose lock (at path) is
// held.
func lockedError(id, path string) error {
	msg := "run '" + id + "' is being driven by another smithvm process"
	if pid := holderPid(path); pid > 0 {
		msg += " (pid " + strconv.Itoa(pid) + ")"
	}
	return &source.Error{Code: source.ERunLocked, Msg: msg}
}

// deadHolderWait bounds the wait for the lock of a holder that is dead.
const deadHolderWait = 3 * time.Second

// probeWait bounds lockRun's wait for a lock held only by Store.Driver's
// shared probes.
const probeWait = 5 * time.Second

// heldShared reports whether the flock on path is held by shared holders
// only (Store.Driver's probes), not by a driver: a shared lock of our own
// is then granted. It is dropped at once.
func heldShared(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if flock(f, syscall.LOCK_SH|syscall.LOCK_NB) != nil {
		return false
	}
	flock(f, syscall.LOCK_UN)
	return true
}

// holderPid is the pid written in the lock file at path, or 0.
func holderPid(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// holderAlive reports whether the process named in the lock file at path
// still runs (a zombie, or one being torn down after SIGKILL, does not).
// An unknown holder counts as alive.
func holderAlive(path string) bool {
	pid := holderPid(path)
	if pid == 0 {
		return true
	}
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) {
		switch b[i+2] {
		case 'Z', 'X', 'x':
			return false
		}
	}
	// SIGKILL pending: the process is on its way out.
	if st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status"); err == nil {
		for _, l := range strings.Split(string(st), "\n") {
			if v, ok := strings.CutPrefix(l, "ShdPnd:"); ok {
				if mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64); err == nil && mask&(1<<(uint(syscall.SIGKILL)-1)) != 0 {
					return false
				}
			}
		}
	}
	return true
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
