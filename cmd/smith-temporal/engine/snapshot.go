package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A run's files follow it to any worker (CONTRACT 14): after each step the
// worker stores a snapshot of the run's WORKSPACE in the blob store (a
// Manifest, itself a blob, whose files are blobs), and the step's result
// names it; the workflow sends the last snapshot with the next step, and
// a worker whose WORKSPACE is not at that snapshot restores it first. The
// threads of a parallel step each carry their own snapshot, merged at the
// join in the VM's order (mergeFiles); threads in flight at once on one
// worker leave each other's files alone (begin).

// A Manifest is a snapshot of a WORKSPACE: every regular file and symbolic
// link by path relative to it ('/'), .git directories left out.
type Manifest struct {
	Files map[string]Entry `json:"files"`
}

// An Entry is one file of a Manifest: its content's blob and its mode, or
// the target of a link.
type Entry struct {
	Blob string      `json:"blob,omitempty"`
	Mode fs.FileMode `json:"mode"`
	Link string      `json:"link,omitempty"`
}

// workspaceFiles is a worker's side of the snapshots.
type workspaceFiles struct {
	mu sync.Mutex
	// synced is, per run, the snapshot this worker's WORKSPACE was last
	// made equal to (restored or taken) for that run.
	synced map[string]string
	// flying counts, per run, its steps in flight here (begin, end).
	flying map[string]int
	// stats caches the blob of each file by path, size and time, so that
	// a snapshot hashes only the files that changed.
	stats map[string]fileStat

	// runs, when set, is the folder of the runs' folders on this worker
	// (BASE/.orchestrator/runs): each run's record (runRecord) is kept in
	// its folder, so that a restarted worker knows what it last synced
	// for the run and whether a step of it was cut off there.
	runs string
	// self names this worker process in the records it writes.
	self proc
	// born is when this worker process started: files changed since are
	// its own steps' work, never a dead process's.
	born time.Time
	// since is, per run with steps in flight here, when the first of them
	// began (the ctime of the run's record, written then).
	since map[string]time.Time
	// cutOff is, per run, the changes of steps of the run that began here
	// and never ended (the worker died, or the step failed as an
	// activity): not the run's files, swept at its next restore.
	cutOff map[string]window
	// sweeps counts the sweeps that removed files; checked is, per run,
	// the count when its files were last made whole. A sweep may remove
	// another run's file (one that changed in the window), so a run's
	// restore skips its writes only when no sweep came since.
	sweeps  int
	checked map[string]int

	// beatMu guards beating, the runs with steps in flight here whose
	// beat files this process rewrites every beatEvery (0: only when beat
	// is called), and beatLoop, whether the goroutine that does runs. It
	// is apart from mu, which a long restore holds: no beat waits for one.
	beatMu    sync.Mutex
	beating   map[string]bool
	beatLoop  bool
	beatEvery time.Duration
	// fsNow, when set, stands for the file system's clock (clock).
	fsNow func() (time.Time, error)
}

// A live worker shows that its steps in flight are alive: while steps of
// a run are in flight here, it rewrites the run's beat file
// (RUN/files.beat) every beatPeriod, which moves the file's ctime. A
// flying record whose last sign of life, the later ctime of the record
// and of the run's beat file, is more than deadAfter old on the file
// system's own clock (clock) is a dead writer's: its host died, or its
// step failed as an activity and no step of the run runs there since.
// deadAfter is far above the steps' heartbeat timeout (10 s): Temporal
// has given the step to another worker long before, so a writer taken
// for dead is one whose step Temporal gave up on too; and it leaves room
// for NFS's attribute cache (60 s at most by default) and for clocks
// that differ a little where the clients stamp ctimes.
const (
	beatPeriod = 10 * time.Second
	deadAfter  = 5 * time.Minute
)

// newWorkspaceFiles is the snapshots' side of a worker process started at
// born whose runs' folders are under runs ("": records in memory only).
func newWorkspaceFiles(runs string, born time.Time) *workspaceFiles {
	return &workspaceFiles{synced: map[string]string{}, stats: map[string]fileStat{},
		runs: runs, self: thisWorker(), born: born, beatEvery: beatPeriod}
}

