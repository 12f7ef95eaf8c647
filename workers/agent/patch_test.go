package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"smith/source"
	"smith/workers/confine"
	"smith/workers/step"
	"smith/workers/text"
)

// TestFileChanges: the changes between two snapshots (a new executable
// file, a changed one, a deleted one, a binary one; .git, .orchestrator and
// the agents' folders left out) applied to a copy of the first state give
// the second; applying again changes nothing; a file that differs from
// the recorded state fails with E_REPLAY_MISS naming it, writing nothing.
func TestFileChanges(t *testing.T) {
	t.Parallel()
	mk := func() (*step.Request, string) {
		d, err := confine.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		req := &step.Request{Step: "S", Dirs: d, Mask: text.NewMasker([]string{"s3cret"}),
			Mail: &step.Mail{Folders: []string{"agents/a/inbox", "agents/a/processed"}}}
		return req, d.Workspace
	}
	put := func(ws, rel, content string, mode os.FileMode) {
		p := filepath.Join(ws, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	start := func(ws string) {
		put(ws, "keep.txt", "same", 0o644)
		put(ws, "change.txt", "old", 0o644)
		put(ws, "gone.txt", "bye", 0o644)
	}
	req, ws := mk()
	start(ws)
	before, err := takeSnapshot(req, ws)
	if err != nil {
		t.Fatal(err)
	}
	put(ws, "change.txt", "new with s3cret", 0o644)
	put(ws, "dir/run.sh", "#!/bin/sh\n", 0o755)
	put(ws, "bin.dat", "\xff\x00\x01", 0o644)
	put(ws, ".git/HEAD", "x", 0o644)
	put(ws, "nested/.git/HEAD", "x", 0o644)
	put(ws, "nested/.GIT./config", "x", 0o644)
	put(ws, ".orchestrator/runs/x", "x", 0o644)
	put(ws, "agents/a/inbox/m.md", "x", 0o644)
	put(ws, "agents/a/.claims/inbox/m.md", "x", 0o644)
	os.Remove(filepath.Join(ws, "gone.txt"))
	after, err := takeSnapshot(req, ws)
	if err != nil {
		t.Fatal(err)
	}
	changes, err := fileChanges(req, ws, before, after)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, c := range changes {
		paths = append(paths, c.Path)
	}
	if got := strings.Join(paths, " "); got != "bin.dat change.txt dir/run.sh gone.txt" {
		t.Fatalf("changes = %s, want bin.dat change.txt dir/run.sh gone.txt", got)
	}
	if c := changes[1]; c.Text == nil || *c.Text != "new with ***" {
		t.Errorf("change.txt recorded as %+v, want masked text", c)
	}

	req2, ws2 := mk()
	start(ws2)
	for range 2 { // the second time: applied already, nothing to do
		if serr := applyChanges(req2, changes, "rec/S-1.json"); serr != nil {
			t.Fatalf("applyChanges: %v", serr)
		}
	}
	for rel, want := range map[string]string{"keep.txt": "same", "change.txt": "new with ***", "dir/run.sh": "#!/bin/sh\n", "bin.dat": "\xff\x00\x01"} {
		if b, _ := os.ReadFile(filepath.Join(ws2, rel)); string(b) != want {
			t.Errorf("%s = %q, want %q", rel, b, want)
		}
	}
	if fi, err := os.Stat(filepath.Join(ws2, "dir/run.sh")); err != nil || fi.Mode()&0o100 == 0 {
		t.Errorf("dir/run.sh is not executable: %v", fi)
	}
	if _, err := os.Stat(filepath.Join(ws2, "gone.txt")); !os.IsNotExist(err) {
		t.Errorf("gone.txt was not deleted: %v", err)
	}

	req3, ws3 := mk()
	start(ws3)
	put(ws3, "change.txt", "edited by someone", 0o644)
	serr := applyChanges(req3, changes, "rec/S-1.json")
	if serr == nil || serr.Code != source.EReplayMiss || !strings.Contains(serr.Msg, "change.txt") {
		t.Fatalf("applyChanges onto a changed file = %v, want E_REPLAY_MISS naming change.txt", serr)
	}
	if _, err := os.Stat(filepath.Join(ws3, "dir/run.sh")); !os.IsNotExist(err) {
		t.Errorf("a failed replay wrote dir/run.sh")
	}
}

// TestReplayPathEscape: a recording whose file changes name a path out of
// WORKSPACE (tampered with, or made by another tool) is a path violation,
// E_PATH_ESCAPE (exit 3), as the same path from a model is, and nothing
// of it is written; not a recording that no longer applies.
func TestReplayPathEscape(t *testing.T) {
	t.Parallel()
	content := "x"
	for _, p := range []string{"../outside.txt", ".git/hooks/post-commit", "/etc/smith-replay"} {
		d, err := confine.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		req := &step.Request{Step: "S", Dirs: d, Mask: text.NewMasker(nil)}
		changes := []FileChange{{Path: "ok.txt", Text: &content}, {Path: p, Text: &content}}
		serr := applyChanges(req, changes, "rec/S-1.json")
		if serr == nil || serr.Code != source.EPathEscape {
			t.Errorf("replay of %q = %v, want E_PATH_ESCAPE", p, serr)
		}
		if _, err := os.Stat(filepath.Join(d.Workspace, "ok.txt")); !os.IsNotExist(err) {
			t.Errorf("replay of %q wrote ok.txt before refusing", p)
		}
	}
}
