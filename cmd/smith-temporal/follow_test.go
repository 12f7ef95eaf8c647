package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// handoffYAML: Write makes files, Slow (killed mid-step in the test) reads
// them and makes another, Last reads both and removes one.
var handoffYAML = testWorkflow("handoff.yaml")

// TestFilesFollowTheRun: two workers in separate directories, sharing
// nothing but the S3 server of the blob store. The worker running step
// Slow is killed (SIGKILL) mid-step; the other worker restores the files
// of the run's last completed step (Write's, which it never ran), runs
// Slow again, and Last sees every step's files (an executable kept its
// mode, a file Slow removed is gone); the killed worker's half-done
// changes never travel.
func TestFilesFollowTheRun(t *testing.T) {
	f := newFleet(t)
	endpoint, _ := s3Server(t, f)
	f.blobs = "s3://smith/follow?endpoint=" + endpoint
	baseA, baseB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	a := f.workerAt(baseA)
	file := write(t, filepath.Join(f.base, "handoff.yaml"), handoffYAML)
	if r := f.cli("run", file, "--run-id", "handoff1", "--detach"); r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	waitFor(t, time.Minute, "Slow to start on worker A", func() bool {
		_, err := os.Stat(filepath.Join(baseA, "workspace", "slow-started"))
		return err == nil
	})
	// A run in flight is Temporal's to drive: resume refuses it.
	if r := f.cli("resume", "handoff1"); r.code != 2 || !strings.HasPrefix(r.stderr, "smith-temporal resume: E_RUN_LOCKED: run handoff1 is ") ||
		!strings.HasSuffix(r.stderr, ", not halted: Temporal drives it already\n") {
		t.Errorf("resume of a running run: exit %d, stderr %q; want 2 and E_RUN_LOCKED ... not halted", r.code, r.stderr)
	}
	f.workerAt(baseB)
	a.Process.Signal(syscall.SIGKILL)
	a.Process.Wait()
	waitFor(t, 2*time.Minute, "the run to complete on worker B", func() bool {
		return runStatus(f, "handoff1") == "completed"
	})
	st := parseState(t, f.cli("status", "handoff1", "--json").stdout)
	if got, want := st.Steps["Last"].Output, "oneonegonetool-ran\ngone-is-gone"; got != want {
		t.Errorf("Last's output = %q, want %q (the files of Write and Slow on worker B)", got, want)
	}
	if _, err := os.Stat(filepath.Join(baseB, "workspace", "notes", "one.txt")); err != nil {
		t.Errorf("worker B's WORKSPACE lacks Write's file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(baseA, "workspace", "two.txt")); err == nil {
		t.Error("worker A's WORKSPACE has two.txt, which only B made after A died")
	}
}

// fanYAML: Prep writes one input per item; Hold gives the test time to
// replace the worker; the parallel iterations each read their input (and
// Prep's shared file) and write an output; After reads them all.
var fanYAML = testWorkflow("fan.yaml")

// TestParallelIterationsSeeEarlierFiles: Prep runs on worker A, which is
// then killed; the parallel iterations run on workers B and C (separate
// directories, only the S3 server shared), each restoring Prep's files
// before it runs, and After sees the outputs of every iteration, merged at
// the join whichever worker wrote them.
func TestParallelIterationsSeeEarlierFiles(t *testing.T) {
	f := newFleet(t)
	endpoint, _ := s3Server(t, f)
	f.blobs = "s3://smith/fan?endpoint=" + endpoint
	dir := t.TempDir()
	bases := []string{filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c")}
	a := f.workerAt(bases[0])
	file := write(t, filepath.Join(f.base, "fan.yaml"), fanYAML)
	if r := f.cli("run", file, "--run-id", "fan1", "--detach"); r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	waitFor(t, time.Minute, "Hold to start on worker A", func() bool {
		_, err := os.Stat(filepath.Join(bases[0], "workspace", "hold-started"))
		return err == nil
	})
	f.workerAt(bases[1])
	f.workerAt(bases[2])
	a.Process.Signal(syscall.SIGKILL)
	a.Process.Wait()
	waitFor(t, 2*time.Minute, "the run to complete on workers B and C", func() bool {
		return runStatus(f, "fan1") == "completed"
	})
	st := parseState(t, f.cli("status", "fan1", "--json").stdout)
	if got, want := st.Steps["After"].Output, "in-asharedin-bsharedin-csharedin-dsharedin-esharedin-fshared"; got != want {
		t.Errorf("After's output = %q, want %q", got, want)
	}
	var ran []string
	for _, b := range bases {
		data, _ := os.ReadFile(filepath.Join(b, "ran.log"))
		ran = append(ran, strings.Join(strings.Fields(string(data)), ","))
	}
	t.Logf("iterations run by worker A, B, C: %q", ran)
	if ran[0] != "" {
		t.Errorf("worker A ran iterations %s after it was killed", ran[0])
	}
}