// A window is a time span [since, until] of file changes (ctime).
type window struct{ since, until time.Time }

// A runRecord is what a worker keeps on its disk about a run
// (RUN_ROOT/files.json), rewritten when a step of the run begins or ends
// here: the snapshot last synced, and whether steps of the run are in
// flight. The record's own ctime is when the first of them began; a
// record left flying by a process that is gone marks the changes made
// from then on as a cut-off step's. Beats says that its writer beats
// while the steps fly (a record of an older worker does not: its age
// tells nothing).
type runRecord struct {
	Synced string `json:"synced,omitempty"`
	Flying bool   `json:"flying,omitempty"`
	Beats  bool   `json:"beats,omitempty"`
	Worker proc   `json:"worker"`
}

// A proc is a process on a host: its pid and start time (from /proc,
// so that a pid used again is another process).
type proc struct {
	Host  string `json:"host"`
	PID   int    `json:"pid"`
	Start string `json:"start"`
}

func thisWorker() proc {
	host, _ := os.Hostname()
	pid := os.Getpid()
	return proc{Host: host, PID: pid, Start: procStart(pid)}
}

// procStart is the start time of process pid in clock ticks since boot
// ("" when there is no such process, or it is a zombie).
func procStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	f := strings.Fields(rest) // from field 3, the state
	if len(f) < 20 || f[0] == "Z" {
		return ""
	}
	return f[19] // field 22, starttime
}

// gone reports whether process p has ended. A process of another host,
// or one whose start is not known, is never known to have ended.
func (w *workspaceFiles) gone(p proc) bool {
	return p.Host == w.self.Host && p != w.self && p.Start != "" && procStart(p.PID) != p.Start
}

func (w *workspaceFiles) recordPath(runID string) string {
	return filepath.Join(w.runs, runID, "files.json")
}

func (w *workspaceFiles) beatPath(runID string) string {
	return filepath.Join(w.runs, runID, "files.beat")
}

// startBeats counts run runID's beat file among those this process
// rewrites, and starts the goroutine that does (every beatEvery).
func (w *workspaceFiles) startBeats(runID string) {
	w.beatMu.Lock()
	defer w.beatMu.Unlock()
	if w.beating == nil {
		w.beating = map[string]bool{}
	}
	w.beating[runID] = true
	if w.beatLoop || w.beatEvery <= 0 {
		return
	}
	w.beatLoop = true
	go func() {
		t := time.NewTicker(w.beatEvery)
		defer t.Stop()
		for range t.C {
			if !w.beat() {
				return
			}
		}
	}()
}

// stopBeats ends run runID's beats (no step of it in flight here).
func (w *workspaceFiles) stopBeats(runID string) {
	w.beatMu.Lock()
	defer w.beatMu.Unlock()
	delete(w.beating, runID)
}

// beat rewrites the beat file of every run with steps in flight here; it
// reports whether there was one (when not, the goroutine ends, and the
// next startBeats starts it again).
func (w *workspaceFiles) beat() bool {
	w.beatMu.Lock()
	runs := make([]string, 0, len(w.beating))
	for run := range w.beating {
		runs = append(runs, run)
	}
	if len(runs) == 0 {
		w.beatLoop = false
	}
	w.beatMu.Unlock()
	for _, run := range runs {
		w.writeBeat(run)
	}
	return len(runs) > 0
}

// writeBeat rewrites run runID's beat file, which moves its ctime (a
// write that fails leaves the record to look dead sooner: the step's
// files may then be swept by other workers, as its WORKSPACE is failing).
func (w *workspaceFiles) writeBeat(runID string) error {
	data, err := json.Marshal(w.self)
	if err == nil {
		err = os.WriteFile(w.beatPath(runID), data, 0o644)
	}
	return err
}

