package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"smith/workers/confine"
	"smith/workers/provider"
	"smith/workers/step"
	"smith/workers/steprun"
)

// An overlayCall is the overlay home of one call: root, the folder given
// as the CLI's home, and the user's configuration folder it links.
type overlayCall struct {
	root, userDir string
	o             *provider.Overlay
}

// overlayHome makes the overlay home of one call of a CLI whose retries
// only its settings file can turn off (gemini, CONTRACT 5): a folder of
// Smith's, under RUN_ROOT/providers, whose configuration folder links every
// entry of the user's (their login, history, extensions, .env, ...) except
// the settings file, which is a copy of theirs with the preset's keys set
// over it, and the files the CLI makes when missing (Overlay.Links), linked
// even when missing. The user's files are only read, except what the CLI
// writes through the links and its shared state files (Overlay.Merge): a
// missing one is made empty, and close merges the CLI's writes back into it. The folder is made anew for each call (two
// calls at once each get their own) and removed by close when the call
// ends; on an error the call has the folder made so far, root "" when none.
func overlayHome(req *step.Request, p steprun.Paths, f *provider.CLI, env map[string]string) (*overlayCall, error) {
	o := f.Overlay
	userRoot := env[f.Home]
	if userRoot == "" {
		userRoot = env["HOME"]
	}
	base := req.RunRoot
	if base == "" {
		base = p.TmpDir
	}
	parent := filepath.Join(base, "providers", "overlays")
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return &overlayCall{}, err
	}
	root, err := os.MkdirTemp(parent, req.Step+"-*")
	if err != nil {
		return &overlayCall{}, err
	}
	dir := filepath.Join(root, o.Dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return &overlayCall{root: root}, err
	}
	userDir := filepath.Join(userRoot, o.Dir)
	v := &overlayCall{root: root, o: o}
	if userRoot != "" {
		v.userDir = userDir
	}
	if req.Continue && userRoot != "" {
		// The CLI's saved sessions must outlive the overlay (CONTRACT 12.1).
		for _, sub := range o.Saves {
			if err := os.MkdirAll(filepath.Join(userDir, sub), 0o700); err != nil {
				return v, err
			}
		}
	}
	if userRoot != "" {
		for _, name := range slices.Sorted(maps.Keys(o.Merge)) {
			if err := makeShared(userDir, name, o.Merge[name]); err != nil {
				return v, err
			}
		}
	}
	ents, err := os.ReadDir(userDir)
	if err != nil && !os.IsNotExist(err) {
		return v, err
	}
	settings := filepath.Base(o.File)
	names := map[string]bool{}
	for _, e := range ents {
		if e.Name() != settings {
			names[e.Name()] = true
		}
	}
	if userRoot != "" {
		for _, name := range o.Links {
			names[name] = true // linked even when missing: the CLI's write makes it
		}
	}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		if err := os.Symlink(filepath.Join(userDir, name), filepath.Join(dir, name)); err != nil {
			return v, err
		}
	}
	// The home's own files the CLI reads besides its folder (gemini falls
	// back to ~/.env).
	if userRoot != "" {
		if _, err := os.Lstat(filepath.Join(userRoot, ".env")); err == nil {
			if err := os.Symlink(filepath.Join(userRoot, ".env"), filepath.Join(root, ".env")); err != nil {
				return v, err
			}
		}
	}
	text, err := os.ReadFile(filepath.Join(userRoot, o.File))
	if err != nil && !os.IsNotExist(err) {
		return v, err
	}
	merged, err := overlaySettings(text, o.Set)
	if err != nil {
		return v, fmt.Errorf("%s: %v (fix the file, or use home: isolated)", filepath.Join(userRoot, o.File), err)
	}
	if err := os.WriteFile(filepath.Join(root, o.File), merged, 0o600); err != nil {
		return v, err
	}
	return v, nil
}

