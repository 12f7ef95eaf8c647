package agent

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"smith/source"
	"smith/workers/confine"
	"smith/workers/step"
	"smith/workers/text"
)

// describeTree prints every file and link below dir (one line each: path,
// kind, executable bit, content or link target), sorted, so two trees
// compare as text.
func describeTree(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case rel == ".":
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			lines = append(lines, rel+" -> "+target)
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			lines = append(lines, rel+" "+info.Mode().Perm().String()[3:4]+" "+string(b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestFileChangesShapes: whatever a call does to the files of its working
// directory (a folder becomes a file and back, a symlink is made, moved or
// replaced, only the executable bit changes, a file is renamed, emptied or
// has spaces, unicode or a newline in its name), the recorded changes
// applied to a copy of the directory as it was give the directory as the
// call left it (CONTRACT 5.2: the same files, the same trees).
func TestFileChangesShapes(t *testing.T) {
	t.Parallel()
	type op func(t *testing.T, ws string)
	write := func(rel, content string, mode os.FileMode) op {
		return func(t *testing.T, ws string) {
			p := filepath.Join(ws, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			os.Remove(p)
			if err := os.WriteFile(p, []byte(content), mode); err != nil {
				t.Fatal(err)
			}
		}
	}
	link := func(target, rel string) op {
		return func(t *testing.T, ws string) {
			p := filepath.Join(ws, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			os.Remove(p)
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	remove := func(rel string) op {
		return func(t *testing.T, ws string) {
			if err := os.RemoveAll(filepath.Join(ws, rel)); err != nil {
				t.Fatal(err)
			}
		}
	}
	chmod := func(rel string, mode os.FileMode) op {
		return func(t *testing.T, ws string) {
			if err := os.Chmod(filepath.Join(ws, rel), mode); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name         string
		before, call []op
	}{
		{"folder becomes a file", []op{write("a/b.txt", "b", 0o644)}, []op{remove("a"), write("a", "now a file", 0o644)}},
		{"file becomes a folder", []op{write("a", "a file", 0o644)}, []op{remove("a"), write("a/b.txt", "b", 0o644)}},
		{"new symlink", []op{write("x.txt", "x", 0o644)}, []op{link("x.txt", "l")}},
		{"symlink to a folder", []op{write("d/x.txt", "x", 0o644)}, []op{link("d", "dl")}},
		{"symlink retargeted", []op{write("x.txt", "x", 0o644), link("x.txt", "l")}, []op{link("y.txt", "l")}},
		{"symlink replaced by a file", []op{link("x.txt", "l")}, []op{write("l", "a file now", 0o644)}},
		{"file replaced by a symlink", []op{write("l", "a file", 0o644)}, []op{link("elsewhere", "l")}},
		{"symlink deleted", []op{link("x.txt", "l")}, []op{remove("l")}},
		{"made executable", []op{write("run.sh", "#!/bin/sh\n", 0o644)}, []op{chmod("run.sh", 0o755)}},
		{"no longer executable", []op{write("run.sh", "#!/bin/sh\n", 0o755)}, []op{chmod("run.sh", 0o644)}},
		{"renamed", []op{write("old name.txt", "same", 0o644)}, []op{remove("old name.txt"), write("new name.txt", "same", 0o644)}},
		{"emptied and new empty", []op{write("e.txt", "full", 0o644)}, []op{write("e.txt", "", 0o644), write("new/empty", "", 0o644)}},
		{"odd names", nil, []op{write("sp ace/ü ñ.txt", "u", 0o644), write("line\nbreak", "n", 0o644), write("-dash", "d", 0o644)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mk := func() (*step.Request, string) {
				d := newProject(t)
				req := &step.Request{Step: "S", Dirs: d, Mask: text.NewMasker(nil)}
				for _, o := range tt.before {
					o(t, d.Workspace)
				}
				return req, d.Workspace
			}
			req, ws := mk()
			before, err := takeSnapshot(req, ws)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range tt.call {
				o(t, ws)
			}
			after, err := takeSnapshot(req, ws)
			if err != nil {
				t.Fatal(err)
			}
			changes, err := fileChanges(req, ws, before, after)
			if err != nil {
				t.Fatal(err)
			}
			want := describeTree(t, ws)
			req2, ws2 := mk()
			for i := range 2 { // the second time: applied already
				if serr := applyChanges(req2, changes, "rec/S-1.json"); serr != nil {
					t.Fatalf("applyChanges (time %d) = %v", i+1, serr)
				}
				if got := describeTree(t, ws2); got != want {
					t.Fatalf("replayed tree (time %d):\n%s\nwant (as the call left it):\n%s", i+1, got, want)
				}
			}
		})
	}
}

// TestReplayLinkEscape: a recording edited to write through a symbolic
// link (one it makes itself, or one already in the working directory), or
// to make a link named .git, is a path violation (E_PATH_ESCAPE), and
// nothing of it is written.
func TestReplayLinkEscape(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	tests := []struct {
		name    string
		present string // a link already in WORKSPACE: "name->target"
		changes []FileChange
	}{
		{"file below a link it makes", "", []FileChange{{Path: "ok.txt", Text: str("x")}, {Path: "d", Link: str("/tmp")}, {Path: "d/x", Text: str("x")}}},
		{"file below a link there", "pre->/tmp", []FileChange{{Path: "ok.txt", Text: str("x")}, {Path: "pre/x", Text: str("x")}}},
		{"link named .git", "", []FileChange{{Path: "ok.txt", Text: str("x")}, {Path: "sub/.git", Link: str("/tmp")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := newProject(t)
			if name, target, ok := strings.Cut(tt.present, "->"); ok {
				if err := os.Symlink(target, filepath.Join(d.Workspace, name)); err != nil {
					t.Fatal(err)
				}
			}
			req := &step.Request{Step: "S", Dirs: d, Mask: text.NewMasker(nil)}
			serr := applyChanges(req, tt.changes, "rec/S-1.json")
			if serr == nil || serr.Code != source.EPathEscape {
				t.Errorf("applyChanges = %v, want E_PATH_ESCAPE", serr)
			}
			for _, rel := range []string{"ok.txt", "d"} {
				if _, err := os.Lstat(filepath.Join(d.Workspace, rel)); !os.IsNotExist(err) {
					t.Errorf("a refused replay wrote %s", rel)
				}
			}
		})
	}
}

// TestFileChangesNames: a file name that is not UTF-8 is replayed with its
// own bytes (JSON alone would turn them into U+FFFD), and a secret in a
// file name is masked in the recording like one in its content.
func TestFileChangesNames(t *testing.T) {
	t.Parallel()
	d := newProject(t)
	req := &step.Request{Step: "S", Dirs: d, Mask: text.NewMasker([]string{"s3cret"})}
	before, err := takeSnapshot(req, d.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"caf\xe9.txt", "key-s3cret.txt"} {
		if err := os.WriteFile(filepath.Join(d.Workspace, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	after, err := takeSnapshot(req, d.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	changes, err := fileChanges(req, d.Workspace, before, after)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(changes)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "s3cret") {
		t.Errorf("the recording shows the secret: %s", b)
	}
	var back []FileChange
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	d2, err := confine.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	req2 := &step.Request{Step: "S", Dirs: d2, Mask: req.Mask}
	if serr := applyChanges(req2, back, "rec/S-1.json"); serr != nil {
		t.Fatalf("applyChanges = %v", serr)
	}
	for _, name := range []string{"caf\xe9.txt", "key-***.txt"} {
		if _, err := os.Stat(filepath.Join(d2.Workspace, name)); err != nil {
			t.Errorf("replay did not make %q: %v", name, err)
		}
	}
}

// newProject is a new project folder with its WORKSPACE made.
func newProject(t *testing.T) confine.Dir {
	t.Helper()
	d, err := confine.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(d.Workspace, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}
