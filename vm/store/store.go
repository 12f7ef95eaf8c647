package store

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/tidwall/gjson"

	"smith/source"
)

// A Store is the set of runs under one BASE.
type Store struct {
	// Base is BASE, an absolute path.
	Base string
	// Policy says when Checkpoint writes a snapshot; the zero value means
	// the defaults.
	Policy Policy
}

// A Policy says when Checkpoint writes a snapshot: after Every deltas
// (default 1,000) or when Interval (default 2 s) has passed since the last
// snapshot, whichever comes first. Values of zero or less mean the default.
//
// A snapshot costs about a millisecond here (a new file written and
// fsynced, renamed, the directory fsynced); a journal line costs a reader
// (resume, status, the viewer) about 11 µs to apply. Every 1,000 deltas, a
// fast run of 1,000 steps writes 2 snapshots instead of 10 (5-12 ms of its
// 0.8 s), and a resume or a read replays at most about 11 ms of journal.
// Slow runs, an agent's, are snapshotted by Interval long before.
type Policy struct {
	Every    int
	Interval time.Duration
	// CatchUp is how long a step's running record may stay in the journal
	// alone before state.json is brought up to date with it (default
	// 250 ms; see Run.Save).
	CatchUp time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Default snapshot policy.
const (
	DefaultEvery    = 1000
	DefaultInterval = 2 * time.Second
	DefaultCatchUp  = 250 * time.Millisecond
)

// withDefaults returns p with zero fields replaced by the defaults.
func (p Policy) withDefaults() Policy {
	if p.Every <= 0 {
		p.Every = DefaultEvery
	}
	if p.Interval <= 0 {
		p.Interval = DefaultInterval
	}
	if p.CatchUp <= 0 {
		p.CatchUp = DefaultCatchUp
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	return p
}

// New returns the Store of BASE base, which must be an absolute path.
func New(base string) (*Store, error) {
	if !filepath.IsAbs(base) {
		return nil, fmt.Errorf("store base %q is not an absolute path", base)
	}
	return &Store{Base: filepath.Clean(base)}, nil
}

// RunsDir returns BASE/.orchestrator/runs.
func (s *Store) RunsDir() string {
	return filepath.Join(s.Base, ".orchestrator", "runs")
}

// root returns RUN_ROOT of run id.
func (s *Store) root(id string) string { return filepath.Join(s.RunsDir(), id) }

// ValidRunID reports whether id can name a run: 1 to 64 characters from
// [A-Za-z0-9_.-], and neither "." nor "..".
func ValidRunID(id string) bool {
	if len(id) == 0 || len(id) > 64 || id == "." || id == ".." {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '.', c == '-':
		default:
			return false
		}
	}
	return true
}

// NewRunID returns a random UUID version 4 (RFC 9562) in its lowercase
// canonical form, xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx.
func NewRunID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand docs)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:], b[10:])
	return string(out[:])
}

// invalidID is the error for a run id that ValidRunID rejects.
func invalidID(id string) error {
	return &source.Error{Code: source.EUsage, Msg: fmt.Sprintf("invalid run id %q: want 1 to 64 characters from [A-Za-z0-9_.-]", id)}
}

// Create makes RUN_ROOT of a new run with its logs and iterations
// directories and takes the run's lock. A run that already exists is an
// EUsage error. The run has no state until the first WriteSnapshot or
// AppendJournal.
func (s *Store) Create(runID string) (*Run, error) {
	if !ValidRunID(runID) {
		return nil, invalidID(runID)
	}
	if err := os.MkdirAll(s.RunsDir(), 0o755); err != nil {
		return nil, fmt.Errorf("create runs directory: %w", err)
	}
	root := s.root(runID)
	if err := os.Mkdir(root, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return s.reuseStillborn(runID, root)
		}
		return nil, fmt.Errorf("create run '%s': %w", runID, err)
	}
	r, err := open(runID, root, s.Policy)
	if err != nil {
		return nil, err
	}
	r.loaded = true // a new run has nothing to load
	// The new entries are made durable by the first write that must be,
	// before it returns, so a journal synced later is found.
	r.dirsPending = true
	// RUN_ROOT's entry in the runs directory is made durable while the
	// run starts: the first durable write waits for it (syncParent).
	r.parentSync = make(chan error, 1)
	go func(c chan<- error, dir string) { c <- dirSync(dir) }(r.parentSync, s.RunsDir())
	return r, nil
}

