package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"smith/source"
	"smith/vm"
)

// File and directory names inside RUN_ROOT.
const (
	stateFile   = "state.json"
	stateTmp    = "state.json.tmp"
	journalFile = "journal.jsonl"
	logsDir     = "logs"
	eventsFile  = "events.jsonl"
	itersDir    = "iterations"
	seqKey      = "journal_seq"
)

// A Run is one open run: it holds the run's lock until Close. Its methods
// may be called from several goroutines.
type Run struct {
	id, root string
	policy   Policy

	mu      sync.Mutex
	lock    *os.File // nil once closed
	journal *os.File // O_APPEND
	// torn is why the journal ends in part of a line that could not be
	// cut off (a failed append whose truncation failed too): no line may
	// follow it until a snapshot empties the journal.
	torn   error
	events *os.File // O_APPEND
	iters  map[string]*os.File
	// seq is the seq of the last delta in the journal or the snapshot;
	// valid only when loaded.
	seq    int64
	loaded bool
	// durable is the seq of the last delta known durable (synced in the
	// journal or held by a snapshot); syncMu orders the fdatasyncs of
	// SyncThrough, which run without mu (SaveLater).
	durable int64
	syncMu  sync.Mutex
	// since counts the deltas appended since the last snapshot (or Load).
	since    int
	lastSnap time.Time
	// snapText is the text of the last snapshot this Run wrote: writing
	// the same text again with no delta since (a run's end, then its
	// final save) is skipped.
	snapText []byte
	// snapEnc and snapSpare are the buffers of the next snapshot's
	// compact and indented texts (writeSnapshot, keepSnapBuffers).
	snapEnc   bytes.Buffer
	snapSpare []byte
	// scratch is the buffer a journal or event line is built in (reused;
	// guarded by mu).
	scratch []byte
	// dirsPending: the entries of a new run (RUN_ROOT in the runs
	// directory, its files and directories in RUN_ROOT) are not known
	// durable yet. Create leaves their fsyncs to the first write that must
	// be durable, which makes them so before it returns (syncJournal,
	// writeSnapshot); the first snapshot, which fsyncs RUN_ROOT anyway,
	// then costs one directory fsync more instead of two.
	dirsPending bool
	// parentSync brings the result of the fsync of the runs directory
	// that Create started for the new RUN_ROOT's entry, so that it goes on
	// while the run's first snapshot is written (nil: none started).
	parentSync chan error
	// owed: a delta was appended by Owe and is not synced yet; the next
	// change (or Close) syncs it, whatever that change is (payOwed).
	owed bool
	// catchUp brings state.json up to date while a step runs (Save);
	// catchUpSeq is the seq it was armed at (a later change disarms it),
	// catchUpCost what the last one took.
	// indexed is the status the index of runs last recorded for the run
	// (Save appends a line when it changes).
	indexed     string
	catchUp     *time.Timer
	catchUpSeq  int64
	catchUpCost time.Duration
}

// open creates the run's directories and files under an existing root and
// takes the lock. iterations/ is left to the first AppendIteration: most
// runs never write one.
func open(id, root string, p Policy) (*Run, error) {
	if err := os.MkdirAll(filepath.Join(root, logsDir), 0o755); err != nil {
		return nil, fmt.Errorf("create %s of run '%s': %w", logsDir, id, err)
	}
	lock, err := lockRun(id, root)
	if err != nil {
		return nil, err
	}
	r := &Run{id: id, root: root, policy: p.withDefaults(), lock: lock, iters: map[string]*os.File{}}
	r.journal, err = appendFile(filepath.Join(root, journalFile))
	if err != nil {
		r.Close()
		return nil, unreadable(id, "open "+journalFile, err)
	}
	r.events, err = appendFile(filepath.Join(root, logsDir, eventsFile))
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("open run '%s': %w", id, err)
	}
	r.lastSnap = r.policy.Now()
	return r, nil
}

// appendFile opens path for appending, creating it if needed.
func appendFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
}

// ID returns the run id.
func (r *Run) ID() string { return r.id }

// Root returns RUN_ROOT, an absolute path.
func (r *Run) Root() string { return r.root }

// LogsDir returns RUN_ROOT/logs.
func (r *Run) LogsDir() string { return filepath.Join(r.root, logsDir) }

