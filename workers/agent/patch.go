package agent

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"smith/source"
	"smith/workers/confine"
	"smith/workers/step"
	"smith/workers/steprun"
)

// What a provider call did to the files (CONTRACT 5.2): --record keeps
// the changes the CLI made in its working directory (WORKSPACE or the
// run's worktree) next to the reply, as a list of file changes computed
// from a snapshot taken before the call and the files after it; --replay
// applies them where the CLI would have run. Each change names the
// content the file had before (its SHA-256), so a change that no longer
// applies is found before anything is written, and the step fails with
// E_REPLAY_MISS naming the files. The same snapshot diff serves a git
// work tree and a plain folder, and replay needs no git.

// A FileChange is one file or symbolic link a provider call created,
// changed or deleted.
type FileChange struct {
	Path string `json:"path"` // relative to the working directory, with / (masked)
	// PathBase64 is the path's bytes when they are not UTF-8 (which JSON
	// cannot hold): Path then shows them with U+FFFD.
	PathBase64 string `json:"path_base64,omitempty"`
	// Before is the SHA-256 (hex) of the file before the call, or for a
	// symbolic link "link:" and the SHA-256 of its target; "" when there
	// was neither.
	Before  string `json:"before,omitempty"`
	Deleted bool   `json:"deleted,omitempty"`
	// Exec says the new file is executable (mode 0755, else 0644).
	Exec bool `json:"exec,omitempty"`
	// Text is the new content when it is UTF-8 (masked like the reply);
	// Base64 the new content otherwise.
	Text   *string `json:"text,omitempty"`
	Base64 string  `json:"base64,omitempty"`
	// Link is the target of the symbolic link the call left at Path
	// (masked), which git keeps in a tree as it keeps a file.
	Link *string `json:"link,omitempty"`
}

// A fileState is what a snapshot knows of one regular file or symbolic
// link: its sum (for a link, linkSum of its target), and for a link its
// target.
type fileState struct {
	sum  string
	exec bool
	link *string
}

// linkSum is the state of a symbolic link to target, as FileChange.Before
// spells it.
func linkSum(target string) string {
	sum := sha256.Sum256([]byte(target))
	return "link:" + hex.EncodeToString(sum[:])
}

// A snapshot maps the regular files and symbolic links of a working
// directory (relative paths with /) to their state.
type snapshot map[string]fileState

// skipSnapshot reports whether rel (a directory or file of the working
// directory) is not the agent's work: git's folders (at any depth) and
// Smith's own, and the agents' message folders, which other threads and
// runs write.
func skipSnapshot(req *step.Request, rel string) bool {
	first, _, _ := strings.Cut(rel, "/")
	if first == ".orchestrator" || isGitName(path.Base(rel)) {
		return true
	}
	if req.Mail == nil {
		return false
	}
	if _, ok := req.Mail.Folder(rel); ok {
		return true
	}
	base := path.Base(rel)
	return base == ".sending" || base == step.ClaimsDir
}

// isGitName reports whether name is git's own folder or file (.git in
// any case, trailing dots and spaces ignored, as confinement reads it), at
// any depth: a repository the agent made or cloned inside its working
// directory keeps its metadata there, which replay may not write.
func isGitName(name string) bool {
	return strings.EqualFold(strings.TrimRight(name, ". "), ".git")
}

// takeSnapshot hashes every regular file below dir and reads every
// symbolic link (links are recorded, never followed).
func takeSnapshot(req *step.Request, dir string) (snapshot, error) {
	snap := snapshot{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			return nil // unreadable: not recorded
		}
		rel, rerr := filepath.Rel(dir, p)
		if rerr != nil || rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if skipSnapshot(req, rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			target, lerr := os.Readlink(p)
			if lerr != nil {
				return nil
			}
			snap[rel] = fileState{sum: linkSum(target), link: &target}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, ierr := d.Info()
		if ierr != nil {
			return nil
		}
		sum, herr := hashFile(p)
		if herr != nil {
			return nil
		}
		snap[rel] = fileState{sum: sum, exec: info.Mode()&0o111 != 0}
		return nil
	})
	return snap, err
}

// hashFile is the SHA-256 (hex) of the file p.
func hashFile(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return hashOf(f)
}