// reuseStillborn takes over the existing RUN_ROOT of runID when it holds a
// run that was killed before anything of it was durable (no state.json and
// no complete journal line): such a run has nothing to resume, so its id is
// free again. Any other existing run is an EUsage error.
func (s *Store) reuseStillborn(runID, root string) (*Run, error) {
	exists := &source.Error{Code: source.EUsage, Msg: "run '" + runID + "' already exists"}
	if fi, err := os.Lstat(root); err != nil || !fi.IsDir() {
		return nil, exists
	}
	if !stillborn(root) {
		return nil, exists
	}
	r, err := open(runID, root, s.Policy)
	if err != nil {
		if e := (*source.Error)(nil); errors.As(err, &e) && e.Code == source.ERunLocked {
			return nil, exists
		}
		return nil, err
	}
	// Checked again under the lock: another process may have started it.
	if !stillborn(root) {
		r.Close()
		return nil, exists
	}
	if err := r.journal.Truncate(0); err != nil {
		r.Close()
		return nil, fmt.Errorf("create run '%s': %w", runID, err)
	}
	r.loaded = true
	r.dirsPending = true // as for a new run: its entries may never have been synced
	return r, nil
}

// stillborn reports whether RUN_ROOT root has no state: no state.json and
// no complete journal line.
func stillborn(root string) bool {
	if _, err := os.Lstat(filepath.Join(root, stateFile)); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	b, err := os.ReadFile(filepath.Join(root, journalFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	return bytes.IndexByte(b, '\n') < 0
}

// Open opens an existing run and takes its lock. An unknown run is
// EStateNotFound; a run locked by another process (or another Open in this
// one) is ERunLocked; a run with no state (no state.json, no complete
// journal line) is EStateCorrupt, refused without writing in its folder.
// Call Load before appending to the journal or writing a snapshot.
func (s *Store) Open(runID string) (*Run, error) {
	if !ValidRunID(runID) {
		return nil, invalidID(runID)
	}
	root := s.root(runID)
	fi, err := os.Stat(root)
	if err != nil || !fi.IsDir() {
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return nil, &source.Error{Code: source.EStateNotFound, Msg: "no run '" + runID + "' under " + s.Base}
		}
		return nil, fmt.Errorf("open run '%s': %w", runID, err)
	}
	// A run with no state has nothing to resume: refused before anything
	// (logs/, the journal, the lock file) is written in its folder.
	if stillborn(root) {
		lock := filepath.Join(root, "lock")
		if _, running, err := s.Driver(runID); err == nil && running && holderAlive(lock) {
			return nil, lockedError(runID, lock)
		}
		return nil, noState(runID)
	}
	return open(runID, root, s.Policy)
}

// noState is the error of run id, which has no state: no state.json and
// no complete journal line.
func noState(id string) error {
	e := corrupt(id, errors.New("run has no state: it was stopped before its first step was saved"))
	e.Hint = "nothing to resume: start it again with smithvm run FILE --run-id " + id
	return e
}

// A Summary describes one run, from the top-level fields of its state.json.
type Summary struct {
	RunID        string
	WorkflowName string
	// Status is the state's status, or "corrupt" when state.json cannot be
	// read (missing, or not a JSON object).
	Status      string
	StartedAt   string
	EndedAt     string
	CurrentStep string
	// StepStartedAt is when the current step started, while it runs.
	StepStartedAt string
}

// StatusCorrupt is the Summary.Status of a run whose state cannot be read.
const StatusCorrupt = "corrupt"

// readSummary reads the summary of run id from its state file at path.
func readSummary(id, path string) Summary {
	corrupt := Summary{RunID: id, Status: StatusCorrupt}
	b, err := os.ReadFile(path)
	if err != nil {
		return corrupt
	}
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' || !gjson.ValidBytes(t) {
		return corrupt
	}
	r := gjson.GetManyBytes(b, "workflow_name", "status", "started_at", "ended_at", "current_step")
	sum := Summary{RunID: id, WorkflowName: r[0].Str, Status: r[1].Str, StartedAt: r[2].Str, EndedAt: r[3].Str, CurrentStep: r[4].Str}
	if sum.Status == "running" && sum.CurrentStep != "" {
		if st := gjson.GetBytes(b, "steps").Get(gjsonEscape(sum.CurrentStep)); st.Get("status").Str == "running" {
			sum.StepStartedAt = st.Get("started_at").Str
		}
	}
	return sum
}

// gjsonEscape escapes the characters gjson gives a meaning to in a path.
func gjsonEscape(key string) string {
	var b []byte
	for i := 0; i < len(key); i++ {
		switch key[i] {
		case '.', '*', '?', '|', '#', '@', '\\', '!', '=', '<', '>', '%', ':':
			b = append(b, '\\')
		}
		b = append(b, key[i])
	}
	return string(b)
}

// syncDir fsyncs directory dir, making its entries durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	serr := fsync(d)
	cerr := d.Close()
	if serr != nil {
		return fmt.Errorf("sync directory %s: %w", dir, serr)
	}
	if cerr != nil {
		return fmt.Errorf("sync directory %s: %w", dir, cerr)
	}
	return nil
}