// clock is the file system's clock now: the ctime of a file made for the
// purpose in the runs' folder (so a writer's beats, stamped by the same
// file system, and now are read on one clock, not two hosts').
func (w *workspaceFiles) clock() (time.Time, error) {
	if w.fsNow != nil {
		return w.fsNow()
	}
	f, err := os.CreateTemp(w.runs, ".clock-")
	if err != nil {
		return time.Time{}, err
	}
	defer os.Remove(f.Name())
	fi, err := f.Stat()
	f.Close()
	if err != nil {
		return time.Time{}, err
	}
	return changed(fi), nil
}

// lastSign is the last sign of life of the writer of run runID's flying
// record, whose ctime is began: the later of began and its beat file's
// ctime.
func (w *workspaceFiles) lastSign(runID string, began time.Time) time.Time {
	if fi, err := os.Stat(w.beatPath(runID)); err == nil && changed(fi).After(began) {
		return changed(fi)
	}
	return began
}

// load reads run runID's record, when this process has none in memory
// (it restarted, or another worker process shares its BASE): the
// snapshot then synced, and, when the record's writer died with steps of
// the run in flight, their window to sweep. It writes nothing: after a
// load the next restore writes every file again (no skip, as before a
// first sync).
func (w *workspaceFiles) load(runID string) {
	if w.runs == "" {
		return
	}
	if _, ok := w.synced[runID]; ok {
		return
	}
	path := w.recordPath(runID)
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	fi, err := os.Stat(path)
	if err != nil {
		return
	}
	var rec runRecord
	if json.Unmarshal(data, &rec) != nil {
		return
	}
	w.synced[runID] = rec.Synced
	w.setChecked(runID, -1)
	if rec.Flying && w.gone(rec.Worker) {
		// Restarted after the step began: what changed since this process
		// started is its own steps'. Otherwise (another process sharing the
		// BASE died) up to now, less the steps in flight (sweep).
		since, until := changed(fi), w.born
		if !w.born.After(since) {
			until = time.Now()
		}
		w.cutOffAt(runID, window{since: since, until: until})
	}
}

// busySince is when the first step in flight in WORKSPACE of a run other
// than runID began, as far as this worker knows (zero: none): its own
// steps, and those in the records of the runs' folders whose writer may be
// alive (other processes sharing the BASE; this one's records are left
// flying by a step that failed as an activity, after it): not a process
// of this host that is gone, nor a writer that has not beaten for
// deadAfter.
func (w *workspaceFiles) busySince(runID string) time.Time {
	var first time.Time
	earlier := func(t time.Time) {
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	for run, t := range w.since {
		if run != runID {
			earlier(t)
		}
	}
	if w.runs == "" {
		return first
	}
	var now time.Time // the file system's clock, read once when a record needs it
	clocked := false
	dirs, _ := os.ReadDir(w.runs)
	for _, d := range dirs {
		if d.Name() == runID || !d.IsDir() {
			continue
		}
		path := w.recordPath(d.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var rec runRecord
		fi, err := os.Stat(path)
		if err != nil || json.Unmarshal(data, &rec) != nil || !rec.Flying || rec.Worker == w.self || w.gone(rec.Worker) {
			continue
		}
		began := changed(fi)
		if rec.Beats {
			if !clocked {
				now, _ = w.clock() // zero when it fails: no record is dead by age
				clocked = true
			}
			if !now.IsZero() && now.Sub(w.lastSign(d.Name(), began)) > deadAfter {
				continue
			}
		}
		earlier(began)
	}
	return first
}

// save writes run runID's record (nothing without w.runs); flying, it
// returns the record's ctime: when the step that starts now began.
func (w *workspaceFiles) save(runID string, flying bool) (time.Time, error) {
	if w.runs == "" {
		return time.Now(), nil
	}
	data, err := json.Marshal(runRecord{Synced: w.synced[runID], Flying: flying, Beats: flying, Worker: w.self})
	if err != nil {
		return time.Time{}, err
	}
	path := w.recordPath(runID)
	if flying {
		// The beats start before the record flies: a flying record's
		// last sign of life is never before its writer began to beat.
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return time.Time{}, fmt.Errorf("the run's record: %w", err)
		}
		if err := w.writeBeat(runID); err != nil {
			return time.Time{}, fmt.Errorf("the run's beat: %w", err)
		}
	}
	err = os.WriteFile(path, data, 0o644)
	if errors.Is(err, fs.ErrNotExist) { // the run's first step here
		if err = os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
			err = os.WriteFile(path, data, 0o644)
		}
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("the run's record: %w", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return time.Time{}, fmt.Errorf("the run's record: %w", err)
	}
	if flying {
		w.startBeats(runID)
	}
	return changed(fi), nil
}

// changed is the ctime of a file: the time of its last change, content,
// name or mode, which no step can set back (touch -d sets mtime only).
func changed(fi fs.FileInfo) time.Time {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
	}
	return fi.ModTime()
}