// hashOf is the SHA-256 (hex) of what r reads.
func hashOf(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// fileChanges compares the snapshots before and after a call of dir and
// returns the changes, sorted by path, with their new contents (masked).
func fileChanges(req *step.Request, dir string, before, after snapshot) ([]FileChange, error) {
	var out []FileChange
	for rel, a := range after {
		b, had := before[rel]
		if had && b.sum == a.sum && b.exec == a.exec {
			continue
		}
		if a.link != nil {
			target := req.Mask.String(*a.link)
			out = append(out, withPath(req, FileChange{Before: b.sum, Link: &target}, rel))
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", rel, err)
		}
		c := withPath(req, FileChange{Before: b.sum, Exec: a.exec}, rel)
		if utf8.Valid(data) {
			text := req.Mask.String(string(data))
			c.Text = &text
		} else {
			c.Base64 = base64.StdEncoding.EncodeToString(req.Mask.Bytes(data))
		}
		out = append(out, c)
	}
	for rel, b := range before {
		if _, ok := after[rel]; !ok {
			out = append(out, withPath(req, FileChange{Before: b.sum, Deleted: true}, rel))
		}
	}
	slices.SortFunc(out, func(x, y FileChange) int { return strings.Compare(x.Path, y.Path) })
	return out, nil
}

// withPath is c with its path rel: masked, and in base64 too when it is
// not UTF-8.
func withPath(req *step.Request, c FileChange, rel string) FileChange {
	c.Path = req.Mask.String(rel)
	if !utf8.ValidString(rel) {
		c.PathBase64 = base64.StdEncoding.EncodeToString(req.Mask.Bytes([]byte(rel)))
		c.Path = strings.ToValidUTF8(c.Path, "\uFFFD")
	}
	return c
}

// filePath is the path c names: PathBase64 decoded when it is set, else
// Path.
func (c FileChange) filePath() (string, error) {
	if c.PathBase64 == "" {
		return c.Path, nil
	}
	b, err := base64.StdEncoding.DecodeString(c.PathBase64)
	if err != nil {
		return "", fmt.Errorf("file '%s': path_base64: %v", c.Path, err)
	}
	return string(b), nil
}

// recordBefore is the folder under RUN_ROOT that keeps the snapshot taken
// before a recorded call until the call is recorded: a call cut off (a
// crash, Ctrl-C) and repeated by the resumed run counts its changes from
// that snapshot, not from the files the cut-off call left half-written,
// so the recording replays onto the files as they were before the call.
const recordBefore = "record-before"

// A savedState is a fileState as a saved snapshot holds it.
type savedState struct {
	Sum  string  `json:"sum"`
	Exec bool    `json:"exec,omitempty"`
	Link *string `json:"link,omitempty"`
}

// snapshotBeforePath is the file of the saved snapshot of call (see
// callID) of the request's step, "" when the call is not numbered or
// there is no RUN_ROOT.
func snapshotBeforePath(req *step.Request, call string) string {
	if call == "" || req.RunRoot == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(req.CallKey() + "#" + call))
	return filepath.Join(req.RunRoot, recordBefore, hex.EncodeToString(sum[:16])+".json")
}

// snapshotBefore returns the snapshot of the working directory before
// call: the one saved by an earlier try of the same call that was cut off,
// else a new one, saved until the call is recorded.
func (r *Runner) snapshotBefore(req *step.Request, call string) (snapshot, error) {
	p := snapshotBeforePath(req, call)
	if p != "" {
		if b, err := os.ReadFile(p); err == nil {
			var saved map[string]savedState
			if json.Unmarshal(b, &saved) == nil {
				snap := snapshot{}
				for rel, s := range saved {
					snap[rel] = fileState{sum: s.Sum, exec: s.Exec, link: s.Link}
				}
				return snap, nil
			}
		}
	}
	snap, err := takeSnapshot(req, req.Dirs.Workspace)
	if err != nil || p == "" {
		return snap, err
	}
	saved := make(map[string]savedState, len(snap))
	for rel, s := range snap {
		saved[rel] = savedState{Sum: s.sum, Exec: s.exec, Link: s.link}
	}
	b, err := json.Marshal(saved)
	if err != nil {
		return nil, err
	}
	if err := confine.WriteFileAtomic(p, b, 0o644); err != nil {
		return nil, err
	}
	return snap, nil
}

// dropSnapshotBefore removes the saved snapshot of call once it is
// recorded.
func dropSnapshotBefore(req *step.Request, call string) {
	if p := snapshotBeforePath(req, call); p != "" {
		_ = os.Remove(p)
	}
}

