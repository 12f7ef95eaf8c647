package vm_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"smith/isa"
	"smith/vm"
	"smith/workers/confine"
)

// fakeFiles answers Config.Files from a map and records the questions.
type fakeFiles struct {
	exist map[string]bool
	asked []string
}

func (f *fakeFiles) Exists(rel string) (bool, error) {
	f.asked = append(f.asked, "exists "+rel)
	return f.exist[rel], nil
}

func (f *fakeFiles) Read(dir, rel string) (string, error) {
	f.asked = append(f.asked, "read "+rel)
	return "", fs.ErrNotExist
}

// TestConfigFilesAnswersFileExists: with Config.Files set, file_exists
// asks it and not the disk (smith-temporal makes it an activity).
func TestConfigFilesAnswersFileExists(t *testing.T) {
	for _, tt := range []struct {
		name, path string
		want       string // Check's status
	}{
		{"exists only in Files", "virtual.txt", vm.StepCompleted},
		{"missing in Files", "other.txt", vm.StepSkipped},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := build(t, N{ID: "main", Blocks: []B{
				{ID: "Check", When: &isa.Cond{Op: isa.CondFileExists, X: tp(tt.path)},
					On: [][2]string{{vm.SigSuccess, "end"}, {vm.SigSkipped, "end"}, {vm.SigFailure, "end"}}},
			}})
			files := &fakeFiles{exist: map[string]bool{"virtual.txt": true}}
			r := run(t, p, &fake{}, func(c *vm.Config) {
				c.Dirs, _ = confine.New(t.TempDir())
				c.Files = files
			})
			if r.err != nil {
				t.Fatal(r.err)
			}
			if got := r.st.Steps["Check"].Status; got != tt.want {
				t.Errorf("Check = %s, want %s", got, tt.want)
			}
			if len(files.asked) != 1 || files.asked[0] != "exists "+tt.path {
				t.Errorf("Files asked %v, want one Exists(%s)", files.asked, tt.path)
			}
		})
	}
}

// TestLocalFiles: the default Files reads under the project, confined.
func TestLocalFiles(t *testing.T) {
	base := t.TempDir()
	dirs, err := confine.New(base)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dirs.Workspace, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dirs.Workspace, "a.txt"), []byte("A"), 0o644); err != nil {
		t.Fatal(err)
	}
	l := vm.LocalFiles{Dirs: dirs}
	if ok, err := l.Exists("a.txt"); !ok || err != nil {
		t.Errorf("Exists(a.txt) = %v, %v", ok, err)
	}
	if ok, err := l.Exists("b.txt"); ok || err != nil {
		t.Errorf("Exists(b.txt) = %v, %v", ok, err)
	}
	if _, err := l.Exists("../../etc/passwd"); codeOf(err) != "E_PATH_ESCAPE" {
		t.Errorf("Exists(escape) error %v, want E_PATH_ESCAPE", err)
	}
	if s, err := l.Read(dirs.Workspace, "a.txt"); s != "A" || err != nil {
		t.Errorf("Read(a.txt) = %q, %v", s, err)
	}
	if _, err := l.Read(dirs.Workspace, "b.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read(b.txt) error %v, want fs.ErrNotExist", err)
	}
	if _, err := l.Read(dirs.Workspace, "../../x"); codeOf(err) != "E_PATH_ESCAPE" {
		t.Errorf("Read(escape) error %v, want E_PATH_ESCAPE", err)
	}
}