func (w *workspaceFiles) setChecked(runID string, n int) {
	if w.checked == nil {
		w.checked = map[string]int{}
	}
	w.checked[runID] = n
}

func (w *workspaceFiles) cutOffAt(runID string, win window) {
	if w.cutOff == nil {
		w.cutOff = map[string]window{}
	}
	if old, ok := w.cutOff[runID]; ok && old.since.Before(win.since) {
		win.since = old.since
	}
	w.cutOff[runID] = win
}

// sweep removes the files of WORKSPACE ws (.git directories left out, as
// in a snapshot) that changed within win, but before any step of another
// run now in flight began (busySince), and that next does not name: a
// cut-off step's work. A .git file (a worktree's link) and a project's
// own .orchestrator/ are never touched. It returns how many it removed.
func (w *workspaceFiles) sweep(ws, runID string, next *Manifest, win window) (int, error) {
	if busy := w.busySince(runID); !busy.IsZero() && !busy.After(win.until) {
		win.until = busy.Add(-time.Nanosecond)
	}
	if win.until.Before(win.since) {
		return 0, nil
	}
	var gone []string
	err := walkWorkspace(ws, func(path, rel string, fi fs.FileInfo) error {
		if t := changed(fi); t.Before(win.since) || t.After(win.until) {
			return nil
		}
		if strings.HasPrefix(rel, ".orchestrator/") || fi.Name() == ".git" {
			return nil
		}
		if _, ok := next.Files[rel]; !ok && (fi.Mode().IsRegular() || fi.Mode()&fs.ModeSymlink != 0) {
			gone = append(gone, rel)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("restore: %w", err)
	}
	for _, rel := range gone {
		if err := w.remove(ws, rel); err != nil {
			return 0, err
		}
	}
	return len(gone), nil
}

type fileStat struct {
	size  int64
	mtime time.Time
	mode  fs.FileMode
	blob  string
}

// loadManifest reads snapshot ref ("" is the empty snapshot).
func loadManifest(b *Blobs, ref string) (*Manifest, error) {
	m := &Manifest{Files: map[string]Entry{}}
	if ref == "" {
		return m, nil
	}
	data, err := b.Get(ref)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, m); err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", ref, err)
	}
	if m.Files == nil {
		m.Files = map[string]Entry{}
	}
	return m, nil
}

// putManifest stores m and returns its ref (encoding/json sorts the
// paths: the same files are the same blob).
func putManifest(b *Blobs, m *Manifest) (string, error) {
	data, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	return b.Put(data)
}

// restore makes the WORKSPACE ws of run runID equal to snapshot want on
// the files the snapshot names: files that differ are written, and files
// of the snapshot this worker last had for the run that want lacks are
// removed (a later step on another worker deleted them). Other files are
// left alone but for a cut-off step's (restoreWhole): WORKSPACE is shared
// with the other runs of this BASE, as on the local engine. While steps of the run are in flight here, the files
// they changed are left alone too (begin).
func (w *workspaceFiles) restore(b *Blobs, ws, runID, want string) error {
	_, err := w.start(b, ws, runID, want, false)
	return err
}

