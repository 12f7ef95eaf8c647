package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"smith/source"
	"smith/vm"
)

// TestSaveAndReplay: the deltas a run saves come back as its state, from
// the journal (ReadState, no lock) and for a resume (State, locked), and
// the snapshot policy writes state.json at the first change.
func TestSaveAndReplay(t *testing.T) {
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Create("r1")
	if err != nil {
		t.Fatal(err)
	}
	st := &vm.State{}
	deltas := []*vm.Delta{
		{Seq: 1, CurrentStep: "A", Status: vm.StatusRunning, Start: &vm.RunStart{RunID: "r1", WorkflowName: "w", WorkflowPath: "w.yaml", ProgramHash: "h", StartedAt: "2026-01-01T00:00:00Z"}},
		{Seq: 2, CurrentStep: "B", Status: vm.StatusRunning},
	}
	for _, d := range deltas {
		st.Apply(d)
		if err := r.Save(d, st); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.ReadState("r1")
	if err != nil {
		t.Fatal(err)
	}
	if got.RunID != "r1" || got.CurrentStep != "B" || got.Seq != 2 {
		t.Errorf("ReadState = run %q step %q seq %d; want r1, B, 2 (the journal replayed over the first snapshot)", got.RunID, got.CurrentStep, got.Seq)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r, err = s.Open("r1")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err = r.State()
	if err != nil {
		t.Fatalf("State: %v", err)
	}
	if got.CurrentStep != "B" {
		t.Errorf("State().CurrentStep = %q, want B", got.CurrentStep)
	}
	if _, err := s.ReadState("nope"); source.CodeOf(err, "") != source.EStateNotFound {
		t.Errorf("ReadState(nope) = %v, want E_STATE_NOT_FOUND", err)
	}
}

// TestCatchUpWhileStepRuns: a step's running record (a deferred delta)
// reaches state.json itself once the step has run for Policy.CatchUp with
// no other change, so state.json names the step running now; a change
// that follows at once (a quick step) leaves the snapshot policy alone.
func TestCatchUpWhileStepRuns(t *testing.T) {
	t.Parallel()
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.Policy = Policy{CatchUp: 20 * time.Millisecond}
	r, err := s.Create("r1")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	st := &vm.State{}
	save := func(d *vm.Delta) {
		t.Helper()
		st.Apply(d)
		if err := r.Save(d, st); err != nil {
			t.Fatal(err)
		}
	}
	snapStep := func() string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(s.RunsDir(), "r1", "state.json"))
		if err != nil {
			t.Fatal(err)
		}
		var top struct {
			CurrentStep string `json:"current_step"`
			Steps       map[string]struct {
				Status    string `json:"status"`
				StartedAt string `json:"started_at"`
				Attempts  int    `json:"attempts"`
			} `json:"steps"`
		}
		if err := json.Unmarshal(b, &top); err != nil {
			t.Fatal(err)
		}
		b2 := top.Steps[top.CurrentStep]
		return fmt.Sprintf("%s %s %s %d", top.CurrentStep, b2.Status, b2.StartedAt, b2.Attempts)
	}
	save(&vm.Delta{Seq: 1, CurrentStep: "A", Status: vm.StatusRunning, Start: &vm.RunStart{RunID: "r1", WorkflowName: "w", WorkflowPath: "w.yaml", ProgramHash: "h", StartedAt: "2026-01-01T00:00:00Z"}})
	running := func(seq int, step string) *vm.Delta {
		return &vm.Delta{Seq: seq, CurrentStep: step, Status: vm.StatusRunning, Deferred: true,
			Steps: []vm.StepChange{{Name: step, Result: vm.StepResult{Status: vm.StepRunning, StartedAt: "2026-01-01T00:00:0" + step + "Z", Attempts: 1}}}}
	}
	// A quick step: its result follows before the catch-up is due.
	save(running(2, "1"))
	save(&vm.Delta{Seq: 3, CurrentStep: "1", Status: vm.StatusRunning, Steps: []vm.StepChange{{Name: "1", Result: vm.StepResult{Status: "completed", Attempts: 1}}}})
	time.Sleep(60 * time.Millisecond)
	if got := snapStep(); got != "A   0" {
		t.Errorf("state.json after a quick step = %q, want the first snapshot's %q (no catch-up after a later change)", got, "A   0")
	}
	// A long step: state.json names it, with its start and attempt.
	save(running(4, "2"))
	want := "2 running 2026-01-01T00:00:02Z 1"
	deadline := time.Now().Add(5 * time.Second)
	for snapStep() != want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := snapStep(); got != want {
		t.Errorf("state.json while step 2 runs = %q, want %q", got, want)
	}
	got, err := s.ReadState("r1")
	if err != nil || got.Seq != 4 || got.Steps["1"].Status != "completed" {
		t.Errorf("ReadState after the catch-up = %+v, %v; want seq 4 with step 1 completed", got, err)
	}
}

// TestEncodeState: the snapshot's *vm.State encodes itself
// (vm.State.AppendJSON, no reflection), in the bytes encoding/json writes.
func TestEncodeState(t *testing.T) {
	var st any = &vm.State{RunID: "r", Status: vm.StatusRunning, Context: map[string]any{"a": "<b&c>", "n": []any{1.5, nil}},
		Steps: map[string]*vm.StepResult{"B": {Status: vm.StepCompleted, Output: "x\ny"}, "A": nil}}
	if _, ok := st.(jsonAppender); !ok {
		t.Fatal("*vm.State is not a jsonAppender: every snapshot goes through reflection")
	}
	var got, want bytes.Buffer
	if err := encode(&got, st); err != nil {
		t.Fatal(err)
	}
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(st); err != nil {
		t.Fatal(err)
	}
	if w := bytes.TrimSuffix(want.Bytes(), []byte("\n")); !bytes.Equal(got.Bytes(), w) {
		t.Fatalf("encode(state) =\n%s\nwant\n%s", got.Bytes(), w)
	}
}
