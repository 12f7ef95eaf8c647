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
// join in the VM's order (mergeFiles).

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
// the local engine.
func (w *workspaceFiles) restore(b *Blobs, ws, runID, want string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
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
			if err := os.Remove(filepath.Join(ws, filepath.FromSlash(rel))); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("restore %s: %w", rel, err)
			}
		}
	}
	for _, rel := range sortedPaths(next) {
		e := next.Files[rel]
		path := filepath.Join(ws, filepath.FromSlash(rel))
		if cur, ok := w.entry(ws, rel); ok && cur == e {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("restore %s: %w", rel, err)
		}
		os.Remove(path)
		if e.Link != "" {
			if err := os.Symlink(e.Link, path); err != nil {
				return fmt.Errorf("restore %s: %w", rel, err)
			}
			continue
		}
		data, err := b.Get(e.Blob)
		if err != nil {
			return fmt.Errorf("restore %s: %w", rel, err)
		}
		if err := os.WriteFile(path, data, e.Mode.Perm()); err != nil {
			return fmt.Errorf("restore %s: %w", rel, err)
		}
		os.Chmod(path, e.Mode.Perm()) // WriteFile's mode passes the umask
	}
	w.synced[runID] = want
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
	w.mu.Lock()
	defer w.mu.Unlock()
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
		return "", fmt.Errorf("snapshot of %s: %w", ws, err)
	}
	ref, err := putManifest(b, m)
	if err != nil {
		return "", err
	}
	w.synced[runID] = ref
	return ref, nil
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