// A flight is one step of a run on this worker, from the restore of its
// files (begin) to its snapshot (end).
type flight struct {
	run  string
	want string // the snapshot the step started from
	// others are the files that the run's other steps in flight here had
	// changed when this one started: theirs, not this step's.
	others map[string]bool
	flying bool // counted in workspaceFiles.flying
	ended  bool // its snapshot taken (end)
}

// begin restores the files of a step of run runID (restore) and counts
// the step in flight until end or land.
//
// The threads of a parallel step run at once, each from its own snapshot,
// and may run on one worker, in one WORKSPACE. So while other steps of the
// run are in flight here, a restore leaves alone every file that differs
// from the snapshot the worker's files were last whole at (synced): those
// files are in-flight steps' work, half-written maybe. It makes the other
// files equal to want, and synced does not move until no step of the run
// is in flight (then it is the last step's walk). The step's snapshot
// then holds its walk of WORKSPACE but, for the files the other steps had
// changed when it started (and that differ from want), want's entries:
// another thread's files are that thread's to report, and the join merges
// each thread's own changes.
func (w *workspaceFiles) begin(b *Blobs, ws, runID, want string) (*flight, error) {
	return w.start(b, ws, runID, want, true)
}

func (w *workspaceFiles) start(b *Blobs, ws, runID, want string, fly bool) (*flight, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := &flight{run: runID, want: want}
	var err error
	if w.flying[runID] == 0 {
		w.load(runID)
		var moved bool
		if moved, err = w.restoreWhole(b, ws, runID, want); err == nil && (moved || fly) {
			var at time.Time
			if at, err = w.save(runID, fly); err == nil && fly {
				if w.since == nil {
					w.since = map[string]time.Time{}
				}
				w.since[runID] = at
			}
		}
	} else {
		f.others, err = w.restoreAround(b, ws, runID, want)
	}
	if err != nil {
		return nil, err
	}
	if fly {
		if w.flying == nil {
			w.flying = map[string]int{}
		}
		w.flying[runID]++
		f.flying = true
	}
	return f, nil
}

// land ends flight f without a snapshot (a step that failed as an
// activity); after end it does nothing.
func (w *workspaceFiles) land(f *flight) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.landLocked(f)
}

func (w *workspaceFiles) landLocked(f *flight) {
	if f == nil || !f.flying {
		return
	}
	f.flying = false
	if w.flying[f.run]--; w.flying[f.run] <= 0 {
		delete(w.flying, f.run)
		w.stopBeats(f.run)
		if since, ok := w.since[f.run]; ok && !f.ended {
			// The last step of the run here ended without a snapshot:
			// what the run's steps changed here since the first of them
			// began is not the run's (swept at its next restore).
			w.cutOffAt(f.run, window{since: since, until: time.Now()})
		}
		delete(w.since, f.run)
	}
}

// restoreWhole is restore with no step of the run in flight here; it
// reports whether the run's record changed.
//
// Steps of the run that began here and never ended (cutOff: the worker
// died, or the step failed as an activity) left changes that no snapshot
// holds: the files that changed in WORKSPACE since the first of them
// began (until this process started, after a restart; and before any step
// of another run still in flight began), that want does not name, are
// removed, whoever wrote them. So the step sees the
// files of the run's last completed step, also on the worker that was
// running it, while the files that no step changed then (the project's,
// earlier runs') are left alone.
func (w *workspaceFiles) restoreWhole(b *Blobs, ws, runID, want string) (bool, error) {
	cut, isCut := w.cutOff[runID]
	if !isCut && (want == "" || w.synced[runID] == want && w.checked[runID] == w.sweeps) {
		return false, nil
	}
	next, err := loadManifest(b, want)
	if err != nil {
		return false, err
	}
	if isCut {
		n, err := w.sweep(ws, runID, next, cut)
		if err != nil {
			return false, err
		}
		if n > 0 {
			w.sweeps++ // other runs write their files again
		}
		delete(w.cutOff, runID)
		if want == "" {
			return true, nil
		}
	}
	prev, err := loadManifest(b, w.synced[runID])
	if err != nil {
		prev = &Manifest{Files: map[string]Entry{}}
	}
	for _, rel := range sortedPaths(prev) {
		if _, ok := next.Files[rel]; !ok {
			if err := w.remove(ws, rel); err != nil {
				return false, err
			}
		}
	}
	for _, rel := range sortedPaths(next) {
		if err := w.write(b, ws, rel, next.Files[rel]); err != nil {
			return false, err
		}
	}
	w.synced[runID] = want
	w.setChecked(runID, w.sweeps)
	return true, nil
}

