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
