package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/server/common/testing/freeport"
)

// TestDevCommand: smith-temporal dev serves on 127.0.0.1 with its state
// in the --db file; a worker and a run use it by its printed address; the
// run is still known after the server is stopped with SIGINT (exit 0) and
// started again on the same file.
func TestDevCommand(t *testing.T) {
	db := filepath.Join(t.TempDir(), "state", "dev.db")
	s := &fileServer{t: t, db: db, port: freeport.MustGetFreePort(), ns: "dev"}
	s.start()
	t.Cleanup(s.kill)
	if _, err := os.Stat(db); err != nil {
		t.Fatalf("the state file: %v", err)
	}
	f := newFleetAt(t, s.addr(), s.ns)
	f.worker()
	file := write(t, filepath.Join(f.base, "h.json"), haltManifest)
	if r := f.cli("run", file, "--run-id", "dev1"); r.code != 4 {
		t.Fatalf("run on the dev server: exit %d, want 4 (halted): %s", r.code, r.stderr)
	}
	f.stopAll()
	s.cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("smith-temporal dev after SIGINT: %v, want exit 0", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("smith-temporal dev did not stop within a minute of SIGINT")
	}
	s.start()
	f.worker()
	waitFor(t, time.Minute, "the halted run to answer after the restart", func() bool { return runStatus(f, "dev1") == "halted" })
	r := f.cli("resume", "dev1", "--signal", "SIGNAL:APPROVED")
	if r.code != 0 && s.dead() {
		// The embedded Temporal server (1.32.1) sometimes panics in its
		// ringpop membership monitor just after a start on a loaded
		// machine (a nil NodeLabels); its state is in the file: start it
		// again, as a user would, and the halted run is still there.
		t.Logf("the dev server died after its restart (%s); starting it again", r.stderr)
		s.kill()
		s.start()
		waitFor(t, time.Minute, "the halted run to answer after a second start", func() bool { return runStatus(f, "dev1") == "halted" })
		r = f.cli("resume", "dev1", "--signal", "SIGNAL:APPROVED")
	}
	if r.code != 0 {
		t.Fatalf("resume after the dev server's restart: exit %d: %s", r.code, r.stderr)
	}
}