// applyChanges makes the recorded changes in the request's working
// directory, each path confined. Every file must be as it was before the
// recorded call (same content, same link, or absent); otherwise nothing is
// written and the error (E_REPLAY_MISS) names the files that differ.
// Deletions go first, deepest first, so a folder the call replaced by a
// file (or a file by a folder) is out of the way when the new one is
// written.
func applyChanges(req *step.Request, changes []FileChange, from string) *source.Error {
	type target struct {
		abs  string
		data []byte
		dir  bool // a folder is where the file goes: removed first (it must be empty)
		link bool // a link is where the file goes: removed first
	}
	targets := make([]target, len(changes))
	var bad []string
	paths := make([]string, len(changes))
	links := map[string]bool{}
	for i, c := range changes {
		p, err := c.filePath()
		if err != nil {
			return source.Errorf(source.EReplayMiss, "replay step '%s': recording %s: %v", req.Step, from, err)
		}
		paths[i] = p
		if c.Link != nil {
			links[path.Clean(p)] = true
		}
	}
	for i, c := range changes {
		abs, err := req.Dirs.ResolveLeaf(paths[i])
		if err != nil {
			return source.Wrap(source.EReplayMiss, "replay the file changes of step '"+req.Step+"'", err)
		}
		// A recording never holds a file below a link it makes (a
		// snapshot does not follow links): one that does was edited to
		// write through the link, which is a path violation.
		for dir := path.Dir(path.Clean(paths[i])); dir != "." && dir != "/"; dir = path.Dir(dir) {
			if links[dir] {
				return source.Wrap(source.EReplayMiss, "replay the file changes of step '"+req.Step+"'",
					&confine.Error{Path: c.Path, Reason: fmt.Sprintf("passes through the symlink '%s' the same recording makes", dir)})
			}
		}
		now, isDir := currentSum(req, abs)
		var data []byte
		switch {
		case c.Deleted, c.Link != nil:
		case c.Text != nil:
			data = []byte(*c.Text)
		default:
			var err error
			if data, err = base64.StdEncoding.DecodeString(c.Base64); err != nil {
				return source.Errorf(source.EReplayMiss, "replay step '%s': recording %s: file '%s': %v", req.Step, from, c.Path, err)
			}
		}
		after := ""
		switch {
		case c.Deleted:
		case c.Link != nil:
			after = linkSum(*c.Link)
		default:
			sum := sha256.Sum256(data)
			after = hex.EncodeToString(sum[:])
		}
		switch {
		case now == after && now != c.Before:
			continue // applied already (the call is repeated after a crash)
		case now != c.Before:
			bad = append(bad, c.Path)
			continue
		}
		targets[i] = target{abs: abs, data: data, dir: isDir, link: strings.HasPrefix(now, "link:")}
	}
	if len(bad) > 0 {
		return source.Errorf(source.EReplayMiss, "the file changes of step '%s' recorded in %s no longer apply: %s changed since the recording",
			req.Step, from, strings.Join(bad, ", "))
	}
	fail := func(err error) *source.Error {
		if source.CodeOf(err, "") == source.EPathEscape {
			return source.Wrap(source.EReplayMiss, "replay the file changes of step '"+req.Step+"'", err)
		}
		return source.Errorf(source.EReplayMiss, "replay the file changes of step '%s': %s", req.Step, steprun.OSErrText(err))
	}
	for i := len(changes) - 1; i >= 0; i-- {
		if c := changes[i]; c.Deleted && targets[i].abs != "" {
			if err := req.Dirs.RemoveLeaf(targets[i].abs); err != nil {
				return fail(err)
			}
		}
	}
	for i, c := range changes {
		t := targets[i]
		if t.abs == "" || c.Deleted {
			continue
		}
		if t.dir {
			if err := req.Dirs.RemoveEmptyDir(t.abs); err != nil {
				return source.Errorf(source.EReplayMiss, "the file changes of step '%s' recorded in %s no longer apply: '%s' is a folder that is not empty (%s)",
					req.Step, from, c.Path, steprun.OSErrText(err))
			}
		}
		if t.link && c.Link == nil {
			if err := req.Dirs.RemoveLeaf(t.abs); err != nil {
				return fail(err)
			}
		}
		var err error
		switch {
		case c.Link != nil:
			err = req.Dirs.Symlink(*c.Link, t.abs)
		default:
			perm := fs.FileMode(0o644)
			if c.Exec {
				perm = 0o755
			}
			err = req.Dirs.WriteFile(t.abs, t.data, perm)
		}
		if err != nil {
			return fail(err)
		}
	}
	return nil
}

// currentSum is the state of abs (a path returned by ResolveLeaf) as a
// FileChange's Before spells it: "" when there is nothing (or a folder:
// isDir), "?" when it cannot be read or is neither a file nor a link.
func currentSum(req *step.Request, abs string) (sum string, isDir bool) {
	kind, target, err := req.Dirs.Leaf(abs)
	switch {
	case err != nil:
		return "?", false
	case kind == confine.LeafAbsent:
		return "", false
	case kind == confine.LeafDir:
		return "", true
	case kind == confine.LeafLink:
		return linkSum(target), false
	case kind != confine.LeafFile:
		return "?", false
	}
	f, err := req.Dirs.Open(abs)
	if err != nil {
		return "?", false
	}
	defer f.Close()
	if sum, err = hashOf(f); err != nil {
		return "?", false
	}
	return sum, false
}
