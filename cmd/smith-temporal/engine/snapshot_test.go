package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSnapshotRestoreMerge: a snapshot of one WORKSPACE restores into
// another (contents, an executable's mode, a link, no .git); a later
// snapshot without a file removes it there; two threads' snapshots merge
// onto their fork in the threads' order, whatever each wrote or removed.
func TestSnapshotRestoreMerge(t *testing.T) {
	b := DirBlobs(t.TempDir())
	wsA, wsB := t.TempDir(), t.TempDir()
	put := func(ws, rel, content string, mode os.FileMode) {
		p := filepath.Join(ws, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	put(wsA, "notes/a.txt", "a", 0o644)
	put(wsA, "run.sh", "#!/bin/sh\n", 0o755)
	put(wsA, ".git/HEAD", "ref", 0o644)
	os.Symlink("notes/a.txt", filepath.Join(wsA, "link"))
	wa := &workspaceFiles{synced: map[string]string{}, stats: map[string]fileStat{}}
	wb := &workspaceFiles{synced: map[string]string{}, stats: map[string]fileStat{}}
	s1, err := wa.snapshot(b, wsA, "r")
	if err != nil {
		t.Fatal(err)
	}
	if err := wb.restore(b, wsB, "r", s1); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(wsB, "notes/a.txt")); string(data) != "a" {
		t.Errorf("restored notes/a.txt = %q, want a", data)
	}
	if fi, err := os.Stat(filepath.Join(wsB, "run.sh")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("restored run.sh: %v, mode %v, want 0755", err, fi)
	}
	if l, _ := os.Readlink(filepath.Join(wsB, "link")); l != "notes/a.txt" {
		t.Errorf("restored link -> %q, want notes/a.txt", l)
	}
	if _, err := os.Stat(filepath.Join(wsB, ".git")); err == nil {
		t.Error(".git travelled")
	}
	os.Remove(filepath.Join(wsA, "run.sh"))
	s2, _ := wa.snapshot(b, wsA, "r")
	if err := wb.restore(b, wsB, "r", s2); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(wsB, "run.sh")); err == nil {
		t.Error("run.sh, removed by a later step, is still there")
	}

	// Threads: 1 writes x and changes a.txt, 2 writes y and removes a.txt
	// (after 1 in the VM's order: removed).
	put(wsA, "x", "1", 0o644)
	put(wsA, "notes/a.txt", "changed", 0o644)
	t1, _ := wa.snapshot(b, wsA, "t1")
	os.Remove(filepath.Join(wsA, "x"))
	put(wsA, "notes/a.txt", "a", 0o644)
	os.Remove(filepath.Join(wsA, "notes/a.txt"))
	put(wsA, "y", "2", 0o644)
	t2, _ := wa.snapshot(b, wsA, "t2")
	merged, err := mergeFiles(b, s2, []string{t1, t2})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := loadManifest(b, merged)
	if got := strings.Join(sortedPaths(m), " "); got != "link x y" {
		t.Errorf("merged files = %q, want %q", got, "link x y")
	}
	if same, _ := mergeFiles(b, s2, []string{s2, s2}); same != s2 {
		t.Errorf("threads that changed nothing merged to %s, want the fork's %s", same, s2)
	}
}

