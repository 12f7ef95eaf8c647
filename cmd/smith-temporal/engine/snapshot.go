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
	"sync"
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
// left alone: WORKSPACE is shared with the other runs of this BASE, as on
// the local engine. While steps of the run are in flight here, the files
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
		err = w.restoreWhole(b, ws, runID, want)
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
	}
}

// restoreWhole is restore with no step of the run in flight here.
func (w *workspaceFiles) restoreWhole(b *Blobs, ws, runID, want string) error {
	if want == "" || w.synced[runID] == want {
		return nil
	}
	next, err := loadManifest(b, want)
	if err != nil {
		return err
	}
	prev, err := loadManifest(b, w.synced[runID])
	if err != nil {
		prev = &Manifest{Files: map[string]Entry{}}
	}
	for _, rel := range sortedPaths(prev) {
		if _, ok := next.Files[rel]; !ok {
			if err := w.remove(ws, rel); err != nil {
				return err
			}
		}
	}
	for _, rel := range sortedPaths(next) {
		if err := w.write(b, ws, rel, next.Files[rel]); err != nil {
			return err
		}
	}
	w.synced[runID] = want
	return nil
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
		if e, ok := w.entryOf(path, fi, put); ok {
			rel, _ := filepath.Rel(ws, path)
			m.Files[filepath.ToSlash(rel)] = e
		}
		return putErr
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("snapshot of %s: %w", ws, err)
	}
	return m, nil
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