// StdoutSpill returns the path of step's spilled stdout,
// RUN_ROOT/logs/<Step>-stdout.log. Path separators and NUL in step are
// replaced by '_' so the file stays inside logs.
func (r *Run) StdoutSpill(step string) string {
	return filepath.Join(r.LogsDir(), fileSafe(step)+"-stdout.log")
}

// StderrLog returns the path of step's stderr log,
// RUN_ROOT/logs/<Step>-stderr.log, with step made safe as in StdoutSpill.
func (r *Run) StderrLog(step string) string {
	return filepath.Join(r.LogsDir(), fileSafe(step)+"-stderr.log")
}

// fileSafe replaces the characters of name that cannot be in one path
// element.
func fileSafe(name string) string {
	return strings.Map(func(c rune) rune {
		if c == '/' || c == '\\' || c == 0 {
			return '_'
		}
		return c
	}, name)
}

// errClosed is returned by the methods of a closed Run.
var errClosed = errors.New("run is closed")

// usable reports why r cannot be written, or nil. Call with r.mu held.
func (r *Run) usable(needLoad bool) error {
	if r.lock == nil {
		return errClosed
	}
	if needLoad && !r.loaded {
		return errors.New("internal error: run opened but not loaded")
	}
	return nil
}

// A jsonAppender appends itself to b as compact JSON text (vm.Event,
// vm.Delta, vm.State): encoded by hand, the bytes encoding/json would write, which
// need no compaction.
type jsonAppender interface {
	AppendJSON(b []byte) ([]byte, error)
}

// encode appends v to buf as compact JSON with no newline. []byte and
// json.RawMessage are taken as JSON text and compacted; a jsonAppender
// writes itself.
func encode(buf *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case []byte:
		return json.Compact(buf, x)
	case json.RawMessage:
		return json.Compact(buf, x)
	case jsonAppender:
		b, err := x.AppendJSON(buf.AvailableBuffer())
		if err != nil {
			return err
		}
		buf.Write(b)
		return nil
	}
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	buf.Truncate(buf.Len() - 1) // Encode's newline
	return nil
}

// keepScratch keeps b for the next line, unless it grew large (one big
// delta should not stay allocated for the rest of the run).
func (r *Run) keepScratch(b []byte) {
	if cap(b) > 64<<10 {
		b = nil
	}
	r.scratch = b
}