// TestConcurrentThreadsOnOneWorker: iterations a, d and e of one parallel
// step run at once on one worker, in one WORKSPACE, each from the fork's
// files. a ends while d is half-way through writing out/d.txt (a's walk
// sees the half); e then starts. e's restore must not remove or rewrite
// d's file, d's snapshot holds what d's step left, e's holds none of d's
// file, and the join has d's whole file.
func TestConcurrentThreadsOnOneWorker(t *testing.T) {
	b := DirBlobs(t.TempDir())
	ws := t.TempDir()
	put := func(rel, content string) {
		p := filepath.Join(ws, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w := &workspaceFiles{synced: map[string]string{}, stats: map[string]fileStat{}}
	put("in/d.txt", "in-d")
	put("in/common.txt", "shared")
	fork, err := w.snapshot(b, ws, "r")
	if err != nil {
		t.Fatal(err)
	}
	fa, err := w.begin(b, ws, "r", fork)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := w.begin(b, ws, "r", fork)
	if err != nil {
		t.Fatal(err)
	}
	put("out/a.txt", "in-ashared")
	// d's cat > out/d.txt: the first input written, the file left open.
	os.MkdirAll(filepath.Join(ws, "out"), 0o755)
	f, err := os.Create(filepath.Join(ws, "out/d.txt"))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("in-d")
	ra, err := w.end(b, ws, fa)
	if err != nil {
		t.Fatal(err)
	}
	fe, err := w.begin(b, ws, "r", fork)
	if err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(ws, "out/d.txt")); err != nil || string(data) != "in-d" {
		t.Errorf("e's restore changed d's file in flight: %q, %v", data, err)
	}
	f.WriteString("shared") // d's cat goes on: the second input
	f.Close()
	rd, err := w.end(b, ws, fd)
	if err != nil {
		t.Fatal(err)
	}
	put("out/e.txt", "in-eshared")
	re, err := w.end(b, ws, fe)
	if err != nil {
		t.Fatal(err)
	}
	read := func(ref, rel string) string {
		m, err := loadManifest(b, ref)
		if err != nil {
			t.Fatal(err)
		}
		e, ok := m.Files[rel]
		if !ok {
			return "(none)"
		}
		data, _ := b.Get(e.Blob)
		return string(data)
	}
	if got := read(rd, "out/d.txt"); got != "in-dshared" {
		t.Errorf("d's snapshot: out/d.txt = %q, want in-dshared", got)
	}
	if got := read(re, "out/d.txt"); got != "(none)" {
		t.Errorf("e's snapshot: out/d.txt = %q, want none (d's file)", got)
	}
	if got := read(re, "out/e.txt"); got != "in-eshared" {
		t.Errorf("e's snapshot: out/e.txt = %q, want in-eshared", got)
	}
	// The join, in the VM's order a, d, e.
	merged, err := mergeFiles(b, fork, []string{ra, rd, re})
	if err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]string{"out/a.txt": "in-ashared", "out/d.txt": "in-dshared", "out/e.txt": "in-eshared", "in/common.txt": "shared"} {
		if got := read(merged, rel); got != want {
			t.Errorf("after the join: %s = %q, want %q", rel, got, want)
		}
	}
	// Nothing in flight: the next step on this worker starts from the
	// join's files, as a step alone does.
	if err := w.restore(b, ws, "r", merged); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "out/d.txt")); string(data) != "in-dshared" {
		t.Errorf("after the join's restore: out/d.txt = %q", data)
	}
}