// makeShared makes the shared state file name in the user's folder dir,
// with the CLI's empty content, unless it exists: linked into the overlay,
// its real path is the one the CLI locks.
func makeShared(dir, name, empty string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	w, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if os.IsExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = w.WriteString(empty)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

// close ends the call's overlay: the CLI's shared state files it wrote in
// the overlay (by rename, so in place of the link) are merged into the
// user's, then the folder (links and copies: the user's files stay) is
// removed. A merge that fails (the user's file is not JSON, or its lock
// stays held) leaves the user's file as it is: the CLI rebuilds its
// registry from its folders' markers.
func (v *overlayCall) close() {
	if v == nil || v.root == "" {
		return
	}
	if v.userDir != "" && v.o != nil {
		for _, name := range slices.Sorted(maps.Keys(v.o.Merge)) {
			_ = mergeBack(filepath.Join(v.root, v.o.Dir, name), filepath.Join(v.userDir, name))
		}
	}
	_ = os.RemoveAll(v.root)
}

// Shared state files are locked the way the CLI locks them (gemini's
// proper-lockfile): the directory of the file's real path plus ".lock",
// made by mkdir, stale (held by a process gone) when not touched for
// lockStale; a waiter tries every lockRetry for lockWait.
const (
	lockStale = 10 * time.Second
	lockRetry = 100 * time.Millisecond
	lockWait  = 10 * time.Second
)

// mergeBack merges the JSON state file the CLI wrote at ours (the
// overlay's; still the link to the user's when the CLI did not write it)
// into the user's file at theirs, under the CLI's lock: the keys the user's
// file lacks are added, theirs win. The user's file is replaced by rename,
// as the CLI writes it (confine.WriteFileAtomic: synced, so a crash leaves
// the old registry or the new).
func mergeBack(ours, theirs string) error {
	st, err := os.Lstat(ours)
	if err != nil || !st.Mode().IsRegular() {
		return err // not written by the CLI
	}
	b, err := os.ReadFile(ours)
	if err != nil {
		return err
	}
	var add any
	if err := json.Unmarshal(b, &add); err != nil {
		return err
	}
	unlock, err := lockShared(theirs)
	if err != nil {
		return err
	}
	defer unlock()
	var cur any = map[string]any{}
	mode := os.FileMode(0o644)
	if old, err := os.ReadFile(theirs); err == nil {
		if err := json.Unmarshal(old, &cur); err != nil {
			return err
		}
		if st, err := os.Stat(theirs); err == nil {
			mode = st.Mode().Perm()
		}
	} else if !os.IsNotExist(err) {
		return err
	}
	out, err := json.MarshalIndent(mergeJSON(cur, add), "", "  ")
	if err != nil {
		return err
	}
	return confine.WriteFileAtomic(theirs, out, mode)
}

// mergeJSON adds to the JSON value cur the object keys of add it lacks,
// object by object; where both have a value that is not an object on
// both sides, cur's stays.
func mergeJSON(cur, add any) any {
	c, ok1 := cur.(map[string]any)
	a, ok2 := add.(map[string]any)
	if !ok1 || !ok2 {
		return cur
	}
	for k, av := range a {
		if cv, ok := c[k]; ok {
			c[k] = mergeJSON(cv, av)
		} else {
			c[k] = av
		}
	}
	return c
}

// lockShared takes the CLI's lock on the file path (see lockStale) and
// returns its release.
func lockShared(path string) (func(), error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		if !os.IsNotExist(err) {
			return nil, err
		}
		real = path
	}
	lock := real + ".lock"
	for deadline := time.Now().Add(lockWait); ; {
		err := os.Mkdir(lock, 0o755)
		if err == nil {
			return func() { os.Remove(lock) }, nil
		}
		if !os.IsExist(err) {
			return nil, err
		}
		if st, err := os.Stat(lock); err == nil && time.Since(st.ModTime()) > lockStale {
			os.Remove(lock) // its holder is gone
			continue
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s: held for more than %s", lock, lockWait)
		}
		time.Sleep(lockRetry)
	}
}

// overlaySettings returns the user's settings text (JSON with comments, or
// nothing) with each setting (a dotted path) set over it.
func overlaySettings(text []byte, set []provider.Setting) ([]byte, error) {
	doc := stripJSONComments(text)
	root := map[string]any{}
	if len(bytes.TrimSpace(doc)) > 0 {
		if err := json.Unmarshal(doc, &root); err != nil {
			return nil, fmt.Errorf("not a JSON object: %v", err)
		}
	}
	for _, s := range set {
		m := root
		keys := strings.Split(s.Path, ".")
		for _, k := range keys[:len(keys)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		m[keys[len(keys)-1]] = s.Value
	}
	out, err := json.MarshalIndent(root, "", "  ")
	return append(out, '\n'), err
}

// stripJSONComments removes // and /* */ comments outside strings, and
// commas before a closing bracket, as the CLIs' JSON-with-comments reader
// does.
func stripJSONComments(b []byte) []byte {
	var out []byte
	inStr, esc := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inStr:
			out = append(out, c)
			if esc {
				esc = false
			} else if c == '\\' {
				esc = true
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
			out = append(out, c)
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				i++
			}
			if i < len(b) {
				out = append(out, '\n')
			}
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			i += 2
			for i+1 < len(b) && !(b[i] == '*' && b[i+1] == '/') {
				i++
			}
			i++
		case c == '}' || c == ']':
			// a trailing comma before the bracket
			j := len(out) - 1
			for j >= 0 && (out[j] == ' ' || out[j] == '\t' || out[j] == '\n' || out[j] == '\r') {
				j--
			}
			if j >= 0 && out[j] == ',' {
				out = append(out[:j], out[j+1:]...)
			}
			out = append(out, c)
		default:
			out = append(out, c)
		}
	}
	return out
}
