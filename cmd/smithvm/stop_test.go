package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"smith/vm/store"
)

// TestStopWaitsForTheDriversPid: a process that has just taken a run's
// lock writes its pid into it a moment later; smithvm stop at that
// instant waits for the pid (or for the lock to go) instead of failing
// with "its lock names no process".
func TestStopWaitsForTheDriversPid(t *testing.T) {
	t.Parallel()
	s, err := store.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(s.RunsDir(), "r1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	// The driver lets go before its pid is written (it failed to start):
	// nothing to stop.
	go func() {
		time.Sleep(100 * time.Millisecond)
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}()
	stopped, err := stopRun(s, "r1", true)
	if stopped || err != nil {
		t.Fatalf("stopRun while the lock names no process yet = %v, %v; want false, nil (the driver let go)", stopped, err)
	}
}
