package confine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// project makes a BASE with this tree below workspace:
//
//	a/b/file.txt
//	real/inner.txt
//	linkdir -> real          (target inside the workspace)
//	linkfile -> real/inner.txt
//	a/up -> ../..            (target: BASE)
func project(t *testing.T) Dir {
	t.Helper()
	d, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := d.Workspace
	for _, p := range []string{"a/b", "real"} {
		if err := os.MkdirAll(filepath.Join(ws, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"a/b/file.txt", "real/inner.txt"} {
		if err := os.WriteFile(filepath.Join(ws, p), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := []struct{ old, new string }{
		{"real", "linkdir"},
		{"real/inner.txt", "linkfile"},
		{"../..", "a/up"},
	}
	for _, l := range links {
		if err := os.Symlink(l.old, filepath.Join(ws, l.new)); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func TestLexical(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		path string
		want string // "" for accepted, else the error text
	}{
		{"simple", "a/b.txt", ""},
		{"dot", ".", ""},
		{"inner dots", "a/./b/../c", ""},
		{"back into workspace", "../workspace/x", ""},
		{"base itself", "..", "path '..' resolves outside the workspace"},
		{"sibling of workspace", "../other/x", "path '../other/x' resolves outside the workspace"},
		{"into .orchestrator", "../.orchestrator/runs/r/state.json", "path '../.orchestrator/runs/r/state.json' resolves outside the workspace"},
		{"empty", "", "path '' is empty"},
		{"absolute", "/etc/passwd", "path '/etc/passwd' is absolute"},
		{"escape", "../../x", "path '../../x' resolves outside the project"},
		{"escape after descent", "a/../../..", "path 'a/../../..' resolves outside the project"},
		{"escape deep", "a/b/../../../../etc", "path 'a/b/../../../../etc' resolves outside the project"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := Lexical(tt.path)
			if tt.want == "" {
				if err != nil {
					t.Errorf("Lexical(%q) = %v, want nil", tt.path, err)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Errorf("Lexical(%q) = %v, want %s", tt.path, err, tt.want)
			}
			if !errors.Is(err, ErrEscape) {
				t.Errorf("Lexical(%q) = %v, does not wrap ErrEscape", tt.path, err)
			}
			var pe *Error
			if !errors.As(err, &pe) || pe.Path != tt.path {
				t.Errorf("Lexical(%q) = %#v, want *Error with Path %q", tt.path, err, tt.path)
			}
		})
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	d, err := New("rel/../proj")
	if err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(wd, "proj"); d.Base != want {
		t.Errorf("New(%q).Base = %q, want %q", "rel/../proj", d.Base, want)
	}
	if want := filepath.Join(wd, "proj", "workspace"); d.Workspace != want {
		t.Errorf("New(%q).Workspace = %q, want %q", "rel/../proj", d.Workspace, want)
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	d := project(t)
	tests := []struct {
		name string
		path string
		want string // accepted: the result relative to Base; else the error text
		ok   bool
	}{
		{"existing file", "a/b/file.txt", "workspace/a/b/file.txt", true},
		{"non-existent nested", "new/deep/dir/f.txt", "workspace/new/deep/dir/f.txt", true},
		{"below an existing file", "a/b/file.txt/x", "workspace/a/b/file.txt/x", true},
		{"back into workspace", "../workspace/a/b/file.txt", "workspace/a/b/file.txt", true},
		{"workspace itself", ".", "workspace", true},
		{"absolute", "/etc/passwd", "path '/etc/passwd' is absolute", false},
		{"dotdot escape", "../../x", "path '../../x' resolves outside the project", false},
		{"descend then escape", "a/../../..", "path 'a/../../..' resolves outside the project", false},
		{"empty", "", "path '' is empty", false},
		{"symlink dir with inner target", "linkdir/inner.txt", "path 'linkdir/inner.txt' passes through the symlink 'linkdir'", false},
		{"symlink dir itself", "linkdir", "path 'linkdir' passes through the symlink 'linkdir'", false},
		{"symlink file", "linkfile", "path 'linkfile' passes through the symlink 'linkfile'", false},
		{"nested symlink", "a/up/workspace/x", "path 'a/up/workspace/x' passes through the symlink 'a/up'", false},
		{"symlink after dotdot", "a/../linkdir/new.txt", "path 'a/../linkdir/new.txt' passes through the symlink 'linkdir'", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := d.Resolve(tt.path)
			if tt.ok {
				if want := filepath.Join(d.Base, tt.want); err != nil || got != want {
					t.Errorf("Resolve(%q) = %q, %v, want %q, nil", tt.path, got, err, want)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Errorf("Resolve(%q) = %q, %v, want error %s", tt.path, got, err, tt.want)
			}
			if !errors.Is(err, ErrEscape) {
				t.Errorf("Resolve(%q) error %v does not wrap ErrEscape", tt.path, err)
			}
		})
	}
}

func TestResolveIn(t *testing.T) {
	t.Parallel()
	d := project(t)
	step := filepath.Join(d.Workspace, "artifacts", "Step")
	tests := []struct {
		name string
		dir  string
		path string
		want string // accepted: the result relative to Base; else "" and an error
	}{
		{"output file", step, "out.txt", "workspace/artifacts/Step/out.txt"},
		{"up to workspace", step, "../../a/b/file.txt", "workspace/a/b/file.txt"},
		{"up to base", step, "../../../x", ""},
		{"into .orchestrator", step, "../../../.orchestrator/runs/r/state.json", ""},
		{"escape", step, "../../../../x", ""},
		{"absolute", step, "/tmp/x", ""},
		{"through symlink from another dir", step, "../../linkdir/x", ""},
		{"dir is a symlink", filepath.Join(d.Workspace, "linkdir"), "x", ""},
		{"dir outside base", filepath.Dir(d.Base), "x", ""},
		{"dir not absolute", "workspace", "x", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := d.ResolveIn(tt.dir, tt.path)
			if tt.want != "" {
				if want := filepath.Join(d.Base, tt.want); err != nil || got != want {
					t.Errorf("ResolveIn(%q, %q) = %q, %v, want %q, nil", tt.dir, tt.path, got, err, want)
				}
				return
			}
			if !errors.Is(err, ErrEscape) {
				t.Errorf("ResolveIn(%q, %q) = %q, %v, want an error wrapping ErrEscape", tt.dir, tt.path, got, err)
			}
		})
	}
}

func TestWriteFile(t *testing.T) {
	t.Parallel()
	d := project(t)
	tests := []struct {
		name string
		path string
		ok   bool
	}{
		{"creates parents", "x/y/z/out.txt", true},
		{"replaces existing", "a/b/file.txt", true},
		{"symlink dir", "linkdir/new.txt", false},
		// The longest name a file system takes (255 bytes): its temporary
		// twin must fit too.
		{"longest name", "long/" + strings.Repeat("n", 251) + ".txt", true},
		{"longest name, runes", "runes/" + strings.Repeat("é", 125) + ".txt", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// Resolve is skipped on purpose: WriteFile must check again.
			abs := filepath.Join(d.Workspace, tt.path)
			err := d.WriteFile(abs, []byte("hello"), 0o644)
			if !tt.ok {
				if !errors.Is(err, ErrEscape) {
					t.Errorf("WriteFile(%q) = %v, want an error wrapping ErrEscape", abs, err)
				}
				if _, serr := os.Lstat(filepath.Join(d.Workspace, "real", "new.txt")); serr == nil {
					t.Errorf("WriteFile(%q) wrote through the symlink", abs)
				}
				return
			}
			if err != nil {
				t.Fatalf("WriteFile(%q) = %v, want nil", abs, err)
			}
			got, err := os.ReadFile(abs)
			if err != nil || string(got) != "hello" {
				t.Errorf("ReadFile(%q) = %q, %v, want %q", abs, got, err, "hello")
			}
			entries, err := os.ReadDir(filepath.Dir(abs))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if e.Name() != filepath.Base(abs) {
					t.Errorf("WriteFile(%q) left %q behind", abs, e.Name())
				}
			}
		})
	}
}

func TestWriteFileOutside(t *testing.T) {
	t.Parallel()
	d := project(t)
	abs := filepath.Join(filepath.Dir(d.Base), "outside.txt")
	if err := d.WriteFile(abs, []byte("x"), 0o644); !errors.Is(err, ErrEscape) {
		t.Errorf("WriteFile(%q) = %v, want an error wrapping ErrEscape", abs, err)
	}
	if _, err := d.Create(abs); !errors.Is(err, ErrEscape) {
		t.Errorf("Create(%q) = %v, want an error wrapping ErrEscape", abs, err)
	}
	if _, err := d.Open("/etc/passwd"); !errors.Is(err, ErrEscape) {
		t.Errorf("Open(%q) = %v, want an error wrapping ErrEscape", "/etc/passwd", err)
	}
}

func TestCreateAndOpen(t *testing.T) {
	t.Parallel()
	d := project(t)
	abs, err := d.ResolveIn(filepath.Join(d.Workspace, "artifacts", "Step"), "sub/out.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, content := range []string{"first version, long", "second"} {
		f, err := d.Create(abs)
		if err != nil {
			t.Fatalf("Create(%q) = %v", abs, err)
		}
		if _, err := f.WriteString(content); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	f, err := d.Open(abs)
	if err != nil {
		t.Fatalf("Open(%q) = %v", abs, err)
	}
	defer f.Close()
	buf := make([]byte, 100)
	n, _ := f.Read(buf)
	if got := string(buf[:n]); got != "second" {
		t.Errorf("Open(%q) read %q, want %q (Create must truncate)", abs, got, "second")
	}
	link := filepath.Join(d.Workspace, "linkfile")
	if _, err := d.Open(link); !errors.Is(err, ErrEscape) {
		t.Errorf("Open(%q) = %v, want an error wrapping ErrEscape", link, err)
	}
	if _, err := d.Create(link); !errors.Is(err, ErrEscape) {
		t.Errorf("Create(%q) = %v, want an error wrapping ErrEscape", link, err)
	}
}

func FuzzLexical(f *testing.F) {
	for _, s := range []string{"a", "", ".", "..", "../..", "/x", "a/../../b", "../workspace/x", "a//b/./../..", "\x00"} {
		f.Add(s)
	}
	const base = "/base"
	f.Fuzz(func(t *testing.T, rel string) {
		err := Lexical(rel)
		if err != nil {
			if !errors.Is(err, ErrEscape) {
				t.Errorf("Lexical(%q) = %v, does not wrap ErrEscape", rel, err)
			}
			return
		}
		if filepath.IsAbs(rel) {
			t.Errorf("Lexical(%q) = nil for an absolute path", rel)
		}
		joined := filepath.Join(base, "workspace", rel)
		back, rerr := filepath.Rel(base, joined)
		if rerr != nil || !filepath.IsLocal(back) {
			t.Errorf("Lexical(%q) = nil, but %q is not below %q", rel, joined, base)
		}
	})
}

// FuzzResolveIn: whatever path a user or a model gives, a path ResolveIn
// accepts lies in WORKSPACE, not in BASE/.orchestrator, and passes through
// no symbolic link; Open and Create of it stay there too.
func FuzzResolveIn(f *testing.F) {
	for _, s := range []string{"a.txt", "../x", "/etc/passwd", "link/x", "a/../../.orchestrator/runs/r/state.json", "artifacts/S/out", "a\x00b", "a\nb", ".", "", "./link", "dir/../link/x"} {
		f.Add(s)
	}
	base := f.TempDir()
	d, err := New(base)
	if err != nil {
		f.Fatal(err)
	}
	os.MkdirAll(filepath.Join(d.Workspace, "dir"), 0o755)
	os.MkdirAll(filepath.Join(base, ".orchestrator", "runs"), 0o755)
	if err := os.Symlink(base, filepath.Join(d.Workspace, "link")); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		abs, err := d.ResolveIn(d.Workspace, rel)
		if err != nil {
			return
		}
		r, rerr := filepath.Rel(d.Workspace, abs)
		if rerr != nil || !filepath.IsLocal(r) && r != "." {
			t.Fatalf("ResolveIn(%q) = %q, outside WORKSPACE", rel, abs)
		}
		if strings.HasPrefix(r, "link") && (r == "link" || strings.HasPrefix(r, "link"+string(filepath.Separator))) {
			t.Fatalf("ResolveIn(%q) = %q passes through the symlink", rel, abs)
		}
		if f, err := d.Open(abs); err == nil {
			f.Close()
		}
	})
}

// TestOrchestratorRefusedWhenWorkspaceIsBase: with --workspace and no
// --base, WORKSPACE is BASE, and BASE/.orchestrator (every run's state) is
// still out of reach; a run's git worktree, itself under .orchestrator, is
// a WORKSPACE of its own.
func TestOrchestratorRefusedWhenWorkspaceIsBase(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	d := Dir{Base: base, Workspace: base}
	// Any case, and with trailing dots or spaces: the same folder on a
	// file system that folds case or ignores them (macOS, Windows, ext4
	// casefold folders), as for .git.
	for _, rel := range []string{".orchestrator/runs/r/state.json", "a/../.orchestrator/x", ".orchestrator", ".ORCHESTRATOR/runs/r/state.json", ".Orchestrator./x", ".orchestrator /runs"} {
		_, err := d.ResolveIn(base, rel)
		if !errors.Is(err, ErrEscape) {
			t.Errorf("ResolveIn(BASE, %q) = %v, want a violation", rel, err)
			continue
		}
		// The path is inside WORKSPACE here: the message names the run
		// folder, not "outside the workspace", which would be untrue.
		if want := "path '" + rel + "' resolves into .orchestrator/"; !strings.HasPrefix(err.Error(), want) {
			t.Errorf("ResolveIn(BASE, %q) = %q, want it to start with %q", rel, err, want)
		}
	}
	if _, err := d.ResolveIn(base, "src/main.go"); err != nil {
		t.Errorf("ResolveIn(BASE, src/main.go) = %v", err)
	}
	wt := filepath.Join(base, ".orchestrator", "worktrees", "r")
	w := Dir{Base: base, Workspace: wt}
	if _, err := w.ResolveIn(wt, "pkg/a.go"); err != nil {
		t.Errorf("worktree ResolveIn(pkg/a.go) = %v", err)
	}
	if _, err := w.ResolveIn(wt, "../../runs/r/state.json"); !errors.Is(err, ErrEscape) {
		t.Errorf("worktree ResolveIn(../../runs/r/state.json) = %v, want a violation", err)
	}
}

// TestGitComponentRefused: a path with a component git reads as a
// repository's own files (.git in any case, as a folder or a file) is a
// violation for every resolution and at the moment of a write, so no
// caller can plant hooks or configuration (CONTRACT 12.4).
func TestGitComponentRefused(t *testing.T) {
	t.Parallel()
	d := project(t)
	tests := []struct {
		name, path string
		bad        string // the component named in the error; "" = accepted
	}{
		{"config", ".git/config", ".git"},
		{"upper", ".GIT/config", ".GIT"},
		{"mixed", "x/.Git/hooks/post-commit", ".Git"},
		{"file", "sub/.git", ".git"},
		{"trailing dot", "sub/.git./config", ".git."},
		{"trailing space", ".git /config", ".git "},
		{"through dots", "a/../.git/HEAD", ".git"},
		{"gitignore", ".gitignore", ""},
		{"gitattributes", "sub/.gitattributes", ""},
		{"git without dot", "git/config", ""},
		{"longer", ".github/workflows/ci.yml", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lexErr := Lexical(tt.path)
			abs, resErr := d.Resolve(tt.path)
			raw := filepath.Join(d.Workspace, tt.path)
			writeErr := d.WriteFile(raw, []byte("x"), 0o644)
			if tt.bad == "" {
				if lexErr != nil || resErr != nil || writeErr != nil {
					t.Errorf("Lexical, Resolve, WriteFile(%q) = %v, %v, %v, want nil", tt.path, lexErr, resErr, writeErr)
				}
				return
			}
			want := "has the component '" + tt.bad + "'"
			for what, err := range map[string]error{"Lexical": lexErr, "Resolve": resErr, "WriteFile": writeErr} {
				if !errors.Is(err, ErrEscape) || !strings.Contains(err.Error(), want) {
					t.Errorf("%s(%q) = %v, want E_PATH_ESCAPE containing %q", what, tt.path, err, want)
				}
			}
			if abs != "" {
				t.Errorf("Resolve(%q) = %q, want no path", tt.path, abs)
			}
			if _, err := os.Lstat(raw); err == nil {
				t.Errorf("WriteFile(%q) wrote the file", tt.path)
			}
		})
	}
}

// TestWorkspaceOutsideBase: with --workspace DIR outside BASE (CONTRACT 2)
// paths resolve, are written and read inside DIR; leaving DIR (into BASE
// or anywhere) and symlinks inside DIR are violations, as for any
// WORKSPACE.
func TestWorkspaceOutsideBase(t *testing.T) {
	t.Parallel()
	base, ws := t.TempDir(), t.TempDir()
	if err := os.Symlink(base, filepath.Join(ws, "tobase")); err != nil {
		t.Fatal(err)
	}
	d := Dir{Base: base, Workspace: ws}
	abs, err := d.Resolve("artifacts/S/out.txt")
	if err != nil || abs != filepath.Join(ws, "artifacts", "S", "out.txt") {
		t.Fatalf("Resolve(artifacts/S/out.txt) = %q, %v", abs, err)
	}
	if err := d.WriteFile(abs, []byte("ok"), 0o644); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	f, err := d.Open(abs)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	f.Close()
	if ok, err := d.Exists(abs); !ok || err != nil {
		t.Errorf("Exists = %v, %v", ok, err)
	}
	// The no-replace writes of the inboxes work there too.
	msg, _ := d.Resolve("agents/qa/inbox/0001-a.md")
	if err := d.WriteFileNew(msg, []byte("hi"), 0o644); err != nil {
		t.Errorf("WriteFileNew: %v", err)
	}
	claim, _ := d.Resolve("agents/qa/.claims/inbox/0001-a.md")
	if err := d.LinkNew(msg, claim); err != nil {
		t.Errorf("LinkNew: %v", err)
	}
	// A claim taken back, a file a replayed call deleted: Remove works there.
	if err := d.Remove(claim); err != nil {
		t.Errorf("Remove: %v", err)
	}
	if _, err := os.Lstat(claim); !os.IsNotExist(err) {
		t.Errorf("Remove left %s: %v", claim, err)
	}
	relBase, _ := filepath.Rel(ws, filepath.Join(base, "x"))
	for _, rel := range []string{"..", "../x", relBase, "/etc/passwd", "tobase/x"} {
		if _, err := d.Resolve(rel); !errors.Is(err, ErrEscape) {
			t.Errorf("Resolve(%q) = %v, want a violation", rel, err)
		}
	}
}

// TestCheckLayout: Check refuses, without the file system, what ResolveIn
// would refuse for the layout: with WORKSPACE = BASE, a path into
// BASE/.orchestrator, also from artifacts/STEP; with the default layout
// the same path stays in WORKSPACE.
func TestCheckLayout(t *testing.T) {
	base := t.TempDir()
	def, err := New(base)
	if err != nil {
		t.Fatal(err)
	}
	same := Dir{Base: base, Workspace: base}
	art := filepath.Join(base, "artifacts", "W")
	for _, c := range []struct {
		d       Dir
		dir     string
		rel     string
		escapes bool
	}{
		{same, base, ".orchestrator/runs/x", true},
		{same, art, "../../.orchestrator/x", true},
		{same, base, "src/x", false},
		{def, def.Workspace, ".orchestrator/runs/x", false},
		{def, def.Workspace, "../x", true},
	} {
		err := c.d.Check(c.dir, c.rel)
		if got := errors.Is(err, ErrEscape); got != c.escapes {
			t.Errorf("Check(%s, %s) with workspace %s = %v, want escape %v", c.dir, c.rel, c.d.Workspace, err, c.escapes)
		}
		if _, rerr := c.d.ResolveIn(c.dir, c.rel); errors.Is(rerr, ErrEscape) != c.escapes {
			t.Errorf("ResolveIn(%s, %s) = %v, disagrees with Check", c.dir, c.rel, rerr)
		}
	}
}

// TestResolveLeaf: as Resolve, but the last component may be a link (it
// is not followed); a link above it is refused with Resolve's words.
func TestResolveLeaf(t *testing.T) {
	t.Parallel()
	d := project(t)
	tests := []struct {
		path string
		want string // accepted: the result relative to Base; else the error text
		ok   bool
	}{
		{"linkfile", "workspace/linkfile", true},
		{"linkdir", "workspace/linkdir", true},
		{"a/b/file.txt", "workspace/a/b/file.txt", true},
		{"linkdir/inner.txt", "path 'linkdir/inner.txt' passes through the symlink 'linkdir'", false},
		{"a/up/workspace/x", "path 'a/up/workspace/x' passes through the symlink 'a/up'", false},
		{"../../x", "path '../../x' resolves outside the project", false},
	}
	for _, tt := range tests {
		got, err := d.ResolveLeaf(tt.path)
		if tt.ok {
			if want := filepath.Join(d.Base, tt.want); err != nil || got != want {
				t.Errorf("ResolveLeaf(%q) = %q, %v, want %q, nil", tt.path, got, err, want)
			}
			continue
		}
		if err == nil || err.Error() != tt.want || !errors.Is(err, ErrEscape) {
			t.Errorf("ResolveLeaf(%q) = %q, %v, want error %s", tt.path, got, err, tt.want)
		}
	}
}
