package store

import (
	"os"
	"testing"
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
