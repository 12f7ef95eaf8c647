package store

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"smith/source"
	"smith/vm"
)

// codeOf returns the code carried by err, or "" when it has none.
func codeOf(err error) source.Code {
	var c source.Coded
	if errors.As(err, &c) {
		return c.ErrCode()
	}
	return ""
}

// newStore returns a Store over a fresh temporary BASE.
func newStore(t testing.TB) *Store {
	t.Helper()
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

// readFile returns the contents of path, or "<missing>".
func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "<missing>"
	}
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return string(b)
}

func TestNewRelativeBase(t *testing.T) {
	t.Parallel()
	if _, err := New("relative/base"); err == nil {
		t.Errorf("New(%q) = nil error, want an error", "relative/base")
	}
}

func TestValidRunID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		id   string
		want bool
	}{
		{"uuid", "0f8fad5b-d9cb-469f-a165-70867728950e", true},
		{"all classes", "Ab_9.-z", true},
		{"one char", "a", true},
		{"64 chars", strings.Repeat("x", 64), true},
		{"65 chars", strings.Repeat("x", 65), false},
		{"empty", "", false},
		{"dot", ".", false},
		{"dotdot", "..", false},
		{"three dots", "...", true},
		{"leading dot", ".hidden", true},
		{"slash", "a/b", false},
		{"backslash", `a\b`, false},
		{"space", "a b", false},
		{"nul", "a\x00b", false},
		{"non-ascii", "ré", false},
		{"colon", "a:b", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := ValidRunID(tt.id); got != tt.want {
				t.Errorf("ValidRunID(%q) = %v, want %v", tt.id, got, tt.want)
			}
		})
	}
}

func TestNewRunID(t *testing.T) {
	t.Parallel()
	canon := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 200 {
		id := NewRunID()
		if !canon.MatchString(id) {
			t.Fatalf("NewRunID() = %q, want a lowercase canonical UUID v4", id)
		}
		if !ValidRunID(id) {
			t.Fatalf("ValidRunID(NewRunID() = %q) = false, want true", id)
		}
		if seen[id] {
			t.Fatalf("NewRunID() = %q twice", id)
		}
		seen[id] = true
	}
}

