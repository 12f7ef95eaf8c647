package store

import (
	"os"
	"path/filepath"
	"testing"

	"smith/manifest/source"
)

// TestCreateAfterStillbornRun: a run killed before anything of it was
// durable (its directory, lock and an empty or torn journal, no state.json)
// does not brick its id: Create takes it over; a run with a state still
// "already exists" (issue 8, point 3).
func TestCreateAfterStillbornRun(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		journal string // "-" for none
		state   bool
		reuse   bool
	}{
		{"empty journal", "", false, true},
		{"no journal", "-", false, true},
		{"torn first line", `{"seq":1,"delta":{"se`, false, true},
		{"a durable delta", "{\"seq\":1,\"delta\":{}}\n", false, false},
		{"a state", "", true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			r, err := s.Create("x")
			if err != nil {
				t.Fatal(err)
			}
			r.Close()
			j := filepath.Join(r.Root(), journalFile)
			if tt.journal == "-" {
				os.Remove(j)
			} else if err := os.WriteFile(j, []byte(tt.journal), 0o644); err != nil {
				t.Fatal(err)
			}
			if tt.state {
				os.WriteFile(filepath.Join(r.Root(), stateFile), []byte(`{"journal_seq":0}`), 0o644)
			}
			r2, err := s.Create("x")
			if !tt.reuse {
				if codeOf(err) != source.EUsage {
					t.Fatalf("Create over a run with a state: %v, want already exists", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Create over a stillborn run: %v", err)
			}
			defer r2.Close()
			if err := r2.AppendJournal(map[string]int{"a": 1}); err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, j); got != "{\"seq\":1,\"delta\":{\"a\":1}}\n" {
				t.Errorf("journal after reuse = %q", got)
			}
		})
	}
}

// TestNeverWriteUnreadableState: a snapshot or a journal entry nested too
// deep to be read back is refused with E_LIMIT, and the last good state stays
// (issue 8, point 6).
func TestNeverWriteUnreadableState(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	r, err := s.Create("deep")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.WriteSnapshot(map[string]any{"ok": 1}); err != nil {
		t.Fatal(err)
	}
	good := readFile(t, filepath.Join(r.Root(), stateFile))
	var deep any = 1
	for i := 0; i < 10001; i++ {
		deep = []any{deep}
	}
	if err := r.WriteSnapshot(map[string]any{"v": deep}); codeOf(err) != source.ELimit {
		t.Errorf("WriteSnapshot(10001 deep) = %v, want E_LIMIT", err)
	}
	if err := r.AppendJournal(map[string]any{"v": deep}); codeOf(err) != source.ELimit {
		t.Errorf("AppendJournal(10001 deep) = %v, want E_LIMIT", err)
	}
	if got := readFile(t, filepath.Join(r.Root(), stateFile)); got != good {
		t.Errorf("state.json changed to %.80q", got)
	}
	r.Close()
	r2, err := s.Open("deep")
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	var st map[string]any
	if err := r2.Load(&st, func([]byte) error { return nil }); err != nil {
		t.Errorf("Load after the refused writes: %v", err)
	}
}