// tick waits until a file written now gets a later ctime than files
// written before it (the file system's clock is coarse).
func tick(t *testing.T, dir string) {
	t.Helper()
	probe := filepath.Join(dir, ".tick")
	defer os.Remove(probe)
	stamp := func() time.Time {
		if err := os.WriteFile(probe, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(probe)
		if err != nil {
			t.Fatal(err)
		}
		return changed(fi)
	}
	first := stamp()
	for !stamp().After(first) {
		time.Sleep(time.Millisecond)
	}
}

// TestRestartedWorkerSweepsCutOffStep: a worker dies while a step of run
// r runs (it wrote stray.txt and half of a.txt); restarted on the same
// BASE, it runs the step again from the run's last snapshot: stray.txt is
// gone and a.txt whole, while the project's file (earlier.txt, there
// before the step began) and another run's file written after the
// restart stay (and a .git file, and a project's .orchestrator/, never
// swept). Restarted again, it still knows what it last synced for
// r: a file a later step on another worker removed is removed here too.
func TestRestartedWorkerSweepsCutOffStep(t *testing.T) {
	b := DirBlobs(t.TempDir())
	ws, wsB, runs := t.TempDir(), t.TempDir(), t.TempDir()
	put := func(ws, rel, content string) {
		p := filepath.Join(ws, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(rel string) string {
		data, err := os.ReadFile(filepath.Join(ws, rel))
		if err != nil {
			return "(none)"
		}
		return string(data)
	}
	// Step 1 of r ran on worker B.
	put(wsB, "a.txt", "a")
	put(wsB, "old.txt", "old")
	wb := newWorkspaceFiles("", time.Now())
	s1, err := wb.snapshot(b, wsB, "r")
	if err != nil {
		t.Fatal(err)
	}
	// This worker has the project's file; step 2 starts here, writes,
	// and the worker dies (a process that is gone wrote its record).
	put(ws, "earlier.txt", "mine")
	tick(t, ws)
	w1 := newWorkspaceFiles(runs, time.Now())
	w1.self.Start = "gone"
	if _, err := w1.begin(b, ws, "r", s1); err != nil {
		t.Fatal(err)
	}
	put(ws, "notes/stray.txt", "half-written")
	put(ws, "a.txt", "ha")
	put(ws, "wt/.git", "gitdir: elsewhere")          // never swept
	put(ws, ".orchestrator/runs/x/state.json", "{}") // nor this
	// Restarted: another run's step writes first, then step 2 again.
	tick(t, ws)
	w2 := newWorkspaceFiles(runs, time.Now())
	tick(t, ws)
	put(ws, "q.txt", "run q")
	f, err := w2.begin(b, ws, "r", s1)
	if err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]string{"notes/stray.txt": "(none)", "a.txt": "a", "old.txt": "old", "earlier.txt": "mine", "q.txt": "run q",
		"wt/.git": "gitdir: elsewhere", ".orchestrator/runs/x/state.json": "{}"} {
		if got := read(rel); got != want {
			t.Errorf("after the restart, step 2 sees %s = %q, want %q", rel, got, want)
		}
	}
	s2, err := w2.end(b, ws, f)
	if err != nil {
		t.Fatal(err)
	}
	// Step 3 on worker B removes old.txt; step 4 comes back to this
	// worker, restarted once more.
	if err := wb.restore(b, wsB, "r", s2); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(wsB, "old.txt"))
	s3, err := wb.snapshot(b, wsB, "r")
	if err != nil {
		t.Fatal(err)
	}
	w3 := newWorkspaceFiles(runs, time.Now())
	if err := w3.restore(b, ws, "r", s3); err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]string{"old.txt": "(none)", "a.txt": "a", "earlier.txt": "mine"} {
		if got := read(rel); got != want {
			t.Errorf("step 4 sees %s = %q, want %q", rel, got, want)
		}
	}
}

// TestFailedActivitySwept: a step that ends as a failed activity (no
// snapshot) is run again on the same worker from the run's snapshot,
// without what the failed attempt wrote; also after a step of another run
// failed so before (and went on elsewhere: its record stays flying).
func TestFailedActivitySwept(t *testing.T) {
	b := DirBlobs(t.TempDir())
	ws := t.TempDir()
	w := newWorkspaceFiles(t.TempDir(), time.Now())
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	s1, err := w.snapshot(b, ws, "r")
	if err != nil {
		t.Fatal(err)
	}
	fp, err := w.begin(b, ws, "p", "")
	if err != nil {
		t.Fatal(err)
	}
	w.land(fp)
	tick(t, ws)
	f, err := w.begin(b, ws, "r", s1)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "stray.txt"), []byte("half"), 0o644)
	w.land(f)
	if _, err := w.begin(b, ws, "r", s1); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ws, "stray.txt")); err == nil {
		t.Error("the attempt run again sees stray.txt, which the failed attempt wrote")
	}
}

// TestSweepSparesStepsInFlight: two worker processes share one BASE; the
// one running run r's step dies after the step wrote stray.txt; the other
// (started before) is running a step of run q, begun after stray.txt, that
// wrote q.txt. When the other takes r's step, stray.txt goes and q.txt,
// written by a step still in flight, stays.
func TestSweepSparesStepsInFlight(t *testing.T) {
	b := DirBlobs(t.TempDir())
	ws, runs := t.TempDir(), t.TempDir()
	put := func(rel string) {
		if err := os.WriteFile(filepath.Join(ws, rel), []byte(rel), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put("a.txt")
	w1 := newWorkspaceFiles(runs, time.Now())
	w1.self.Start = "gone"
	w2 := newWorkspaceFiles(runs, time.Now())
	s1, err := w1.snapshot(b, ws, "r")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w1.begin(b, ws, "r", s1); err != nil {
		t.Fatal(err)
	}
	put("stray.txt")
	tick(t, ws)
	if _, err := w2.begin(b, ws, "q", ""); err != nil {
		t.Fatal(err)
	}
	put("q.txt")
	if _, err := w2.begin(b, ws, "r", s1); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ws, "stray.txt")); err == nil {
		t.Error("r's step, run again, sees stray.txt, written by its cut-off attempt")
	}
	if _, err := os.Stat(filepath.Join(ws, "q.txt")); err != nil {
		t.Errorf("q's file, written by a step in flight, was swept: %v", err)
	}
}

