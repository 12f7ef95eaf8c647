package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"smith/vm"
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
	fd := int(f.Fd())
	unlocked := make(chan struct{})
	go func() {
		defer close(unlocked)
		time.Sleep(100 * time.Millisecond)
		syscall.Flock(fd, syscall.LOCK_UN)
	}()
	stopped, err := stopRun(s, "r1", true)
	<-unlocked // before f is closed
	if stopped || err != nil {
		t.Fatalf("stopRun while the lock names no process yet = %v, %v; want false, nil (the driver let go)", stopped, err)
	}
}

// TestStopRequestBeforeTheWatch: a stop asked (and signalled) after the
// driver opened the run but before it watched for stops (the signal then
// went to catchStop) is not lost: the watch sees the request at once.
func TestStopRequestBeforeTheWatch(t *testing.T) {
	s, err := store.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Create("r1")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := s.RequestStop("r1"); err != nil {
		t.Fatal(err)
	}
	ctx, done := stoppable(context.Background(), r)
	defer done()
	if ctx.Err() == nil {
		t.Fatal("a stop requested before the watch began was lost")
	}
}

// TestStopARunWithNoStateYet: smithvm stop of a run whose driver holds it
// but has saved no state yet (it has just started) stops it, exit 0,
// instead of refusing the run as corrupt (E_STATE_CORRUPT, exit 2).
func TestStopARunWithNoStateYet(t *testing.T) {
	base := t.TempDir()
	s, err := store.New(base)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(s.RunsDir(), "r2")
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
	fmt.Fprintf(f, "%d\n", os.Getpid())
	// This process is the driver: on the stop signal it lets go.
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, stopSignal)
	defer signal.Stop(ch)
	fd := int(f.Fd())
	unlocked := make(chan struct{})
	go func() {
		defer close(unlocked)
		<-ch
		syscall.Flock(fd, syscall.LOCK_UN)
	}()
	var errb strings.Builder
	e := cacheEnv(t.TempDir())
	e.stdout, e.stderr = io.Discard, &errb
	if code := e.cmdStop([]string{"r2", "--base", base}); code != 0 || !strings.Contains(errb.String(), "Run r2 stopped") {
		t.Fatalf("stop of a run with no state yet: exit %d\n%s", code, errb.String())
	}
	<-unlocked // before f is closed
}

// TestStopARunThatEndsWhileStopWaits: a run that ends on its own while
// smithvm stop waits for its driver to let go (it completed, failed or
// halted, or its driver died) was not stopped: stop says it is not
// running, exit 0, and never offers to resume a completed run. Only a run
// that ends interrupted was stopped.
func TestStopARunThatEndsWhileStopWaits(t *testing.T) {
	tests := []struct {
		name, status, want string
	}{
		{"completed", vm.StatusCompleted, "INFO: Run e-completed is not running (status: completed); nothing to stop.\n"},
		{"failed", vm.StatusFailed, "INFO: Run e-failed is not running (status: failed); nothing to stop.\n"},
		{"halted", vm.StatusHalted, "INFO: Run e-halted is not running (status: halted); nothing to stop.\n"},
		{"driver-died", vm.StatusRunning, "INFO: Run e-driver-died is not running (" + store.CutOffNote + "); nothing to stop.\n"},
		{"interrupted", vm.StatusInterrupted, "INFO: Run e-interrupted stopped: interrupted at 'A'; resume with 'smithvm resume e-interrupted --base BASE'.\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			s, err := store.New(base)
			if err != nil {
				t.Fatal(err)
			}
			id := "e-" + tt.name
			r, err := s.Create(id)
			if err != nil {
				t.Fatal(err)
			}
			st := &vm.State{RunID: id, WorkflowName: "w", WorkflowPath: filepath.Join(base, "w.yaml"), Status: vm.StatusRunning,
				StartedAt: "2026-01-01T00:00:00Z", CurrentStep: "A", Steps: map[string]*vm.StepResult{"A": {Status: vm.StepRunning}}}
			if err := r.WriteSnapshot(st); err != nil {
				t.Fatal(err)
			}
			// This process drives the run: on the stop signal the run ends
			// as tt.status says, then lets go.
			ch := make(chan os.Signal, 1)
			signal.Notify(ch, stopSignal)
			defer signal.Stop(ch)
			go func() {
				<-ch
				end := *st
				end.Status = tt.status
				r.WriteSnapshot(&end)
				r.Close()
			}()
			var errb strings.Builder
			e := cacheEnv(t.TempDir())
			e.stdout, e.stderr, e.getwd = io.Discard, &errb, os.Getwd
			code := e.cmdStop([]string{id, "--base", base})
			got := strings.ReplaceAll(errb.String(), base, "BASE")
			if code != 0 || got != tt.want {
				t.Errorf("stop of a run that ends %s while stop waits: exit %d\n%s\nwant exit 0\n%s", tt.status, code, got, tt.want)
			}
		})
	}
}
