package vm

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// A captureFile is what RUN_ROOT/logs/<Step>-<seq>-capture.json holds: the
// whole lines or json capture of a step whose capture is too large for
// state.json (CONTRACT 3.5: state.json keeps excerpts).
type captureFile struct {
	Lines []string `json:"lines,omitempty"`
	JSON  any      `json:"json,omitempty"`
	// Stderr is the step's stderr up to its in-memory part (1 MiB),
	// when state.json holds only an excerpt (CONTRACT 12.5).
	Stderr string `json:"stderr,omitempty"`
}

// capCapture keeps r's lines or json capture in state.json only when it is
// small (outputExcerpt bytes encoded); a larger one goes whole to a capture
// file, made durable before the state that names it, and r keeps the first
// lines (no json) and Truncated. Without RUN_ROOT it stays inline.
//
// stderr is the step's stderr up to its in-memory part, masked, when
// r.Stderr holds only an excerpt of it ("" when whole): it goes to the
// capture file too, and the lines or json, if small, stay in state.json
// as well.
func (m *Machine) capCapture(step string, r *StepResult, stderr string) error {
	longErr := stderr != ""
	if m.cfg.RunRoot == "" || (r.Lines == nil && r.JSON == nil && !longErr) {
		return nil
	}
	b, err := json.Marshal(captureFile{Lines: r.Lines, JSON: r.JSON})
	if err != nil {
		return nil
	}
	big := len(b) > outputExcerpt && (r.Lines != nil || r.JSON != nil)
	if !big && !longErr {
		return nil
	}
	if longErr {
		if b, err = json.Marshal(captureFile{Lines: r.Lines, JSON: r.JSON, Stderr: stderr}); err != nil {
			return nil
		}
	}
	dir := filepath.Join(m.cfg.RunRoot, "logs")
	name := strings.Map(func(c rune) rune {
		if c == '/' || c == '\\' || c == 0 {
			return '_'
		}
		return c
	}, step) + "-" + strconv.Itoa(m.st.Seq+1) + "-capture.json"
	path := filepath.Join(dir, name)
	if err := m.cfg.Host.WriteFile(path, b); err != nil {
		return fmt.Errorf("keep the capture of step '%s': %w", step, err)
	}
	r.CapturePath = path
	m.captures[step] = nil
	if !big {
		return nil // the lines and json are whole in state.json too
	}
	r.Truncated = true
	if r.Lines != nil {
		var keep []string
		size := 0
		for _, l := range r.Lines {
			if size+len(l)+1 > outputExcerpt {
				break
			}
			keep = append(keep, l)
			size += len(l) + 1
		}
		if keep == nil {
			keep = []string{}
		}
		r.Lines = keep
	}
	r.JSON = nil
	m.captures[step] = nil
	return nil
}

// capture returns the whole capture of step's result res: from its capture
// file when state.json holds only an excerpt (read once, then cached).
func (m *Machine) capture(step string, res *StepResult) captureFile {
	if res.CapturePath == "" {
		return captureFile{Lines: res.Lines, JSON: res.JSON}
	}
	if c, ok := m.captures[step]; ok && c != nil && c.path == res.CapturePath {
		return c.file
	}
	var c captureFile
	if b, err := m.cfg.Host.ReadFile(res.CapturePath); err == nil {
		json.Unmarshal(b, &c)
	}
	m.captures[step] = &cachedCapture{path: res.CapturePath, file: c}
	return c
}

// A cachedCapture is a capture file read once.
type cachedCapture struct {
	path string
	file captureFile
}