// TestSweepPassesStaleRecords: a worker on another host that died with a
// step of run s in flight left s's record flying for good; its beat file
// no longer moves. A live worker on a third host is running a step of run
// q (begun after stray.txt, it wrote q.txt) and beats. When run r's step,
// which wrote stray.txt and failed as an activity, runs again here, the
// sweep goes past s's record (no beat for longer than deadAfter on the
// file system's clock) and stops where q's step began: stray.txt goes,
// q.txt stays. Without its beat, q's record would count as dead too.
func TestSweepPassesStaleRecords(t *testing.T) {
	b := DirBlobs(t.TempDir())
	ws, runs := t.TempDir(), t.TempDir()
	put := func(rel string) {
		if err := os.WriteFile(filepath.Join(ws, rel), []byte(rel), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	worker := func(host string) *workspaceFiles {
		w := newWorkspaceFiles(runs, time.Now())
		w.beatEvery = 0 // the test beats (beat) by hand
		if host != "" {
			w.self = proc{Host: host, PID: 1, Start: "1"}
		}
		return w
	}
	ctimeOf := func(path string) time.Time {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return changed(fi)
	}
	put("a.txt")
	dead := worker("host-dead")
	if _, err := dead.begin(b, ws, "s", ""); err != nil {
		t.Fatal(err)
	}
	tick(t, ws)
	w := worker("")
	s1, err := w.snapshot(b, ws, "r")
	if err != nil {
		t.Fatal(err)
	}
	f, err := w.begin(b, ws, "r", s1)
	if err != nil {
		t.Fatal(err)
	}
	put("stray.txt")
	tick(t, ws)
	live := worker("host-live")
	if _, err := live.begin(b, ws, "q", ""); err != nil {
		t.Fatal(err)
	}
	began := ctimeOf(live.recordPath("q"))
	put("q.txt")
	tick(t, ws)
	live.beat()
	w.land(f)

	// The file system's clock: q's last beat is deadAfter old, s's
	// older; q's record alone (its beat file's ctime) is not old enough.
	lastBeat := ctimeOf(live.beatPath("q"))
	if !lastBeat.After(began) {
		t.Fatalf("q's beat at %v did not move past its record's %v", lastBeat, began)
	}
	now := lastBeat.Add(deadAfter)
	w.fsNow = func() (time.Time, error) { return now, nil }
	if got := w.busySince("r"); !got.Equal(began) {
		t.Errorf("busySince = %v, want q's step's start %v (s's record is stale, q's beats)", got, began)
	}
	if _, err := w.begin(b, ws, "r", s1); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ws, "stray.txt")); err == nil {
		t.Error("r's step, run again, sees stray.txt: the sweep stopped at s's stale record")
	}
	if _, err := os.Stat(filepath.Join(ws, "q.txt")); err != nil {
		t.Errorf("q's file, written by a live step that beats, was swept: %v", err)
	}
	// A moment later, q's record has missed its beats too.
	now = lastBeat.Add(deadAfter + time.Nanosecond)
	if got := w.busySince("r"); !got.IsZero() {
		t.Errorf("busySince past q's beats = %v, want none", got)
	}
}

// TestBeatsWhileFlying: while a step of a run is in flight, the worker
// rewrites the run's beat file in the background (every beatEvery), and
// stops when no step of the run is in flight any more.
func TestBeatsWhileFlying(t *testing.T) {
	b := DirBlobs(t.TempDir())
	ws := t.TempDir()
	w := newWorkspaceFiles(t.TempDir(), time.Now())
	w.beatEvery = time.Millisecond
	f, err := w.begin(b, ws, "r", "")
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(w.recordPath("r"))
	if err != nil {
		t.Fatal(err)
	}
	began := changed(fi)
	waitUntil := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); !ok(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %s within a minute", what)
			}
		}
	}
	waitUntil("beat", func() bool {
		fi, err := os.Stat(w.beatPath("r"))
		return err == nil && changed(fi).After(began)
	})
	w.land(f)
	waitUntil("end of the beats", func() bool {
		w.beatMu.Lock()
		defer w.beatMu.Unlock()
		return !w.beatLoop && len(w.beating) == 0
	})
}
