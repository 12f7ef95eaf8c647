package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
