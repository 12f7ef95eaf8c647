package store

import (
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestDriverAndStop checks Driver (who holds a run's lock) and the stop
// request: seen by the holder, cleared when the next driver opens the run.
func TestDriverAndStop(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	if _, running, err := s.Driver("none"); err != nil || running {
		t.Errorf("Driver(%q) = %v, %v; want not running", "none", running, err)
	}
	r, err := s.Create("r1")
	if err != nil {
		t.Fatal(err)
	}
	pid, running, err := s.Driver("r1")
	if err != nil || !running || pid != os.Getpid() {
		t.Errorf("Driver(%q) while held = %d, %v, %v; want %d, true", "r1", pid, running, err, os.Getpid())
	}
	if r.StopRequested() {
		t.Error("StopRequested before RequestStop = true")
	}
	if err := s.RequestStop("r1"); err != nil {
		t.Fatal(err)
	}
	if !r.StopRequested() {
		t.Error("StopRequested after RequestStop = false")
	}
	if err := r.WriteSnapshot(map[string]any{}); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if _, running, err := s.Driver("r1"); err != nil || running {
		t.Errorf("Driver(%q) after Close = %v, %v; want not running", "r1", running, err)
	}
	r, err = s.Open("r1")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.StopRequested() {
		t.Error("a stop request of an earlier driver survived Open")
	}
}

// A Driver probe (a shared flock) never makes Open fail: statuses racing a
// resume, and a probe that holds its lock long (descheduled on a loaded
// machine), are waited for (finding 1 of the run-lifecycle audit).
func TestDriverProbeNeverLocksOutOpen(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	r, err := s.Create("r1")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteSnapshot(map[string]any{}); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if _, _, err := s.Driver("r1"); err != nil {
					t.Errorf("Driver: %v", err)
					return
				}
			}
		}()
	}
	for i := range 200 {
		r, err := s.Open("r1")
		if err != nil {
			t.Errorf("Open #%d with probes racing = %v, want nil", i, err)
			break
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()

	// A probe descheduled while it holds its shared lock.
	f, err := os.Open(filepath.Join(s.RunsDir(), "r1", "lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	opened := make(chan error, 1)
	go func() {
		r, err := s.Open("r1")
		if err == nil {
			err = r.Close()
		}
		opened <- err
	}()
	time.Sleep(200 * time.Millisecond)
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	if err := <-opened; err != nil {
		t.Errorf("Open while a probe held the lock 200 ms = %v, want nil", err)
	}
}
