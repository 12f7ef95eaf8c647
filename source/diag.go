package source

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
)

// Severity says whether a diagnostic stops the pipeline.
type Severity int

// Severities, in increasing order of gravity.
const (
	SevWarning Severity = iota + 1
	SevError
)

// String returns "warning" or "error".
func (s Severity) String() string {
	switch s {
	case SevWarning:
		return "warning"
	case SevError:
		return "error"
	}
	return fmt.Sprintf("Severity(%d)", int(s))
}

// A Diagnostic is one problem found in a source document, or one runtime
// error with a code. Msg starts lowercase and has no trailing period.
type Diagnostic struct {
	Pos      Pos
	Severity Severity
	Code     Code
	Msg      string
	// Path is the data path of the offending value
	// ("nodes.Review.blocks.Fix.transitions[2].action"), empty when unknown.
	Path string
}

// New returns a diagnostic whose severity is the code's own.
func New(pos Pos, code Code, format string, args ...any) Diagnostic {
	return Diagnostic{Pos: pos, Severity: code.Severity(), Code: code, Msg: fmt.Sprintf(format, args...)}
}

// Format prints d in the contract's one-line form:
// FILE:LINE:COL: error|warning: CODE: message.
func (d Diagnostic) Format() string {
	return fmt.Sprintf("%s: %s: %s: %s", d.Pos, d.Severity, d.Code, d.Msg)
}

// Error makes a Diagnostic usable as an error.
func (d Diagnostic) Error() string { return d.Format() }

// Diagnostics is a list of diagnostics. Checks append to it and carry on.
type Diagnostics []Diagnostic

// Add appends a diagnostic made with New.
func (ds *Diagnostics) Add(pos Pos, code Code, format string, args ...any) {
	*ds = append(*ds, New(pos, code, format, args...))
}

// Append appends diagnostics.
func (ds *Diagnostics) Append(more ...Diagnostic) { *ds = append(*ds, more...) }

// HasErrors reports whether any diagnostic is an error.
func (ds Diagnostics) HasErrors() bool {
	for _, d := range ds {
		if d.Severity == SevError {
			return true
		}
	}
	return false
}

// Sort orders the list by file, line, column, code and message and drops
// exact duplicates.
func (ds *Diagnostics) Sort() {
	l := *ds
	sort.SliceStable(l, func(i, j int) bool {
		a, b := l[i], l[j]
		if a.Pos.File != b.Pos.File {
			return a.Pos.File < b.Pos.File
		}
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line < b.Pos.Line
		}
		if a.Pos.Col != b.Pos.Col {
			return a.Pos.Col < b.Pos.Col
		}
		if a.Code != b.Code {
			return a.Code < b.Code
		}
		return a.Msg < b.Msg
	})
	out := l[:0]
	for i, d := range l {
		if i > 0 && d == l[i-1] {
			continue
		}
		out = append(out, d)
	}
	*ds = out
}

// Err returns nil when the list holds no errors (warnings alone are not an
// error), and the list itself otherwise.
func (ds Diagnostics) Err() error {
	if !ds.HasErrors() {
		return nil
	}
	return ds
}

// Error joins the formatted diagnostics, one per line.
func (ds Diagnostics) Error() string {
	var b strings.Builder
	for i, d := range ds {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(d.Format())
	}
	return b.String()
}

// ExitStatus is the process exit status the list calls for: the highest
// exit status of its error codes (3 for E_PATH_ESCAPE beats 2), 0 with none.
func (ds Diagnostics) ExitStatus() int {
	st := 0
	for _, d := range ds {
		if d.Severity != SevError {
			continue
		}
		if e := d.Code.ExitStatus(); e > st {
			st = e
		}
	}
	return st
}

// RelTo rewrites every file name relative to dir, with forward slashes,
// where that is shorter than the name itself.
func (ds Diagnostics) RelTo(dir string) {
	for i := range ds {
		ds[i].Pos.File = RelName(dir, ds[i].Pos.File)
	}
}

// RelName returns name relative to dir, with forward slashes, when name lies
// below dir; otherwise name itself (with forward slashes).
func RelName(dir, name string) string {
	if name == "" || dir == "" || !filepath.IsAbs(name) {
		return filepath.ToSlash(name)
	}
	if r, err := filepath.Rel(dir, name); err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return filepath.ToSlash(r)
	}
	return filepath.ToSlash(name)
}

// jsonDiag is the --json form of one diagnostic.
type jsonDiag struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Col      int    `json:"col"`
	Severity string `json:"severity"`
	Code     Code   `json:"code"`
	Message  string `json:"message"`
	Path     string `json:"path,omitempty"`
}

// WriteText prints one formatted diagnostic per line.
func (ds Diagnostics) WriteText(w io.Writer) error {
	for _, d := range ds {
		if _, err := fmt.Fprintln(w, d.Format()); err != nil {
			return err
		}
	}
	return nil
}

// WriteJSON prints the list as a JSON array of
// {file, line, col, severity, code, message}.
func (ds Diagnostics) WriteJSON(w io.Writer) error {
	out := make([]jsonDiag, 0, len(ds))
	for _, d := range ds {
		out = append(out, jsonDiag{d.Pos.File, d.Pos.Line, d.Pos.Col, d.Severity.String(), d.Code, d.Msg, d.Path})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// AsDiagnostics extracts a diagnostic list from err: a Diagnostics, a single
// Diagnostic, or nil when err carries neither.
func AsDiagnostics(err error) Diagnostics {
	var ds Diagnostics
	if errors.As(err, &ds) {
		return ds
	}
	var d Diagnostic
	if errors.As(err, &d) {
		return Diagnostics{d}
	}
	return nil
}
