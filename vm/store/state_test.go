package store

import (
	"testing"

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