// restoreAround is restore while other steps of the run are in flight
// here (begin); it returns the files they changed that differ from want.
func (w *workspaceFiles) restoreAround(b *Blobs, ws, runID, want string) (map[string]bool, error) {
	cur, err := w.scan(b, ws)
	if err != nil {
		return nil, err
	}
	prev, err := loadManifest(b, w.synced[runID])
	if err != nil {
		prev = &Manifest{Files: map[string]Entry{}}
	}
	next, err := loadManifest(b, want)
	if err != nil {
		return nil, err
	}
	others := map[string]bool{}
	busy := func(rel string) bool { // changed by a step in flight
		c, inCur := cur.Files[rel]
		p, inPrev := prev.Files[rel]
		return inCur != inPrev || c != p
	}
	for rel, c := range cur.Files {
		if n, ok := next.Files[rel]; busy(rel) && (!ok || n != c) {
			others[rel] = true
		}
	}
	if want == "" {
		return others, nil
	}
	for _, rel := range sortedPaths(prev) {
		if _, ok := next.Files[rel]; !ok && !busy(rel) {
			if err := w.remove(ws, rel); err != nil {
				return nil, err
			}
		}
	}
	for _, rel := range sortedPaths(next) {
		if busy(rel) {
			if _, ok := cur.Files[rel]; !ok {
				others[rel] = true // removed by a step in flight
			}
			continue
		}
		if err := w.write(b, ws, rel, next.Files[rel]); err != nil {
			return nil, err
		}
	}
	return others, nil
}

func (w *workspaceFiles) remove(ws, rel string) error {
	if err := os.Remove(filepath.Join(ws, filepath.FromSlash(rel))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("restore %s: %w", rel, err)
	}
	return nil
}

// write makes file rel of ws equal to e, unless it is already.
func (w *workspaceFiles) write(b *Blobs, ws, rel string, e Entry) error {
	path := filepath.Join(ws, filepath.FromSlash(rel))
	if cur, ok := w.entry(ws, rel); ok && cur == e {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("restore %s: %w", rel, err)
	}
	os.Remove(path)
	if e.Link != "" {
		if err := os.Symlink(e.Link, path); err != nil {
			return fmt.Errorf("restore %s: %w", rel, err)
		}
		return nil
	}
	data, err := b.Get(e.Blob)
	if err != nil {
		return fmt.Errorf("restore %s: %w", rel, err)
	}
	if err := os.WriteFile(path, data, e.Mode.Perm()); err != nil {
		return fmt.Errorf("restore %s: %w", rel, err)
	}
	os.Chmod(path, e.Mode.Perm()) // WriteFile's mode passes the umask
	return nil
}

// entry is the Entry of file rel of ws as it is now (false: none).
func (w *workspaceFiles) entry(ws, rel string) (Entry, bool) {
	path := filepath.Join(ws, filepath.FromSlash(rel))
	fi, err := os.Lstat(path)
	if err != nil {
		return Entry{}, false
	}
	return w.entryOf(path, fi, nil)
}

// entryOf is the Entry of the file at path; put, when set, stores the
// content of a file whose blob is not known yet.
func (w *workspaceFiles) entryOf(path string, fi fs.FileInfo, put func([]byte) (string, error)) (Entry, bool) {
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(path)
		return Entry{Mode: fs.ModeSymlink, Link: target}, err == nil
	}
	if !fi.Mode().IsRegular() {
		return Entry{}, false
	}
	st, ok := w.stats[path]
	if ok && st.size == fi.Size() && st.mtime.Equal(fi.ModTime()) && st.mode == fi.Mode() {
		return Entry{Blob: st.blob, Mode: fi.Mode().Perm()}, true
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Entry{}, false
	}
	var ref string
	if put != nil {
		if ref, err = put(data); err != nil {
			return Entry{}, false
		}
	} else {
		sum := sha256.Sum256(data)
		ref = hex.EncodeToString(sum[:])
	}
	w.stats[path] = fileStat{size: fi.Size(), mtime: fi.ModTime(), mode: fi.Mode(), blob: ref}
	return Entry{Blob: ref, Mode: fi.Mode().Perm()}, true
}

