package builtin

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"smith/lang"
	"smith/workers/step"
)

// A fakePlanner records what UpdateChangePlan hands to the change plan
// manager.
type fakePlanner struct {
	calls     int
	runID     string
	paths     []string
	conflicts []step.Conflict
	err       error
}

func (f *fakePlanner) Add(runID string, paths []string) ([]step.Conflict, error) {
	f.calls++
	f.runID, f.paths = runID, paths
	return f.conflicts, f.err
}

// TestUpdateChangePlanParsesFileList: the worker parses the file list of the
// NEW_FILES_IDENTIFIED segment and calls the manager once with exactly that
// list; it always emits SIGNAL:SUCCESS.
func TestUpdateChangePlanParsesFileList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		payload []step.Segment
		paths   []string
		errors  []string // ERROR segment prefixes
	}{
		{"array", []step.Segment{{Type: step.SegNewFiles, Content: `["src/a.go", "src/b.go"]`}}, []string{"src/a.go", "src/b.go"}, nil},
		{"chatty and fenced", []step.Segment{{Type: "AI_RESPONSE", Content: `["x.go"]`}, {Type: step.SegNewFiles, Content: "Sure! The new files are:\n```json\n[\"pkg/new.go\"]\n```\nLet me know!"}}, []string{"pkg/new.go"}, nil},
		{"several segments", []step.Segment{{Type: step.SegNewFiles, Content: `["a"]`}, {Type: step.SegNewFiles, Content: `["b"]`}}, []string{"a", "b"}, nil},
		{"bad paths skipped", []step.Segment{{Type: step.SegNewFiles, Content: `["ok.go", "/etc/passwd", "../../../x", "../sibling", ""]`}}, []string{"ok.go"},
			[]string{"segment 1 (NEW_FILES_IDENTIFIED): path '/etc/passwd' is absolute", "segment 1 (NEW_FILES_IDENTIFIED): path '../../../x' resolves outside the project",
				"segment 1 (NEW_FILES_IDENTIFIED): path '../sibling' resolves outside the workspace", "segment 1 (NEW_FILES_IDENTIFIED): path '' is empty"}},
		{"malformed segment", []step.Segment{{Type: step.SegNewFiles, Content: "no list here"}, {Type: step.SegNewFiles, Content: `["c"]`}}, []string{"c"},
			[]string{"segment 1 (NEW_FILES_IDENTIFIED): content is not a JSON array of paths"}},
		{"not strings", []step.Segment{{Type: step.SegNewFiles, Content: `[1, 2]`}}, nil,
			[]string{"segment 1 (NEW_FILES_IDENTIFIED): content is not a JSON array of paths"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := &fakePlanner{}
			res := updateChangePlan(&step.Request{RunID: "r1", Step: "Blk", Payload: tt.payload}, "r1", f)
			if res.Signal != lang.SigSuccess {
				t.Errorf("UpdateChangePlan = %s, want %s", res.Signal, lang.SigSuccess)
			}
			if f.calls != 1 || f.runID != "r1" || !slices.Equal(f.paths, tt.paths) {
				t.Errorf("UpdateChangePlan called Add %d times with %q, %q, want once with r1, %q", f.calls, f.runID, f.paths, tt.paths)
			}
			if len(res.Segments) != len(tt.errors) {
				t.Fatalf("UpdateChangePlan segments = %q, want %d ERROR segments", segmentsText(res.Segments), len(tt.errors))
			}
			for i, want := range tt.errors {
				if s := res.Segments[i]; s.Type != step.SegError || !strings.HasPrefix(s.Content, want) {
					t.Errorf("segment %d = %s: %q, want ERROR starting %q", i, s.Type, s.Content, want)
				}
			}
		})
	}
}

func TestUpdateChangePlanAlwaysSucceeds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		payload []step.Segment
		planner *fakePlanner
		calls   int
		segs    string
	}{
		{"no segment", []step.Segment{{Type: "X", Content: "y"}}, &fakePlanner{}, 0,
			"ERROR: the payload has no NEW_FILES_IDENTIFIED segment; the change plan is unchanged\n"},
		{"manager fails", []step.Segment{{Type: step.SegNewFiles, Content: `["a"]`}}, &fakePlanner{err: errors.New("save change plan: disk full")}, 1,
			"ERROR: save change plan: disk full\n"},
		{"conflicts reported", []step.Segment{{Type: step.SegNewFiles, Content: `["a", "b"]`}},
			&fakePlanner{conflicts: []step.Conflict{{Run: "r9", Paths: []string{"b"}}, {Run: "r2", Paths: []string{"a", "b"}}}}, 1,
			"CONFLICT: {\"paths\":[\"a\",\"b\"],\"runs\":[\"r2\",\"r9\"]}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := updateChangePlan(&step.Request{RunID: "r1", Step: "Blk", Payload: tt.payload}, "r1", tt.planner)
			if got := segmentsText(res.Segments); res.Signal != lang.SigSuccess || got != tt.segs || tt.planner.calls != tt.calls {
				t.Errorf("UpdateChangePlan = %s, segments %q, %d calls, want %s, %q, %d calls", res.Signal, got, tt.planner.calls, lang.SigSuccess, tt.segs, tt.calls)
			}
		})
	}
}

