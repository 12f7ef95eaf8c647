package agent

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
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

// A FileChange is one file a provider call created, changed or deleted.
type FileChange struct {
	Path string `json:"path"` // relative to the working directory, with /
	// Before is the SHA-256 (hex) of the file before the call; "" when it
	// did not exist.
	Before  string `json:"before,omitempty"`
	Deleted bool   `json:"deleted,omitempty"`
	// Exec says the new file is executable (mode 0755, else 0644).
	Exec bool `json:"exec,omitempty"`
	// Text is the new content when it is UTF-8 (masked like the reply);
	// Base64 the new content otherwise.
	Text   *string `json:"text,omitempty"`
	Base64 string  `json:"base64,omitempty"`
}

// A fileState is what a snapshot knows of one regular file.
type fileState struct {
	sum  string
	exec bool
}

// A snapshot maps the regular files of a working directory (relative
// paths with /) to their state.
type snapshot map[string]fileState

// skipSnapshot reports whether rel (a directory or file of the working
// directory) is not the agent's work: git's and Smith's own folders, and
// the agents' message folders, which other threads and runs write.
func skipSnapshot(req *step.Request, rel string) bool {
	first, _, _ := strings.Cut(rel, "/")
	if first == ".git" || first == ".orchestrator" {
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

// takeSnapshot hashes every regular file below dir (links are not
// followed, nor recorded).
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
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
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
		if had && b == a {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", rel, err)
		}
		c := FileChange{Path: rel, Before: b.sum, Exec: a.exec}
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
			out = append(out, FileChange{Path: rel, Before: b.sum, Deleted: true})
		}
	}
	slices.SortFunc(out, func(x, y FileChange) int { return strings.Compare(x.Path, y.Path) })
	return out, nil
}

// applyChanges makes the recorded changes in the request's working
// directory, each path confined. Every file must be as it was before the
// recorded call (same content, or absent); otherwise nothing is written
// and the error (E_REPLAY_MISS) names the files that differ.
func applyChanges(req *step.Request, changes []FileChange, from string) *source.Error {
	type target struct {
		abs  string
		data []byte
	}
	targets := make([]target, len(changes))
	var bad []string
	for i, c := range changes {
		abs, err := req.Dirs.Resolve(c.Path)
		if err != nil {
			return source.Wrap(source.EReplayMiss, "replay the file changes of step '"+req.Step+"'", err)
		}
		now := ""
		if f, err := req.Dirs.Open(abs); err == nil {
			h := sha256.New()
			_, cerr := io.Copy(h, f)
			f.Close()
			if cerr == nil {
				now = hex.EncodeToString(h.Sum(nil))
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			now = "?"
		}
		var data []byte
		switch {
		case c.Deleted:
		case c.Text != nil:
			data = []byte(*c.Text)
		default:
			var err error
			if data, err = base64.StdEncoding.DecodeString(c.Base64); err != nil {
				return source.Errorf(source.EReplayMiss, "replay step '%s': recording %s: file '%s': %v", req.Step, from, c.Path, err)
			}
		}
		after := ""
		if !c.Deleted {
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
		targets[i] = target{abs: abs, data: data}
	}
	if len(bad) > 0 {
		return source.Errorf(source.EReplayMiss, "the file changes of step '%s' recorded in %s no longer apply: %s changed since the recording",
			req.Step, from, strings.Join(bad, ", "))
	}
	for i, c := range changes {
		if targets[i].abs == "" {
			continue
		}
		var err error
		if c.Deleted {
			err = req.Dirs.Remove(targets[i].abs)
		} else {
			perm := fs.FileMode(0o644)
			if c.Exec {
				perm = 0o755
			}
			err = req.Dirs.WriteFile(targets[i].abs, targets[i].data, perm)
		}
		if err != nil {
			return source.Errorf(source.EReplayMiss, "replay the file changes of step '%s': %s", req.Step, steprun.OSErrText(err))
		}
	}
	return nil
}