// appendEncoded appends v to b as encode writes it.
func appendEncoded(b []byte, v any) ([]byte, error) {
	if x, ok := v.(jsonAppender); ok {
		return x.AppendJSON(b)
	}
	buf := bytes.NewBuffer(b)
	if err := encode(buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// line returns v encoded as one JSON line.
func line(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := encode(&buf, v); err != nil {
		return nil, err
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// AppendJournal appends delta to the journal as one line and fdatasyncs it:
// once it returns, the delta survives a crash. Its cost does not depend on
// the length of the run.
func (r *Run) AppendJournal(delta any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.appendJournal(delta)
}

// appendJournal is AppendJournal with r.mu held.
func (r *Run) appendJournal(delta any) error {
	return r.appendJournalSync(delta, true)
}

// appendJournalSync appends delta and, when sync is set, fdatasyncs the
// journal (which makes every earlier append durable too).
func (r *Run) appendJournalSync(delta any, sync bool) error {
	if err := r.usable(true); err != nil {
		return fmt.Errorf("append to journal of run '%s': %w", r.id, err)
	}
	// r.scratch is reused: a step's line costs no allocation of its own.
	b := append(r.scratch[:0], `{"seq":`...)
	b = strconv.AppendInt(b, r.seq+1, 10)
	b = append(b, `,"delta":`...)
	b, err := appendEncoded(b, delta)
	if err != nil {
		return fmt.Errorf("encode delta of run '%s': %w", r.id, err)
	}
	b = append(b, "}\n"...)
	r.keepScratch(b)
	if len(b) > maxStateDepth && JSONDepth(b) > maxStateDepth {
		return fmt.Errorf("append to journal of run '%s': %w", r.id, errTooDeep)
	}
	if r.torn != nil {
		return fmt.Errorf("append to journal of run '%s': %w", r.id, r.torn)
	}
	// One write: O_APPEND makes it land at the end as a whole, or a crash
	// tears it and Load drops the unterminated tail.
	if n, err := r.journal.Write(b); err != nil {
		r.cutTorn(n, err)
		return fmt.Errorf("append to journal of run '%s': %w", r.id, err)
	}
	if sync {
		if err := r.syncJournal(); err != nil {
			return err
		}
	}
	r.seq++
	r.since++
	if sync {
		r.durable, r.owed = r.seq, false
	}
	return nil
}

// cutTorn cuts off the n bytes a failed append (err: a full disk, a file
// size limit) wrote: a line appended after them would leave a torn line
// in the middle of the journal, which no resume can read. When they
// cannot be cut, no line is appended until a snapshot empties the
// journal. Call with r.mu held.
func (r *Run) cutTorn(n int, err error) {
	if n == 0 {
		return
	}
	fi, serr := r.journal.Stat()
	if serr == nil && fi.Size() >= int64(n) {
		serr = r.journal.Truncate(fi.Size() - int64(n))
	}
	if serr != nil || fi.Size() < int64(n) {
		r.torn = fmt.Errorf("a failed append left part of a line (%v)", err)
	}
}

// SyncThrough makes every delta up to seq durable: it returns at once if
// one fdatasync already covered it, else it syncs the journal once for
// every delta appended so far. Callers that appended their deltas with
// r.mu released between (SaveLater) share one fdatasync: while one syncs,
// the others wait on syncMu and find their delta covered when it is their
// turn (group commit). r.mu is not held during the fdatasync, so appends
// go on meanwhile.
func (r *Run) SyncThrough(seq int64) error {
	r.syncMu.Lock()
	defer r.syncMu.Unlock()
	r.mu.Lock()
	if err := r.usable(true); err != nil {
		r.mu.Unlock()
		return fmt.Errorf("sync journal of run '%s': %w", r.id, err)
	}
	if r.durable >= seq {
		r.mu.Unlock()
		return nil
	}
	if r.dirsPending {
		// The run's first durable write: its directories too, under mu as
		// in Checkpoint (only ever at a run's start).
		defer r.mu.Unlock()
		if err := r.syncJournal(); err != nil {
			return err
		}
		r.durable = r.seq
		return nil
	}
	target, f := r.seq, r.journal
	r.mu.Unlock()
	// A snapshot may truncate the journal meanwhile: it holds every delta
	// the journal did, and the fdatasync of a truncated file is harmless.
	if err := journalSync(f); err != nil {
		return fmt.Errorf("sync journal of run '%s': %w", r.id, err)
	}
	r.mu.Lock()
	r.durable = max(r.durable, target)
	r.mu.Unlock()
	return nil
}

// journalSync and dirSync are the store's fdatasync of a journal and fsync
// of a directory: variables so that a test can count them.
var (
	journalSync = datasync
	dirSync     = syncDir
)

// syncJournal makes every append to the journal durable, and the run's
// directory entries if they are not yet.
func (r *Run) syncJournal() error {
	if err := journalSync(r.journal); err != nil {
		return fmt.Errorf("sync journal of run '%s': %w", r.id, err)
	}
	if r.dirsPending {
		if err := dirSync(r.root); err != nil {
			return err
		}
		if err := r.syncParent(); err != nil {
			return err
		}
		r.dirsPending = false
	}
	return nil
}

// WriteSnapshot replaces state.json with state, which must encode as a JSON
// object and include every delta appended so far, then truncates the
// journal. See the package comment for why a crash at any instant is safe.
func (r *Run) WriteSnapshot(state any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.writeSnapshot(state)
}

// writeSnapshot is WriteSnapshot with r.mu held.
func (r *Run) writeSnapshot(state any) error {
	if err := r.usable(true); err != nil {
		return fmt.Errorf("write state of run '%s': %w", r.id, err)
	}
	// The compact text and the indented one are built in buffers kept
	// from the snapshots before (a snapshot is the whole state: three
	// copies of it were garbage at each).
	compact := &r.snapEnc
	compact.Reset()
	compact.Grow(len(r.snapText) * 2 / 3)
	if err := encode(compact, state); err != nil {
		return fmt.Errorf("encode state of run '%s': %w", r.id, err)
	}
	b := compact.Bytes()
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return fmt.Errorf("encode state of run '%s': not a JSON object", r.id)
	}
	// Add journal_seq as the last key.
	compact.Truncate(len(b) - 1)
	if len(b) > 2 {
		compact.WriteByte(',')
	}
	compact.WriteString(`"` + seqKey + `":`)
	compact.WriteString(strconv.FormatInt(r.seq, 10))
	compact.WriteByte('}')
	spare := r.snapSpare
	r.snapSpare = nil // given back below, unless this snapshot fails
	// The indentation finds the depth too (one pass over the state, not two).
	text, deepest, ok := indentJSON(slices.Grow(spare[:0], compact.Len()*7/4), compact.Bytes())
	if !ok {
		var out bytes.Buffer
		if err := json.Indent(&out, compact.Bytes(), "", "  "); err != nil {
			return fmt.Errorf("encode state of run '%s': %w", r.id, err)
		}
		text, deepest = out.Bytes(), JSONDepth(compact.Bytes())
	}
	if deepest > maxStateDepth {
		r.snapSpare = spare
		return fmt.Errorf("write state of run '%s': %w", r.id, errTooDeep)
	}
	text = append(text, '\n')
	if r.since == 0 && bytes.Equal(text, r.snapText) {
		r.lastSnap = r.policy.Now()
		r.keepSnapBuffers(text)
		return nil // state.json holds exactly this already, durably
	}

	tmp := filepath.Join(r.root, stateTmp)
	if err := writeSynced(tmp, text); err != nil {
		// A part written to a full disk gives its space back at once.
		os.Remove(tmp)
		return fmt.Errorf("write state of run '%s': %w", r.id, err)
	}
	if err := os.Rename(tmp, filepath.Join(r.root, stateFile)); err != nil {
		return fmt.Errorf("write state of run '%s': %w", r.id, err)
	}
	if err := dirSync(r.root); err != nil {
		return fmt.Errorf("write state of run '%s': %w", r.id, err)
	}
	if r.dirsPending {
		// RUN_ROOT's own entry in the runs directory (its files' entries
		// were made durable by the fsync of RUN_ROOT just above).
		if err := r.syncParent(); err != nil {
			return fmt.Errorf("write state of run '%s': %w", r.id, err)
		}
		r.dirsPending = false
	}
	// Every journal line now has seq <= journal_seq: Load would skip them
	// all, so the truncation needs no sync of its own.
	if err := r.journal.Truncate(0); err != nil {
		return fmt.Errorf("truncate journal of run '%s': %w", r.id, err)
	}
	r.torn = nil
	r.since = 0
	r.durable, r.owed = r.seq, false
	r.lastSnap = r.policy.Now()
	old := r.snapText
	r.snapText = text
	r.keepSnapBuffers(old)
	return nil
}

// maxSnapBuffer bounds the buffers a Run keeps between snapshots.
const maxSnapBuffer = 4 << 20

// keepSnapBuffers keeps spare, a text buffer that snapText does not use,
// for the next snapshot, and the compact text's buffer, unless they are
// large (a state that was large once should not stay allocated).
func (r *Run) keepSnapBuffers(spare []byte) {
	if cap(spare) > maxSnapBuffer {
		spare = nil
	}
	r.snapSpare = spare
	if r.snapEnc.Cap() > maxSnapBuffer {
		r.snapEnc = bytes.Buffer{}
	}
}

// syncParent makes RUN_ROOT's own entry in the runs directory durable:
// it waits for the fsync Create started, or makes one.
func (r *Run) syncParent() error {
	if c := r.parentSync; c != nil {
		r.parentSync = nil
		return <-c
	}
	return dirSync(filepath.Dir(r.root))
}

// writeSynced creates (or truncates) path, writes data and fsyncs it.
func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	serr := fsync(f)
	cerr := f.Close()
	return errors.Join(werr, serr, cerr)
}

// Checkpoint appends delta to the journal, then writes the snapshot state()
// when force is set, when Policy.Every deltas were appended since the last
// snapshot, or when Policy.Interval has passed since it. state is called
// only when a snapshot is written, must include delta, and must not call
// methods of r (r is locked while it runs). Once it returns, delta
// survives a crash.
//
// When a snapshot follows, the journal line is written but not
// fdatasynced: the snapshot, fsynced before Checkpoint returns, holds the
// delta, and until it returns nothing depends on the delta (a crash of
// this process alone cannot lose the line, which is in the page cache). If
// the snapshot fails, the journal is synced after all, so the delta is
// durable as before, and the snapshot's error is returned.
func (r *Run) Checkpoint(delta any, state func() any, force bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.checkpoint(delta, state, r.snapDue(force))
}

// snapDue reports whether a Checkpoint writes a snapshot. Call with r.mu
// held.
func (r *Run) snapDue(force bool) bool {
	return force || r.since+1 >= r.policy.Every || r.policy.Now().Sub(r.lastSnap) >= r.policy.Interval
}

// checkpoint is Checkpoint with r.mu held.
func (r *Run) checkpoint(delta any, state func() any, snap bool) error {
	if err := r.appendJournalSync(delta, !snap); err != nil {
		return err
	}
	if !snap {
		return nil
	}
	err := r.writeSnapshot(state())
	if err != nil {
		if serr := r.syncJournal(); serr != nil {
			return errors.Join(err, serr)
		}
		r.durable, r.owed = r.seq, false
	}
	return err
}

// CheckpointLater is Checkpoint without the wait for the fdatasync: it
// appends delta (or writes the snapshot, as Checkpoint decides, and then
// syncs at once) and returns the seq to give SyncThrough, which returns
// once the delta survives a crash. Nothing may depend on the delta until
// then. Changes checkpointed this way one after the other keep their
// order in the journal; their syncs may be shared.
func (r *Run) CheckpointLater(delta any, state func() any, force bool) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if snap := r.snapDue(force); snap || r.dirsPending || r.owed {
		// The rare snapshot, or the run's first write: as Checkpoint.
		return r.seq, r.checkpoint(delta, state, snap)
	}
	if err := r.appendJournalSync(delta, false); err != nil {
		return 0, err
	}
	return r.seq, nil
}

// Stage appends delta to the journal like Checkpoint but without the
// fdatasync: it becomes durable with the next Checkpoint (an fdatasync of
// the journal covers every earlier append), and a crash of this process
// alone cannot lose it (it is in the page cache). Use it only for a change
// that a crash of the machine may lose: one that the next synced change
// follows before anything depends on it. It never writes a snapshot. A
// delta appended by Owe and not synced yet is synced now (with delta).
func (r *Run) Stage(delta any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.appendJournalSync(delta, false); err != nil {
		return err
	}
	return r.payOwed()
}

// Owe appends delta to the journal without the fdatasync, like Stage, and
// has the next change pay it: the next Checkpoint, Stage or Close syncs
// the journal before it returns (payOwed), so delta is durable before
// anything that follows it is. Use it for a change after which nothing
// happens outside the run's state until the next change: a step's result
// whose next change is the next step's running record (one fdatasync then
// covers both, before the next step's process starts) or the run's end
// (whose snapshot holds it). A crash of this process alone cannot lose it
// (it is in the page cache).
//
// When a snapshot is due (Policy), Owe checkpoints delta as Checkpoint
// does instead: the snapshot, synced, holds it, and the journal stays
// short.
func (r *Run) Owe(delta any, state func() any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.snapDue(false) {
		return r.checkpoint(delta, state, true)
	}
	if err := r.appendJournalSync(delta, false); err != nil {
		return err
	}
	r.owed = true
	return nil
}

// payOwed syncs the journal when an owed delta (Owe) is not durable yet.
// Call with r.mu held.
func (r *Run) payOwed() error {
	if !r.owed {
		return nil
	}
	if err := r.syncJournal(); err != nil {
		return err
	}
	r.durable, r.owed = r.seq, false
	return nil
}

// AppendIteration appends rec as one line to iterations/<loop>.jsonl. loop
// must match [A-Za-z_][A-Za-z0-9_-]*. The line is written with one write
// and not fsynced.
func (r *Run) AppendIteration(loop string, rec any) error {
	if !validLoop(loop) {
		return fmt.Errorf("append iteration of run '%s': invalid loop name %q", r.id, loop)
	}
	b, err := line(rec)
	if err != nil {
		return fmt.Errorf("encode iteration of loop '%s': %w", loop, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.usable(false); err != nil {
		return fmt.Errorf("append iteration of run '%s': %w", r.id, err)
	}
	f := r.iters[loop]
	if f == nil {
		path := filepath.Join(r.root, itersDir, loop+".jsonl")
		f, err = appendFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			// The run's first record: iterations/ is made now. Like the
			// records, which are not synced, its entry needs no sync.
			if err = os.Mkdir(filepath.Join(r.root, itersDir), 0o755); err == nil || errors.Is(err, fs.ErrExist) {
				f, err = appendFile(path)
			}
		}
		if err != nil {
			return fmt.Errorf("append iteration of run '%s': %w", r.id, err)
		}
		r.iters[loop] = f
	}
	if _, err := f.Write(b); err != nil {
		return fmt.Errorf("append iteration of run '%s': %w", r.id, err)
	}
	return nil
}

// validLoop reports whether name matches [A-Za-z_][A-Za-z0-9_-]*.
func validLoop(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', c == '_':
		case i > 0 && ('0' <= c && c <= '9' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// AppendEvent appends ev as one line to logs/events.jsonl with one write,
// unbuffered and not fsynced. It takes a vm.Event, not any value: an
// Event boxed in an interface would cost an allocation of its own per
// event.
func (r *Run) AppendEvent(ev vm.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.usable(false); err != nil {
		return fmt.Errorf("append event of run '%s': %w", r.id, err)
	}
	b, err := ev.AppendJSON(r.scratch[:0])
	if err != nil {
		return fmt.Errorf("encode event of run '%s': %w", r.id, err)
	}
	b = append(b, '\n')
	r.keepScratch(b)
	if _, err := r.events.Write(b); err != nil {
		return fmt.Errorf("append event of run '%s': %w", r.id, err)
	}
	return nil
}

// Load reads the run's state: it discards a leftover state.json.tmp,
// decodes state.json into state (a pointer, as for json.Unmarshal; nil to
// skip), then calls apply with each journal delta the snapshot does not
// include, in order. A missing or invalid state.json is EStateCorrupt,
// unless it is missing and the journal has deltas: then state is left as
// it is and the deltas are applied to it. An invalid journal line, a gap in
// the sequence, or an error from apply is EStateCorrupt too; a torn last
// line is dropped. Load must be called once, before the journal or the
// snapshot is written, on a run from Open.
func (r *Run) Load(state any, apply func(delta []byte) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.usable(false); err != nil {
		return fmt.Errorf("load run '%s': %w", r.id, err)
	}
	if err := os.Remove(filepath.Join(r.root, stateTmp)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove leftover %s of run '%s': %w", stateTmp, r.id, err)
	}
	base, haveState, err := r.readState(state)
	if err != nil {
		return err
	}
	deltas, seqs, err := r.readJournal(base)
	if err != nil {
		return err
	}
	if !haveState && len(deltas) == 0 {
		return noState(r.id)
	}
	r.seq = base
	for i, d := range deltas {
		if err := apply(d); err != nil {
			return corrupt(r.id, fmt.Errorf("journal entry %d: %w", seqs[i], err))
		}
		r.seq = seqs[i]
	}
	r.loaded = true
	r.since = len(deltas)
	r.lastSnap = r.policy.Now()
	return nil
}

// readState decodes state.json into state and returns its journal_seq, and
// whether the file exists.
func (r *Run) readState(state any) (int64, bool, error) {
	b, err := os.ReadFile(filepath.Join(r.root, stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, unreadable(r.id, "read "+stateFile, err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return 0, false, corrupt(r.id, err)
	}
	if top == nil {
		return 0, false, corrupt(r.id, errors.New("state.json is not a JSON object"))
	}
	var seq int64
	if raw, ok := top[seqKey]; ok {
		if err := json.Unmarshal(raw, &seq); err != nil || seq < 0 {
			return 0, false, corrupt(r.id, fmt.Errorf("bad %s %s", seqKey, raw))
		}
		delete(top, seqKey)
	}
	if state != nil {
		// Decode with journal_seq removed, so callers never see it.
		clean, err := json.Marshal(top)
		if err != nil {
			return 0, false, fmt.Errorf("load state of run '%s': %w", r.id, err)
		}
		if err := json.Unmarshal(clean, state); err != nil {
			var inv *json.InvalidUnmarshalError
			if errors.As(err, &inv) {
				return 0, false, fmt.Errorf("load state of run '%s': %w", r.id, err)
			}
			return 0, false, corrupt(r.id, err)
		}
	}
	return seq, true, nil
}

// readJournal returns the journal's deltas after seq base, with their seqs,
// and cuts a torn last line off the file.
func (r *Run) readJournal(base int64) ([][]byte, []int64, error) {
	b, err := os.ReadFile(filepath.Join(r.root, journalFile))
	if err != nil {
		return nil, nil, unreadable(r.id, "read "+journalFile, err)
	}
	if i := bytes.LastIndexByte(b, '\n'); i+1 < len(b) {
		// A torn append: it never returned, so the delta was never durable.
		// A read-only reader (Store.Read) leaves the file alone.
		if r.journal != nil {
			if err := r.journal.Truncate(int64(i + 1)); err != nil {
				return nil, nil, fmt.Errorf("cut torn journal line of run '%s': %w", r.id, err)
			}
		}
		b = b[:i+1]
	}
	var (
		deltas [][]byte
		seqs   []int64
		prev   int64 = -1
	)
	for n := 1; len(b) > 0; n++ {
		i := bytes.IndexByte(b, '\n')
		text := b[:i]
		b = b[i+1:]
		var e struct {
			Seq   *int64          `json:"seq"`
			Delta json.RawMessage `json:"delta"`
		}
		if err := json.Unmarshal(text, &e); err != nil {
			return nil, nil, corrupt(r.id, fmt.Errorf("journal line %d: %w", n, err))
		}
		if e.Seq == nil || len(e.Delta) == 0 {
			return nil, nil, corrupt(r.id, fmt.Errorf("journal line %d: want seq and delta", n))
		}
		seq := *e.Seq
		if prev >= 0 && seq != prev+1 {
			return nil, nil, corrupt(r.id, fmt.Errorf("journal line %d: seq %d after %d", n, seq, prev))
		}
		prev = seq
		if seq <= base {
			continue // already in the snapshot
		}
		if len(deltas) == 0 && seq != base+1 {
			return nil, nil, corrupt(r.id, fmt.Errorf("journal line %d: seq %d, want %d", n, seq, base+1))
		}
		deltas = append(deltas, e.Delta)
		seqs = append(seqs, seq)
	}
	return deltas, seqs, nil
}

// Close releases the lock and closes the run's files. Closing a closed Run
// does nothing.
func (r *Run) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lock == nil {
		return nil
	}
	if r.catchUp != nil {
		r.catchUp.Stop()
	}
	var errs []error
	if r.loaded && r.journal != nil {
		errs = append(errs, r.payOwed())
	}
	loops := make([]string, 0, len(r.iters))
	for l := range r.iters {
		loops = append(loops, l)
	}
	sort.Strings(loops)
	files := []*os.File{r.journal, r.events}
	for _, l := range loops {
		files = append(files, r.iters[l])
	}
	for _, f := range files {
		if f != nil {
			if err := f.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	r.iters = nil
	errs = append(errs, unlock(r.lock))
	r.lock = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close run '%s': %w", r.id, err)
	}
	return nil
}

// maxStateDepth bounds the nesting of a snapshot or a journal entry well
// below what the JSON decoder reads back (10000 levels): a state that could
// not be loaded is never written. Values that enter a run are bounded far
// lower (source.MaxDepth), so only a bug reaches this.
const maxStateDepth = 1000

// errTooDeep is the error of a state that would be too deep to read back.
var errTooDeep = &source.Error{Code: source.ELimit, Msg: fmt.Sprintf("state nests deeper than %d levels and could not be read back; not written", maxStateDepth)}

// JSONDepth is the deepest nesting of arrays and objects in the JSON text b
// (brackets inside strings do not count). It is at most len(b), so callers
// skip the scan of a text no longer than the limit.
func JSONDepth(b []byte) int {
	depth, deepest, inStr, esc := 0, 0, false, false
	for _, c := range b {
		switch {
		case inStr && esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}