func TestCreateOpenLock(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	r, err := s.Create("r1")
	if err != nil {
		t.Fatalf("Create(%q): %v", "r1", err)
	}
	for _, d := range []string{"", "logs"} {
		if fi, err := os.Stat(filepath.Join(s.RunsDir(), "r1", d)); err != nil || !fi.IsDir() {
			t.Errorf("Create(%q): directory %q missing (%v)", "r1", d, err)
		}
	}
	// iterations/ is made by the first AppendIteration (TestAppendEventAndIteration).
	if _, err := os.Stat(filepath.Join(s.RunsDir(), "r1", "iterations")); !os.IsNotExist(err) {
		t.Errorf("Create(%q): iterations/ exists (%v), want it made at the first iteration record", "r1", err)
	}
	if got, want := r.Root(), filepath.Join(s.Base, ".orchestrator", "runs", "r1"); got != want {
		t.Errorf("Root() = %q, want %q", got, want)
	}
	if got := r.ID(); got != "r1" {
		t.Errorf("ID() = %q, want %q", got, "r1")
	}

	_, err = s.Create("r1")
	if codeOf(err) != source.EUsage || !strings.Contains(err.Error(), "run 'r1' already exists") {
		t.Errorf("second Create(%q) = %v, want E_USAGE run 'r1' already exists", "r1", err)
	}

	// flock is per open file description: a second Open in this process
	// must be refused while the first holds the lock.
	_, err = s.Open("r1")
	want := "run 'r1' is being driven by another smithvm process (pid " + strconv.Itoa(os.Getpid()) + ")"
	if codeOf(err) != source.ERunLocked || err.Error() != want {
		t.Errorf("Open(%q) while created = %v, want E_RUN_LOCKED %q", "r1", err, want)
	}
	if err := r.WriteSnapshot(map[string]any{}); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}

	r2, err := s.Open("r1")
	if err != nil {
		t.Fatalf("Open(%q) after Close: %v", "r1", err)
	}
	if _, err := s.Open("r1"); codeOf(err) != source.ERunLocked {
		t.Errorf("Open(%q) while opened = %v, want E_RUN_LOCKED", "r1", err)
	}
	if err := r2.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := r2.AppendEvent(vm.Event{Seq: 1}); err == nil {
		t.Errorf("AppendEvent after Close = nil, want an error")
	}
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	if err := os.MkdirAll(s.RunsDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.RunsDir(), "afile"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		id   string
		code source.Code
		msg  string
	}{
		{"unknown", "nope", source.EStateNotFound, "no run 'nope' under " + s.Base},
		{"not a directory", "afile", source.EStateNotFound, "no run 'afile' under " + s.Base},
		{"invalid id", "../x", source.EUsage, "invalid run id"},
		{"empty id", "", source.EUsage, "invalid run id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Open(tt.id)
			if codeOf(err) != tt.code || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Open(%q) = %v, want %s %q", tt.id, err, tt.code, tt.msg)
			}
		})
	}
	if _, err := s.Create("a/b"); codeOf(err) != source.EUsage {
		t.Errorf("Create(%q) = %v, want E_USAGE", "a/b", err)
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	const missing = "<missing>"
	tests := []struct {
		name    string
		state   string // state.json, or missing
		journal string
		tmp     bool // leave a state.json.tmp behind
		code    source.Code
		errMsg  string
		want    string // the loaded state, then the applied deltas
		journ   string // the journal file after Load, when different
	}{
		{name: "snapshot only", state: `{"a":1,"journal_seq":0}`, want: `{"a":1} []`},
		{name: "snapshot without journal_seq", state: `{"a":1}`, want: `{"a":1} []`},
		{
			name:    "journal replay order",
			state:   `{"a":1,"journal_seq":2}`,
			journal: "{\"seq\":3,\"delta\":{\"n\":3}}\n{\"seq\":4,\"delta\":\"four\"}\n{\"seq\":5,\"delta\":[5]}\n",
			want:    `{"a":1} [{"n":3} "four" [5]]`,
		},
		{
			name:    "lines in the snapshot skipped",
			state:   `{"a":1,"journal_seq":2}`,
			journal: "{\"seq\":1,\"delta\":1}\n{\"seq\":2,\"delta\":2}\n{\"seq\":3,\"delta\":3}\n",
			want:    `{"a":1} [3]`,
		},
		{
			name:    "all lines in the snapshot",
			state:   `{"a":1,"journal_seq":2}`,
			journal: "{\"seq\":1,\"delta\":1}\n{\"seq\":2,\"delta\":2}\n",
			want:    `{"a":1} []`,
		},
		{
			name:    "torn last line ignored and cut",
			state:   `{"journal_seq":0}`,
			journal: "{\"seq\":1,\"delta\":1}\n{\"seq\":2,\"del",
			want:    `{} [1]`,
			journ:   "{\"seq\":1,\"delta\":1}\n",
		},
		{
			name:    "unterminated complete last line ignored",
			state:   `{"journal_seq":0}`,
			journal: "{\"seq\":1,\"delta\":1}\n{\"seq\":2,\"delta\":2}",
			want:    `{} [1]`,
			journ:   "{\"seq\":1,\"delta\":1}\n",
		},
		{
			name:    "garbage middle line",
			state:   `{"journal_seq":0}`,
			journal: "{\"seq\":1,\"delta\":1}\n{\"seq\":2,\"de\n{\"seq\":3,\"delta\":3}\n",
			code:    source.EStateCorrupt, errMsg: "state of run 'r' is corrupt: journal line 2",
		},
		{
			name:    "terminated garbage last line",
			state:   `{"journal_seq":0}`,
			journal: "{\"seq\":1,\"delta\":1}\nxx\n",
			code:    source.EStateCorrupt, errMsg: "journal line 2",
		},
		{
			name:    "line without delta",
			state:   `{"journal_seq":0}`,
			journal: "{\"seq\":1}\n",
			code:    source.EStateCorrupt, errMsg: "journal line 1: want seq and delta",
		},
		{
			name:    "gap in seq",
			state:   `{"journal_seq":0}`,
			journal: "{\"seq\":1,\"delta\":1}\n{\"seq\":3,\"delta\":3}\n",
			code:    source.EStateCorrupt, errMsg: "journal line 2: seq 3 after 1",
		},
		{
			name:    "journal does not continue the snapshot",
			state:   `{"journal_seq":2}`,
			journal: "{\"seq\":4,\"delta\":4}\n",
			code:    source.EStateCorrupt, errMsg: "seq 4, want 3",
		},
		{name: "invalid state json", state: `{"a":`, code: source.EStateCorrupt, errMsg: "state of run 'r' is corrupt: unexpected end of JSON input"},
		{name: "empty state file", state: ``, code: source.EStateCorrupt, errMsg: "state of run 'r' is corrupt"},
		{name: "state not an object", state: `[1,2]`, code: source.EStateCorrupt, errMsg: "state of run 'r' is corrupt"},
		{name: "state null", state: `null`, code: source.EStateCorrupt, errMsg: "not a JSON object"},
		{name: "bad journal_seq", state: `{"journal_seq":"x"}`, code: source.EStateCorrupt, errMsg: "bad journal_seq"},
		{name: "no state no journal", state: missing, code: source.EStateCorrupt, errMsg: "state of run 'r' is corrupt: run has no state"},
		{name: "no state torn journal only", state: missing, journal: "{\"seq\":1,", code: source.EStateCorrupt, errMsg: "run has no state"},
		{
			name:    "no state journal applied to zero state",
			state:   missing,
			journal: "{\"seq\":1,\"delta\":{\"x\":1}}\n{\"seq\":2,\"delta\":{\"x\":2}}\n",
			want:    `null [{"x":1} {"x":2}]`,
		},
		{
			name:    "no state journal not from the start",
			state:   missing,
			journal: "{\"seq\":5,\"delta\":5}\n",
			code:    source.EStateCorrupt, errMsg: "seq 5, want 1",
		},
		{name: "leftover tmp discarded", state: `{"a":2,"journal_seq":0}`, tmp: true, want: `{"a":2} []`},
		{
			name:    "apply error",
			state:   `{"journal_seq":0}`,
			journal: "{\"seq\":1,\"delta\":{\"bad\":true}}\n",
			code:    source.EStateCorrupt, errMsg: "journal entry 1: bad delta",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			r, err := s.Create("r")
			if err != nil {
				t.Fatal(err)
			}
			r.Close()
			root := filepath.Join(s.RunsDir(), "r")
			if tt.state != missing {
				if err := os.WriteFile(filepath.Join(root, "state.json"), []byte(tt.state), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(root, "journal.jsonl"), []byte(tt.journal), 0o644); err != nil {
				t.Fatal(err)
			}
			if tt.tmp {
				if err := os.WriteFile(filepath.Join(root, "state.json.tmp"), []byte(`{"a":`), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r, err = s.Open("r")
			if err != nil && tt.code != "" && tt.state == missing {
				// A run with no state is refused by Open already.
				if codeOf(err) != tt.code || !strings.Contains(err.Error(), tt.errMsg) {
					t.Fatalf("Open() = %v, want %s %q", err, tt.code, tt.errMsg)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer r.Close()
			var state map[string]any
			var applied []string
			err = r.Load(&state, func(d []byte) error {
				if string(d) == `{"bad":true}` {
					return errors.New("bad delta")
				}
				applied = append(applied, string(d))
				return nil
			})
			if tt.code != "" {
				if codeOf(err) != tt.code || !strings.Contains(err.Error(), tt.errMsg) {
					t.Fatalf("Load() = %v, want %s %q", err, tt.code, tt.errMsg)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load() = %v, want nil", err)
			}
			sb, _ := json.Marshal(state)
			got := string(sb) + " [" + strings.Join(applied, " ") + "]"
			if got != tt.want {
				t.Errorf("Load() loaded %s, want %s", got, tt.want)
			}
			if tt.tmp {
				if _, err := os.Stat(filepath.Join(root, "state.json.tmp")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("Load() left state.json.tmp behind (stat: %v)", err)
				}
			}
			wantJ := tt.journal
			if tt.journ != "" {
				wantJ = tt.journ
			}
			if got := readFile(t, filepath.Join(root, "journal.jsonl")); got != wantJ {
				t.Errorf("journal after Load() = %q, want %q", got, wantJ)
			}
		})
	}
}

// loadAll opens run id and loads it, returning the state and the deltas.
func loadAll(t *testing.T, s *Store, id string) (*Run, map[string]any, []string) {
	t.Helper()
	r, err := s.Open(id)
	if err != nil {
		t.Fatalf("Open(%q): %v", id, err)
	}
	var state map[string]any
	var deltas []string
	if err := r.Load(&state, func(d []byte) error { deltas = append(deltas, string(d)); return nil }); err != nil {
		r.Close()
		t.Fatalf("Load: %v", err)
	}
	return r, state, deltas
}

func TestSnapshotAndJournalFormat(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	r, err := s.Create("fmt")
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range []any{map[string]any{"step": "A", "out": "<a&b>"}, []byte(" { \"raw\" : [1, 2] } "), json.RawMessage(`"x"`)} {
		if err := r.AppendJournal(d); err != nil {
			t.Fatalf("AppendJournal #%d: %v", i, err)
		}
	}
	wantJ := `{"seq":1,"delta":{"out":"<a&b>","step":"A"}}` + "\n" +
		`{"seq":2,"delta":{"raw":[1,2]}}` + "\n" +
		`{"seq":3,"delta":"x"}` + "\n"
	if got := readFile(t, filepath.Join(r.Root(), "journal.jsonl")); got != wantJ {
		t.Errorf("journal = %q, want %q", got, wantJ)
	}
	if err := r.AppendJournal([]byte("{bad")); err == nil {
		t.Errorf("AppendJournal(invalid raw JSON) = nil, want an error")
	}
	if err := r.WriteSnapshot([]int{1}); err == nil {
		t.Errorf("WriteSnapshot(array) = nil, want an error")
	}

	type st struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
	}
	if err := r.WriteSnapshot(st{"fmt", "running"}); err != nil {
		t.Fatalf("WriteSnapshot: %v", err)
	}
	wantS := "{\n  \"run_id\": \"fmt\",\n  \"status\": \"running\",\n  \"journal_seq\": 3\n}\n"
	if got := readFile(t, filepath.Join(r.Root(), "state.json")); got != wantS {
		t.Errorf("state.json = %q, want %q", got, wantS)
	}
	if got := readFile(t, filepath.Join(r.Root(), "journal.jsonl")); got != "" {
		t.Errorf("journal after WriteSnapshot = %q, want empty", got)
	}
	if _, err := os.Stat(filepath.Join(r.Root(), "state.json.tmp")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("WriteSnapshot left state.json.tmp (stat: %v)", err)
	}
	if err := r.AppendJournal(map[string]int{"n": 4}); err != nil {
		t.Fatal(err)
	}
	if got, want := readFile(t, filepath.Join(r.Root(), "journal.jsonl")), "{\"seq\":4,\"delta\":{\"n\":4}}\n"; got != want {
		t.Errorf("journal after a snapshot and an append = %q, want %q", got, want)
	}
	if err := r.WriteSnapshot(map[string]any{}); err != nil {
		t.Fatal(err)
	}
	if got, want := readFile(t, filepath.Join(r.Root(), "state.json")), "{\n  \"journal_seq\": 4\n}\n"; got != want {
		t.Errorf("state.json of {} = %q, want %q", got, want)
	}
	r.Close()
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	r, err := s.Create("rt")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.AppendJournal(1); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteSnapshot(map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	if err := r.AppendJournal(2); err != nil {
		t.Fatal(err)
	}
	if err := r.AppendJournal(3); err != nil {
		t.Fatal(err)
	}
	r.Close()

	r, state, deltas := loadAll(t, s, "rt")
	if got, want := state["n"], any(1.0); got != want || len(state) != 1 {
		t.Errorf("loaded state = %v, want map[n:1] (journal_seq hidden)", state)
	}
	if got, want := strings.Join(deltas, ","), "2,3"; got != want {
		t.Errorf("applied deltas = %q, want %q", got, want)
	}
	// Appends continue the sequence after a Load.
	if err := r.AppendJournal(4); err != nil {
		t.Fatal(err)
	}
	r.Close()
	r, _, deltas = loadAll(t, s, "rt")
	r.Close()
	if got, want := strings.Join(deltas, ","), "2,3,4"; got != want {
		t.Errorf("applied deltas after reopen = %q, want %q", got, want)
	}
}

// TestStage: a staged delta takes its place in the sequence like any
// other, a Load reads it whether or not a synced append followed, and it
// never writes a snapshot (the unsynced running record of a step, vm.Delta.Deferred).
func TestStage(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	s.Policy = Policy{Every: 1, Interval: time.Hour}
	r, err := s.Create("stage")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteSnapshot(map[string]any{"n": 0}); err != nil {
		t.Fatal(err)
	}
	if err := r.Stage(1); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(r.Root(), "state.json")); err != nil || !strings.Contains(string(b), `"journal_seq": 0`) {
		t.Errorf("state.json after Stage = %s (%v), want the snapshot before it (journal_seq 0)", b, err)
	}
	if err := r.Stage(2); err != nil {
		t.Fatal(err)
	}
	r.Close()
	r, _, deltas := loadAll(t, s, "stage")
	if got, want := strings.Join(deltas, ","), "1,2"; got != want {
		t.Errorf("applied deltas = %q, want %q", got, want)
	}
	calls := 0
	if err := r.Checkpoint(3, func() any { calls++; return map[string]any{"n": 3} }, false); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Errorf("Checkpoint after staged deltas wrote %d snapshots, want 1 (Every 1)", calls)
	}
	r.Close()
}

// TestSnapshotUnchangedNotRewritten: the same state with no delta since the
// last snapshot is not written again (a run's last change, then its final
// save); a changed state or a delta since is.
func TestSnapshotUnchangedNotRewritten(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	r, err := s.Create("same")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	inode := func() uint64 {
		st, err := os.Stat(filepath.Join(r.Root(), "state.json"))
		if err != nil {
			t.Fatal(err)
		}
		return st.Sys().(*syscall.Stat_t).Ino
	}
	if err := r.WriteSnapshot(map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	first := inode()
	if err := r.WriteSnapshot(map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	if inode() != first {
		t.Errorf("an unchanged snapshot was written again")
	}
	if err := r.AppendJournal(2); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteSnapshot(map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	second := inode()
	if second == first {
		t.Errorf("a snapshot after a delta was not written")
	}
	if err := r.WriteSnapshot(map[string]any{"n": 3}); err != nil {
		t.Fatal(err)
	}
	if inode() == second {
		t.Errorf("a changed snapshot was not written")
	}
}

func TestTornTailThenAppend(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	r, err := s.Create("torn")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteSnapshot(map[string]any{}); err != nil {
		t.Fatal(err)
	}
	if err := r.AppendJournal(1); err != nil {
		t.Fatal(err)
	}
	r.Close()
	f, err := os.OpenFile(filepath.Join(s.RunsDir(), "torn", "journal.jsonl"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"seq":2,"del`)
	f.Close()

	r, _, _ = loadAll(t, s, "torn")
	if err := r.AppendJournal(2); err != nil {
		t.Fatal(err)
	}
	r.Close()
	r, _, deltas := loadAll(t, s, "torn")
	r.Close()
	if got, want := strings.Join(deltas, ","), "1,2"; got != want {
		t.Errorf("deltas after a torn line and a new append = %q, want %q", got, want)
	}
}

func TestWriteBeforeLoad(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	r, err := s.Create("early")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteSnapshot(map[string]any{}); err != nil {
		t.Fatal(err)
	}
	r.Close()
	r, err = s.Open("early")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.AppendJournal(1); err == nil {
		t.Errorf("AppendJournal before Load = nil, want an error")
	}
	if err := r.WriteSnapshot(map[string]any{}); err == nil {
		t.Errorf("WriteSnapshot before Load = nil, want an error")
	}
}

// fakeClock is a settable clock for Policy.Now.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestCheckpoint(t *testing.T) {
	t.Parallel()
	type step struct {
		advance time.Duration
		force   bool
		snap    bool // want a snapshot after this checkpoint
	}
	tests := []struct {
		name  string
		pol   Policy
		steps []step
	}{
		{"every 3", Policy{Every: 3, Interval: time.Hour}, []step{{0, false, false}, {0, false, false}, {0, false, true}, {0, false, false}, {0, false, false}, {0, false, true}}},
		{"interval", Policy{Every: 100, Interval: time.Second}, []step{{500 * time.Millisecond, false, false}, {400 * time.Millisecond, false, false}, {100 * time.Millisecond, false, true}, {time.Millisecond, false, false}, {2 * time.Second, false, true}}},
		{"force", Policy{Every: 100, Interval: time.Hour}, []step{{0, false, false}, {0, true, true}, {0, false, false}}},
		{"defaults", Policy{}, []step{{time.Second, false, false}, {time.Second, false, true}}},
	}
	// DefaultEvery checkpoints within a second (a fast run's 500 steps):
	// the last one writes the snapshot, none before it.
	every := make([]step, 1000)
	every[len(every)-1].snap = true
	tests = append(tests, struct {
		name  string
		pol   Policy
		steps []step
	}{"default every", Policy{}, every})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := &fakeClock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
			s := newStore(t)
			s.Policy = tt.pol
			s.Policy.Now = clock.now
			r, err := s.Create("cp")
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			n := 0
			snaps := 0
			for i, st := range tt.steps {
				clock.t = clock.t.Add(st.advance)
				n++
				calls := 0
				err := r.Checkpoint(map[string]int{"n": n}, func() any { calls++; return map[string]int{"n": n} }, st.force)
				if err != nil {
					t.Fatalf("Checkpoint #%d: %v", i, err)
				}
				if got := calls == 1; got != st.snap {
					t.Errorf("Checkpoint #%d wrote a snapshot = %v, want %v", i, got, st.snap)
				}
				if st.snap {
					snaps++
					want := "{\n  \"n\": " + strconv.Itoa(n) + ",\n  \"journal_seq\": " + strconv.Itoa(n) + "\n}\n"
					if got := readFile(t, filepath.Join(r.Root(), "state.json")); got != want {
						t.Errorf("state.json after Checkpoint #%d = %q, want %q", i, got, want)
					}
				}
				lines := strings.Count(readFile(t, filepath.Join(r.Root(), "journal.jsonl")), "\n")
				if st.snap && lines != 0 {
					t.Errorf("journal after snapshot #%d has %d lines, want 0", i, lines)
				}
			}
			if snaps == 0 {
				t.Fatalf("internal error: case without a snapshot")
			}
		})
	}
}

func TestList(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	if got, err := s.List(); err != nil || len(got) != 0 {
		t.Fatalf("List() of an empty BASE = %v, %v, want none", got, err)
	}
	states := []struct{ id, state string }{
		{"old", `{"workflow_name":"w1","status":"completed","started_at":"2025-01-01T10:00:00Z","ended_at":"2025-01-01T10:05:00Z","current_step":"Z"}`},
		{"new", `{"workflow_name":"w2","status":"running","started_at":"2025-01-02T10:00:00Z","ended_at":null,"current_step":"A","journal_seq":3}`},
		{"frac", `{"workflow_name":"w3","status":"failed","started_at":"2025-01-02T10:00:00.5Z"}`},
		{"b-same", `{"status":"halted","started_at":"2025-01-01T10:00:00Z"}`},
		{"a-same", `{"status":"halted","started_at":"2025-01-01T12:00:00+02:00"}`},
		{"broken", `{"status":`},
		{"nostate", ""},
		{"array", `[]`},
	}
	for _, st := range states {
		r, err := s.Create(st.id)
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
		if st.state != "" {
			if err := os.WriteFile(filepath.Join(s.RunsDir(), st.id, "state.json"), []byte(st.state), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Entries that are not runs are skipped.
	os.WriteFile(filepath.Join(s.RunsDir(), "file"), nil, 0o644)
	os.Mkdir(filepath.Join(s.RunsDir(), "bad id"), 0o755)

	got, err := s.List()
	if err != nil {
		t.Fatalf("List(): %v", err)
	}
	var lines []string
	for _, sm := range got {
		lines = append(lines, strings.Join([]string{sm.RunID, sm.WorkflowName, sm.Status, sm.StartedAt, sm.EndedAt, sm.CurrentStep}, "|"))
	}
	want := []string{
		"frac|w3|failed|2025-01-02T10:00:00.5Z||",
		"new|w2|running|2025-01-02T10:00:00Z||A",
		"a-same||halted|2025-01-01T12:00:00+02:00||",
		"b-same||halted|2025-01-01T10:00:00Z||",
		"old|w1|completed|2025-01-01T10:00:00Z|2025-01-01T10:05:00Z|Z",
		"array||corrupt|||",
		"broken||corrupt|||",
		"nostate||corrupt|||",
	}
	if g, w := strings.Join(lines, "\n"), strings.Join(want, "\n"); g != w {
		t.Errorf("List() =\n%s\nwant\n%s", g, w)
	}
}

func TestAppendEventAndIteration(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	r, err := s.Create("ev")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	at := time.Date(2026, 11, 25, 22, 30, 0, 5000, time.UTC)
	if err := r.AppendEvent(vm.Event{Time: at, RunID: "ev", Seq: 1, Level: vm.LevelInfo, Kind: vm.EvRunStarted, Workflow: "w"}); err != nil {
		t.Fatal(err)
	}
	code := 0
	if err := r.AppendEvent(vm.Event{Time: at, RunID: "ev", Seq: 2, Level: vm.LevelInfo, Step: "A", Kind: vm.EvStepCompleted,
		ExitCode: &code, HasDuration: true, Duration: 0.5}); err != nil {
		t.Fatal(err)
	}
	want := `{"timestamp":"2026-11-25T22:30:00.000005Z","run_id":"ev","event_seq":1,"level":"INFO","event":"run_started","workflow":"w"}` + "\n" +
		`{"timestamp":"2026-11-25T22:30:00.000005Z","run_id":"ev","event_seq":2,"level":"INFO","step":"A","event":"step_completed","exit_code":0,"duration":0.5}` + "\n"
	if got := readFile(t, filepath.Join(r.LogsDir(), "events.jsonl")); got != want {
		t.Errorf("events.jsonl = %q, want %q", got, want)
	}

	if err := r.AppendIteration("each_file", map[string]any{"i": 0, "item": "a.txt"}); err != nil {
		t.Fatal(err)
	}
	if err := r.AppendIteration("each_file", map[string]any{"i": 1, "item": "b.txt"}); err != nil {
		t.Fatal(err)
	}
	if err := r.AppendIteration("Other-2", 7); err != nil {
		t.Fatal(err)
	}
	want = "{\"i\":0,\"item\":\"a.txt\"}\n{\"i\":1,\"item\":\"b.txt\"}\n"
	if got := readFile(t, filepath.Join(r.Root(), "iterations", "each_file.jsonl")); got != want {
		t.Errorf("iterations/each_file.jsonl = %q, want %q", got, want)
	}
	if got := readFile(t, filepath.Join(r.Root(), "iterations", "Other-2.jsonl")); got != "7\n" {
		t.Errorf("iterations/Other-2.jsonl = %q, want %q", got, "7\n")
	}

	bad := []struct {
		name string
		loop string
	}{
		{"empty", ""},
		{"leading digit", "1loop"},
		{"leading dash", "-loop"},
		{"slash", "a/b"},
		{"dotdot", ".."},
		{"dot", "a.b"},
		{"space", "a b"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if err := r.AppendIteration(tt.loop, 1); err == nil {
				t.Errorf("AppendIteration(%q) = nil, want an error", tt.loop)
			}
		})
	}
}

func TestLogPaths(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	r, err := s.Create("paths")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	logs := filepath.Join(s.Base, ".orchestrator", "runs", "paths", "logs")
	tests := []struct {
		name, step, stdout, stderr string
	}{
		{"plain", "Analyze", "Analyze-stdout.log", "Analyze-stderr.log"},
		{"separator", "a/../b", "a_.._b-stdout.log", "a_.._b-stderr.log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := r.StdoutSpill(tt.step), filepath.Join(logs, tt.stdout); got != want {
				t.Errorf("StdoutSpill(%q) = %q, want %q", tt.step, got, want)
			}
			if got, want := r.StderrLog(tt.step), filepath.Join(logs, tt.stderr); got != want {
				t.Errorf("StderrLog(%q) = %q, want %q", tt.step, got, want)
			}
		})
	}
}

// countSyncs counts the store's journal fdatasyncs and directory fsyncs
// until the test ends. Not parallel: it wraps package variables (parallel
// tests run only after every sequential one has finished).
func countSyncs(t *testing.T) (journal, dirs *int) {
	journal, dirs = new(int), new(int)
	oldJ, oldD := journalSync, dirSync
	var mu sync.Mutex // Create's fsync of the runs directory is in a goroutine
	count := func(n *int) { mu.Lock(); *n++; mu.Unlock() }
	journalSync = func(f *os.File) error { count(journal); return oldJ(f) }
	dirSync = func(d string) error { count(dirs); return oldD(d) }
	t.Cleanup(func() { journalSync, dirSync = oldJ, oldD })
	return journal, dirs
}

// TestSyncsOfACheckpoint: a checkpoint that snapshots does not fdatasync
// the journal line the snapshot holds; one that does not snapshot does;
// a new run's directories are fsynced by its first durable write, once.
func TestSyncsOfACheckpoint(t *testing.T) {
	s := newStore(t)
	s.Policy = Policy{Every: 100, Interval: time.Hour}
	journal, dirs := countSyncs(t)
	r, err := s.Create("syncs")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// Create starts the fsync of runs/ for RUN_ROOT's entry; the first
	// durable write waits for it (the count is read after that write).
	state := func() any { return map[string]int{"n": 1} }
	steps := []struct {
		force         bool
		journal, dirs int // syncs this checkpoint makes (the first: since Create)
	}{
		{true, 0, 2},  // the first snapshot: RUN_ROOT, and RUN_ROOT's entry in runs/
		{false, 1, 0}, // journalled only: the line is synced
		{true, 0, 1},  // a later snapshot: RUN_ROOT only
	}
	for i, st := range steps {
		j0, d0 := 0, 0
		if i > 0 {
			j0, d0 = *journal, *dirs
		}
		if err := r.Checkpoint(map[string]int{"n": i}, state, st.force); err != nil {
			t.Fatal(err)
		}
		if *journal-j0 != st.journal || *dirs-d0 != st.dirs {
			t.Errorf("Checkpoint #%d (force %v): %d journal syncs, %d directory syncs; want %d and %d", i, st.force, *journal-j0, *dirs-d0, st.journal, st.dirs)
		}
	}

	// A run whose first durable write is a journal line: the line, then
	// both directories, once.
	j0, d0 := *journal, *dirs
	r2, err := s.Create("journal-first")
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	for i := range 2 {
		if err := r2.AppendJournal(map[string]int{"n": i}); err != nil {
			t.Fatal(err)
		}
	}
	if *journal-j0 != 2 || *dirs-d0 != 2 {
		t.Errorf("two appends to a new run: %d journal syncs, %d directory syncs; want 2 and 2", *journal-j0, *dirs-d0)
	}
}

// TestOwe: a delta appended by Owe is not synced by Owe; the next change
// syncs it, whatever that is: a staged running record (one fdatasync for
// both), a checkpoint that snapshots (none: the snapshot holds it), a
// journalled one (its own sync), a loop iteration's record and delta (the
// delta's one sync), or Close. Every owed delta is read back.
func TestOwe(t *testing.T) {
	s := newStore(t)
	s.Policy = Policy{Every: 100, Interval: time.Hour}
	journal, _ := countSyncs(t)
	r, err := s.Create("owe")
	if err != nil {
		t.Fatal(err)
	}
	state := func() any { return map[string]int{"n": 1} }
	if err := r.Checkpoint(0, state, true); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		next func() error
		want int // journal syncs of Owe and then next
	}{
		{"stage", func() error { return r.Stage(2) }, 1},
		{"stage again, nothing owed", func() error { return r.Stage(4) }, 0},
		{"snapshot", func() error { return r.Checkpoint(6, state, true) }, 0},
		{"journalled", func() error { return r.Checkpoint(8, state, false) }, 1},
		{"iteration", func() error { // as Save writes a loop's iteration: its record, then its delta
			if err := r.AppendIteration("L", map[string]int{"i": 9}); err != nil {
				return err
			}
			return r.Checkpoint(10, state, false)
		}, 1},
	}
	n := 1
	for _, st := range steps {
		j0 := *journal
		if st.name != "stage again, nothing owed" {
			if err := r.Owe(n, state); err != nil {
				t.Fatal(err)
			}
			if *journal != j0 {
				t.Errorf("%s: Owe synced the journal", st.name)
			}
		}
		if err := st.next(); err != nil {
			t.Fatal(err)
		}
		if got := *journal - j0; got != st.want {
			t.Errorf("%s: %d journal syncs, want %d", st.name, got, st.want)
		}
		n += 2
	}
	if err := r.Owe(11, state); err != nil {
		t.Fatal(err)
	}
	j0 := *journal
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if *journal-j0 != 1 {
		t.Errorf("Close after Owe: %d journal syncs, want 1", *journal-j0)
	}
	r, _, deltas := loadAll(t, s, "owe")
	r.Close()
	if got, want := strings.Join(deltas, ","), "7,8,9,10,11"; got != want {
		t.Errorf("deltas after the last snapshot = %q, want %q", got, want)
	}
}

// TestCheckpointSnapshotFails: when the snapshot of a checkpoint fails, the
// journal line is synced after all, so the delta is durable and a resume
// reads it; the snapshot's error is returned.
func TestCheckpointSnapshotFails(t *testing.T) {
	s := newStore(t)
	journal, _ := countSyncs(t)
	r, err := s.Create("snapfail")
	if err != nil {
		t.Fatal(err)
	}
	err = r.Checkpoint(map[string]int{"n": 1}, func() any { return []int{1} }, true) // not a JSON object
	if err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Fatalf("Checkpoint with a state that is not an object = %v, want its error", err)
	}
	if *journal != 1 {
		t.Errorf("the journal was synced %d times after the failed snapshot, want 1", *journal)
	}
	r.Close()
	o, err := s.Open("snapfail")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	var deltas []string
	if err := o.Load(nil, func(d []byte) error { deltas = append(deltas, string(d)); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(deltas) != 1 || deltas[0] != `{"n":1}` {
		t.Errorf("after the failed snapshot the journal holds %q, want the delta", deltas)
	}
}

// TestCheckpointLater: changes checkpointed without their sync keep their
// order in the journal; SyncThrough makes them durable, one fdatasync for
// every change appended before it (group commit), none for a change a
// sync already covered; a change that falls due for a snapshot is written
// and synced at once.
func TestCheckpointLater(t *testing.T) {
	s := newStore(t)
	s.Policy = Policy{Every: 4, Interval: time.Hour}
	r, err := s.Create("later")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	state := func() any { return map[string]int{"n": 0} }
	if err := r.Checkpoint(map[string]int{"n": 0}, state, true); err != nil { // the first snapshot
		t.Fatal(err)
	}
	journal, _ := countSyncs(t)
	var seqs []int64
	for i := 1; i <= 3; i++ {
		seq, err := r.CheckpointLater(map[string]int{"n": i}, state, false)
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, seq)
	}
	if *journal != 0 {
		t.Errorf("CheckpointLater synced the journal %d times, want 0", *journal)
	}
	if err := r.SyncThrough(seqs[1]); err != nil {
		t.Fatal(err)
	}
	for _, seq := range seqs {
		if err := r.SyncThrough(seq); err != nil {
			t.Fatal(err)
		}
	}
	if *journal != 1 {
		t.Errorf("SyncThrough of three changes appended before it: %d fdatasyncs, want 1", *journal)
	}
	if got := readFile(t, filepath.Join(r.Root(), journalFile)); got != `{"seq":2,"delta":{"n":1}}`+"\n"+`{"seq":3,"delta":{"n":2}}`+"\n"+`{"seq":4,"delta":{"n":3}}`+"\n" {
		t.Errorf("journal = %q, want the three changes in order", got)
	}
	// The fourth change since the snapshot: a snapshot, durable at once.
	seq, err := r.CheckpointLater(map[string]int{"n": 4}, state, false)
	if err != nil {
		t.Fatal(err)
	}
	j0 := *journal
	if err := r.SyncThrough(seq); err != nil {
		t.Fatal(err)
	}
	if *journal != j0 {
		t.Errorf("SyncThrough after a snapshot: %d fdatasyncs, want none", *journal-j0)
	}
	if got := readFile(t, filepath.Join(r.Root(), journalFile)); got != "" {
		t.Errorf("journal after the snapshot = %q, want it truncated", got)
	}
}

// TestSyncThroughConcurrent: goroutines that append in turn (under their
// own lock, as a parallel group does) and wait for their syncs at once
// all find their changes durable, in order, with fewer fdatasyncs than
// changes at most one each.
func TestSyncThroughConcurrent(t *testing.T) {
	s := newStore(t)
	s.Policy = Policy{Every: 1000, Interval: time.Hour}
	r, err := s.Create("group")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	state := func() any { return map[string]int{} }
	if err := r.Checkpoint(0, state, true); err != nil {
		t.Fatal(err)
	}
	journal, _ := countSyncs(t)
	var order sync.Mutex
	var wg sync.WaitGroup
	const n = 40
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			order.Lock()
			seq, err := r.CheckpointLater(i, state, false)
			order.Unlock()
			if err == nil {
				err = r.SyncThrough(seq)
			}
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if *journal > n {
		t.Errorf("%d fdatasyncs for %d changes, want at most one each", *journal, n)
	}
	lines := strings.Split(strings.TrimSuffix(readFile(t, filepath.Join(r.Root(), journalFile)), "\n"), "\n")
	if len(lines) != n {
		t.Fatalf("journal has %d lines, want %d", len(lines), n)
	}
	for i, l := range lines {
		if !strings.HasPrefix(l, `{"seq":`+strconv.Itoa(i+2)+`,`) {
			t.Errorf("line %d = %q, want seq %d", i, l, i+2)
		}
	}
}
