package compiler

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"smith/source"
)

// compileForCheck runs what smithc check runs on one document: Compile with
// ChecksOnly, so the tests go through the real pipeline (load, lower, graph
// checks, sort) and fail if Compile stops running one of its stages.
func compileForCheck(name string, src []byte) source.Diagnostics {
	_, ds := Compile(name, src, Options{ChecksOnly: true})
	return ds
}

// checkFile runs compileForCheck on the file at path.
func checkFile(t *testing.T, path string) source.Diagnostics {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return compileForCheck(path, src)
}

// An annotation is one expected diagnostic: `# ERROR "E_CODE: substring"` or
// `# WARNING "W_CODE: substring"` at the end of a line.
type annotation struct {
	line     int
	severity source.Severity
	code     source.Code
	substr   string
	matched  bool
}

var (
	annotationComment = regexp.MustCompile(`#\s*((?:ERROR|WARNING)\s+".*)$`)
	annotationItem    = regexp.MustCompile(`(ERROR|WARNING)\s+("(?:[^"\\]|\\.)*")`)
)

// annotations reads the expected diagnostics of a YAML check input.
func annotations(t *testing.T, src string) []*annotation {
	t.Helper()
	var out []*annotation
	for i, line := range strings.Split(src, "\n") {
		m := annotationComment.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		for _, it := range annotationItem.FindAllStringSubmatch(m[1], -1) {
			text, err := strconv.Unquote(it[2])
			if err != nil {
				t.Fatalf("line %d: bad annotation %s: %v", i+1, it[2], err)
			}
			code, substr, _ := strings.Cut(text, ":")
			a := &annotation{line: i + 1, severity: source.SevError, code: source.Code(strings.TrimSpace(code)), substr: strings.TrimSpace(substr)}
			if it[1] == "WARNING" {
				a.severity = source.SevWarning
			}
			out = append(out, a)
		}
	}
	return out
}

func (a *annotation) matches(d source.Diagnostic) bool {
	return d.Pos.Line == a.line && d.Severity == a.severity && d.Code == a.code && strings.Contains(d.Msg, a.substr)
}

func TestCheckYAML(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/check/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/check/*.yaml inputs")
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".yaml"), func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want := annotations(t, string(src))
			got := compileForCheck(path, src)
			for _, d := range got {
				found := false
				for _, a := range want {
					if a.matches(d) {
						a.matched, found = true, true
					}
				}
				if !found {
					t.Errorf("Check(%q): unexpected diagnostic %s", path, d.Format())
				}
			}
			for _, a := range want {
				if !a.matched {
					t.Errorf("Check(%q): no %s %s matching %q at line %d", path, a.severity, a.code, a.substr, a.line)
				}
			}
		})
	}
}

func TestCheckJSON(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/check/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/check/*.json inputs")
	}
	for _, path := range files {
		stem := strings.TrimSuffix(path, ".json")
		t.Run(filepath.Base(stem), func(t *testing.T) {
			t.Parallel()
			var b strings.Builder
			for _, d := range checkFile(t, path) {
				b.WriteString(d.Format() + "\n")
			}
			golden(t, stem+".diag.golden", b.String())
		})
	}
}

// TestChecksOnly compiles every document of the compiler's, the shared and
// the examples' testdata with and without Options.ChecksOnly: the
// diagnostics are the same, and ChecksOnly generates no program.
func TestChecksOnly(t *testing.T) {
	t.Parallel()
	var files []string
	for _, pat := range []string{"testdata/*/*.yaml", "testdata/*/*.json", "../testdata/*.yaml", "../testdata/*.json", "../examples/*/*.yaml", "../examples/*/*.json"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	progs := 0
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		full, fds := Compile(path, src, Options{})
		res, ds := Compile(path, src, Options{ChecksOnly: true})
		if got, want := diagText(ds), diagText(fds); got != want {
			t.Errorf("Compile(%q, ChecksOnly) diagnostics:\n%s\nwant (a full compile):\n%s", path, got, want)
		}
		if res.Prog != nil {
			t.Errorf("Compile(%q, ChecksOnly) generated a program", path)
		}
		if full.Prog != nil {
			progs++
		}
	}
	if progs == 0 {
		t.Fatalf("no document of %d compiled to a program", len(files))
	}
}

func diagText(ds source.Diagnostics) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.Format() + "\n")
	}
	return b.String()
}