// snapshot stores the files of WORKSPACE ws as run runID's snapshot and
// returns its ref.
func (w *workspaceFiles) snapshot(b *Blobs, ws, runID string) (string, error) {
	return w.end(b, ws, &flight{run: runID})
}

// end stores the snapshot of flight f's step (begin) and returns its ref;
// the step is no longer in flight.
func (w *workspaceFiles) end(b *Blobs, ws string, f *flight) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f.ended = true
	w.landLocked(f)
	m, err := w.scan(b, ws)
	if err != nil {
		return "", err
	}
	whole, err := putManifest(b, m)
	if err != nil {
		return "", err
	}
	if w.flying[f.run] == 0 {
		w.synced[f.run] = whole
		w.setChecked(f.run, w.sweeps)
		if _, err := w.save(f.run, false); err != nil {
			return "", err
		}
	}
	if len(f.others) == 0 {
		return whole, nil
	}
	from, err := loadManifest(b, f.want)
	if err != nil {
		return "", err
	}
	for rel := range f.others {
		if e, ok := from.Files[rel]; ok {
			m.Files[rel] = e
		} else {
			delete(m.Files, rel)
		}
	}
	return putManifest(b, m)
}

// scan is the Manifest of WORKSPACE ws as it is now; the contents not in
// the store yet are put there.
func (w *workspaceFiles) scan(b *Blobs, ws string) (*Manifest, error) {
	m := &Manifest{Files: map[string]Entry{}}
	var putErr error
	put := func(data []byte) (string, error) {
		ref, err := b.Put(data)
		if err != nil {
			putErr = err
		}
		return ref, err
	}
	err := walkWorkspace(ws, func(path, rel string, fi fs.FileInfo) error {
		if e, ok := w.entryOf(path, fi, put); ok {
			m.Files[rel] = e
		}
		return putErr
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot of %s: %w", ws, err)
	}
	return m, nil
}

// walkWorkspace calls fn for every file of WORKSPACE ws that is not a
// directory, by path and by path relative to ws ('/'), .git directories
// left out; files removed while it walks are skipped.
func walkWorkspace(ws string, fn func(path, rel string, fi fs.FileInfo) error) error {
	err := filepath.WalkDir(ws, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walk
			}
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" && path != ws {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(ws, path)
		return fn(path, filepath.ToSlash(rel), fi)
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// mergeFiles is the snapshot after a parallel step's join: the snapshot
// at the fork (base), then each thread's changes to it (files written,
// files removed), in the VM's order of the threads, so that the files
// after the join do not depend on which thread finished first.
func mergeFiles(b *Blobs, base string, threads []string) (string, error) {
	changed := false
	for _, t := range threads {
		changed = changed || t != base
	}
	if !changed {
		return base, nil
	}
	out, err := loadManifest(b, base)
	if err != nil {
		return "", err
	}
	orig, _ := loadManifest(b, base)
	for _, t := range threads {
		if t == base || t == "" {
			continue
		}
		m, err := loadManifest(b, t)
		if err != nil {
			return "", err
		}
		for rel, e := range m.Files {
			if o, ok := orig.Files[rel]; !ok || o != e {
				out.Files[rel] = e
			}
		}
		for rel := range orig.Files {
			if _, ok := m.Files[rel]; !ok {
				delete(out.Files, rel)
			}
		}
	}
	return putManifest(b, out)
}

func sortedPaths(m *Manifest) []string {
	paths := make([]string, 0, len(m.Files))
	for p := range m.Files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	return paths
}
