package vm

import (
	"errors"
	"io/fs"
	"testing"

	"smith/isa"
	"smith/lang"
	"smith/workers"
	"smith/workers/confine"
)

// This machine's Host is a Host, and counts the lines of a commit. (The
// check lives in a test: the VM imports no worker.)
var (
	_ Host        = workers.Local{}
	_ lineCounter = workers.Local{}
)

// fakeHost answers file questions from a map, touching no disk.
type fakeHost struct {
	workers.Local // the git and message effects, unused here
	files         map[string]string
	asked         []string
}

func (h *fakeHost) FileExists(_ confine.Dir, rel string) (bool, error) {
	h.asked = append(h.asked, "exists "+rel)
	_, ok := h.files[rel]
	return ok, nil
}

func (h *fakeHost) ReadArtifact(_ confine.Dir, _, path string) (string, error) {
	h.asked = append(h.asked, "read "+path)
	if s, ok := h.files[path]; ok {
		return s, nil
	}
	return "", fs.ErrNotExist
}

// TestHostIsTheOnlyDoor: file_exists and ARTIFACT: reads go to the Host
// the machine is given, not to the disk (the project directory does not
// exist).
func TestHostIsTheOnlyDoor(t *testing.T) {
	h := &fakeHost{files: map[string]string{"docs/plan.md": "the plan"}}
	m := &Machine{p: &isa.Program{}, st: &State{}, cfg: Config{Host: h, Dirs: confine.Dir{Base: "/nonexistent", Workspace: "/nonexistent/ws"}}}
	x := lang.Lit("docs/plan.md")
	ok, err := m.fileExists(scope{}, &isa.Cond{X: &x})
	if err != nil || !ok {
		t.Errorf("file_exists docs/plan.md = %v, %v; want true from the Host", ok, err)
	}
	y := lang.Lit("missing.md")
	if ok, err := m.fileExists(scope{}, &isa.Cond{X: &y}); err != nil || ok {
		t.Errorf("file_exists missing.md = %v, %v; want false", ok, err)
	}
	text, err := m.readArtifact("docs/plan.md")
	if err != nil || text != "the plan" {
		t.Errorf("ARTIFACT:docs/plan.md = %q, %v; want the Host's text", text, err)
	}
	if _, err := m.readArtifact("nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ARTIFACT:nope error = %v, want fs.ErrNotExist", err)
	}
	if len(h.asked) != 4 {
		t.Errorf("the Host was asked %v, want 4 questions", h.asked)
	}
}