// writeRun creates a run directory with a state.json of the given status
// and, when plan is not nil, a change plan.
func writeRun(t *testing.T, runsDir, id, status string, plan []string) {
	t.Helper()
	root := filepath.Join(runsDir, id)
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	state := `{"run_id": "` + id + `", "status": "` + status + `"}`
	if err := os.WriteFile(filepath.Join(root, "state.json"), []byte(state), 0o644); err != nil {
		t.Fatal(err)
	}
	if plan != nil {
		if err := writePlan(root, plan); err != nil {
			t.Fatal(err)
		}
	}
}

// TestUpdateChangePlanConflicts runs the real worker: the plan is saved in
// RUN_ROOT/changeplan.json and compared with the other active runs' plans.
func TestUpdateChangePlanConflicts(t *testing.T) {
	t.Parallel()
	p := newIWProject(t)
	runsDir := filepath.Dir(p.runRoot)
	writeRun(t, runsDir, "r1", "running", []string{"old.go"})
	writeRun(t, runsDir, "r2", "running", []string{"b.go", "z.go"})
	writeRun(t, runsDir, "r3", "succeeded", []string{"a.go", "b.go"})
	writeRun(t, runsDir, "r4", "halted", []string{"old.go"})
	writeRun(t, runsDir, "r5", "failed", []string{"old.go"})
	writeRun(t, runsDir, "r6", "running", nil)
	if err := os.WriteFile(filepath.Join(runsDir, "stray-file"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	req := p.request(lang.InternalUpdateChangePlan, step.Segment{Type: step.SegNewFiles, Content: `["b.go", "./a.go", "dir/../a.go", "b.go"]`})
	res := runIW(t, req)
	if got, want := segmentsText(res.Segments), "CONFLICT: {\"paths\":[\"b.go\",\"old.go\"],\"runs\":[\"r2\",\"r4\"]}\n"; res.Signal != lang.SigSuccess || got != want {
		t.Errorf("UpdateChangePlan = %s, segments %q, want %s, %q", res.Signal, got, lang.SigSuccess, want)
	}
	plan, err := ChangePlan(p.runRoot)
	if want := []string{"a.go", "b.go", "old.go"}; err != nil || !slices.Equal(plan, want) {
		t.Errorf("ChangePlan(r1) = %q, %v, want %q", plan, err, want)
	}
	if b, err := os.ReadFile(filepath.Join(p.runRoot, "changeplan.json")); err != nil || string(b) != "[\"a.go\",\"b.go\",\"old.go\"]\n" {
		t.Errorf("changeplan.json = %q, %v", b, err)
	}
	if other, _ := ChangePlan(filepath.Join(runsDir, "r2")); !slices.Equal(other, []string{"b.go", "z.go"}) {
		t.Errorf("ChangePlan(r2) = %q, want it unchanged", other)
	}
}

func TestChangePlanStore(t *testing.T) {
	t.Parallel()
	runsDir := t.TempDir()
	s := ChangePlanStore{RunsDir: runsDir}
	if plan, err := ChangePlan(filepath.Join(runsDir, "new")); err != nil || plan != nil {
		t.Errorf("ChangePlan(no plan) = %q, %v, want nil, nil", plan, err)
	}
	conflicts, err := s.Add("new", []string{"b", "a", "b"})
	if err != nil || len(conflicts) != 0 {
		t.Fatalf("Add(new) = %v, %v, want no conflicts", conflicts, err)
	}
	if plan, _ := ChangePlan(filepath.Join(runsDir, "new")); !slices.Equal(plan, []string{"a", "b"}) {
		t.Errorf("ChangePlan(new) = %q, want [a b]", plan)
	}
	writeRun(t, runsDir, "other", "running", []string{"b", "c"})
	conflicts, err = s.Add("new", nil)
	if err != nil || len(conflicts) != 1 || conflicts[0].Run != "other" || !slices.Equal(conflicts[0].Paths, []string{"b"}) {
		t.Errorf("Add(new, nil) = %+v, %v, want a conflict with other on [b]", conflicts, err)
	}
	for _, id := range []string{"", ".", "..", "a/b"} {
		if _, err := s.Add(id, []string{"x"}); err == nil {
			t.Errorf("Add(%q) = nil error, want a bad run id", id)
		}
	}
	if err := os.WriteFile(filepath.Join(runsDir, "new", "changeplan.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ChangePlan(filepath.Join(runsDir, "new")); err == nil {
		t.Errorf("ChangePlan(corrupt) = nil error, want one")
	}
}

func TestUpdateChangePlanWithoutRunRoot(t *testing.T) {
	t.Parallel()
	p := newIWProject(t)
	req := p.request(lang.InternalUpdateChangePlan, step.Segment{Type: step.SegNewFiles, Content: `["a"]`})
	req.RunRoot = ""
	res := runIW(t, req)
	if res.Signal != lang.SigSuccess || len(res.Segments) != 1 || res.Segments[0].Type != step.SegError {
		t.Errorf("UpdateChangePlan without RUN_ROOT = %s, segments %q, want %s and an ERROR", res.Signal, segmentsText(res.Segments), lang.SigSuccess)
	}
}
