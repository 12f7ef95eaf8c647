package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"smith/workers/provider"
	"smith/workers/step"
	"smith/workers/steprun"
)

// overlayHome makes the overlay home of one call of a CLI whose retries
// only its settings file can turn off (gemini, CONTRACT 5): a folder of
// Smith's, under RUN_ROOT/providers, whose configuration folder links every
// entry of the user's (their login, history, extensions, .env, ...) except
// the settings file, which is a copy of theirs with the preset's keys set
// over it. The user's files are only read. It returns the folder to give
// the CLI as its home variable; the folder is made anew for each call (two
// calls at once each get their own) and removed when the call ends.
func overlayHome(req *step.Request, p steprun.Paths, f *provider.CLI, env map[string]string) (string, error) {
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
		return "", err
	}
	root, err := os.MkdirTemp(parent, req.Step+"-*")
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, o.Dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	userDir := filepath.Join(userRoot, o.Dir)
	if req.Continue && userRoot != "" {
		// The CLI's saved sessions must outlive the overlay (CONTRACT 12.1).
		for _, sub := range o.Saves {
			if err := os.MkdirAll(filepath.Join(userDir, sub), 0o700); err != nil {
				return "", err
			}
		}
	}
	ents, err := os.ReadDir(userDir)
	if err != nil && !os.IsNotExist(err) {
		return "", err
	}
	settings := filepath.Base(o.File)
	for _, e := range ents {
		if e.Name() == settings {
			continue
		}
		if err := os.Symlink(filepath.Join(userDir, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			return "", err
		}
	}
	// The home's own files the CLI reads besides its folder (gemini falls
	// back to ~/.env).
	if userRoot != "" {
		if _, err := os.Lstat(filepath.Join(userRoot, ".env")); err == nil {
			if err := os.Symlink(filepath.Join(userRoot, ".env"), filepath.Join(root, ".env")); err != nil {
				return "", err
			}
		}
	}
	text, err := os.ReadFile(filepath.Join(userRoot, o.File))
	if err != nil && !os.IsNotExist(err) {
		return "", err
	}
	merged, err := overlaySettings(text, o.Set)
	if err != nil {
		return "", fmt.Errorf("%s: %v (fix the file, or use home: isolated)", filepath.Join(userRoot, o.File), err)
	}
	if err := os.WriteFile(filepath.Join(root, o.File), merged, 0o600); err != nil {
		return "", err
	}
	return root, nil
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
