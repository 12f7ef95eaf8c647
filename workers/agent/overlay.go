package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"smith/workers/provider"
	"smith/workers/step"
	"smith/workers/steprun"
)

// An overlayCall is the overlay home of one call: root, the folder given
// as the CLI's home.
type overlayCall struct {
	root string
	dir  string // the overlay's configuration folder (root/.gemini)
}

// userPaths returns s, what the CLI said, with the overlay's
// configuration folder named as the user's own, home: the overlay is gone
// once the call ends, and the file to fix is the user's (gemini: "Please
// set an Auth method in your .../.gemini/settings.json").
func (v *overlayCall) userPaths(s, home string) string {
	if v == nil || v.dir == "" || home == "" {
		return s
	}
	return strings.ReplaceAll(s, v.dir, home)
}

// UserPaths is userPaths for an overlay made by OverlayHome: root is the
// folder it returned, f the CLI.
func UserPaths(s, root string, f *provider.CLI, home string) string {
	if f.Overlay == nil || root == "" {
		return s
	}
	v := &overlayCall{root: root, dir: filepath.Join(root, f.Overlay.Dir)}
	return v.userPaths(s, home)
}

// overlayHome makes the overlay home of one call of a CLI whose retries
// only its settings file can turn off (gemini, CONTRACT 5): a folder of
// Smith's, under RUN_ROOT/providers, whose configuration folder links every
// entry of the user's (their login, history, extensions, .env, ...) except
// the settings file, which is a copy of theirs with the preset's keys set
// over it, and the state files the CLI replaces by rename (Overlay.Copies),
// copied. The user's files are only read, except what the CLI writes
// through the links (its sessions, for an agent that continues them). The
// folder is made anew for each call (two calls at once each get their own)
// and removed by close when the call ends; on an error the call has the
// folder made so far, root "" when none.
func overlayHome(req *step.Request, p steprun.Paths, f *provider.CLI, env map[string]string) (*overlayCall, error) {
	base := req.RunRoot
	if base == "" {
		base = p.TmpDir
	}
	return makeOverlay(filepath.Join(base, "providers", "overlays"), req.Step, req.Continue, f, env)
}

// OverlayHome makes an overlay home of CLI f (one with an Overlay) for a
// process that is no call of a step (smithvm doctor's checks, which run
// the CLI in the user's home too), in a new folder under parent, from env
// (HOME, or f.Home when set): it returns the folder to give as f.Home and
// the function that removes it. So the CLI's writes at its start (gemini:
// its project registry and a temporary file of it that it leaves behind)
// stay out of the user's folder, as in a step.
func OverlayHome(parent string, f *provider.CLI, env map[string]string) (string, func(), error) {
	v, err := makeOverlay(parent, "check", false, f, env)
	return v.root, v.close, err
}

// makeOverlay makes an overlay home under parent, named after name; cont
// is set for an agent that continues its session.
func makeOverlay(parent, name string, cont bool, f *provider.CLI, env map[string]string) (*overlayCall, error) {
	o := f.Overlay
	userRoot := env[f.Home]
	if userRoot == "" {
		userRoot = env["HOME"]
	}
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return &overlayCall{}, err
	}
	root, err := os.MkdirTemp(parent, name+"-*")
	if err != nil {
		return &overlayCall{}, err
	}
	dir := filepath.Join(root, o.Dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return &overlayCall{root: root}, err
	}
	v := &overlayCall{root: root, dir: dir}
	if userRoot == "" {
		// No HOME (a service started without one): there is no folder
		// of the user's to link, and a relative one would be the
		// working directory's (a project's own .gemini).
		merged, err := overlaySettings(nil, o.Set)
		if err == nil {
			err = os.WriteFile(filepath.Join(root, o.File), merged, 0o600)
		}
		return v, err
	}
	userDir := filepath.Join(userRoot, o.Dir)
	if cont {
		// The CLI's saved sessions must outlive the overlay (CONTRACT 12.1).
		for _, sub := range o.Saves {
			if err := os.MkdirAll(filepath.Join(userDir, sub), 0o700); err != nil {
				return v, err
			}
		}
	}
	ents, err := os.ReadDir(userDir)
	if err != nil && !os.IsNotExist(err) {
		return v, err
	}
	settings := filepath.Base(o.File)
	for _, e := range ents {
		name := e.Name()
		switch {
		case name == settings:
		case slices.Contains(o.Copies, name):
			if err := copyState(filepath.Join(userDir, name), filepath.Join(dir, name)); err != nil {
				return v, err
			}
		default:
			if err := os.Symlink(filepath.Join(userDir, name), filepath.Join(dir, name)); err != nil {
				return v, err
			}
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

// copyState copies the user's state file from to the overlay's to, when
// it is a regular file (else it is left out: the CLI makes its own).
func copyState(from, to string) error {
	st, err := os.Stat(from)
	if err != nil || !st.Mode().IsRegular() {
		return nil
	}
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o600)
}

// close ends the call's overlay: the folder (links and copies: the user's
// files stay) is removed.
func (v *overlayCall) close() {
	if v == nil || v.root == "" {
		return
	}
	_ = os.RemoveAll(v.root)
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
