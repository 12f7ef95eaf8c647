// Package goldenfile is the one golden-file comparison of Smith's tests:
// Check compares a test's output with a file under testdata, or rewrites
// the file when the test runs with -update. Test support only.
package goldenfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Check compares got with the golden file at path. With update it writes
// got there instead (creating the directory). A mismatch is an error that
// names the first differing line and regen, the command that regenerates
// the file.
func Check(t testing.TB, path string, got []byte, update bool, regen string) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatalf("write %s: %v", path, err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v (create it with: %s)", path, err, regen)
	}
	if d := FirstDiff(string(got), string(want)); d != "" {
		t.Errorf("%s differs at %s\n(if the change is intended, regenerate with: %s)", filepath.ToSlash(path), d, regen)
	}
}

// Regen is the usual regenerate command of a golden test: go test ./PKG
// -run 'TOP' -update, TOP being the top-level test of t.
func Regen(t testing.TB, pkg string) string {
	return fmt.Sprintf("go test ./%s -run '%s' -update", pkg, strings.SplitN(t.Name(), "/", 2)[0])
}

// FirstDiff describes the first line where got and want differ, or "".
// A missing line shows as (end).
func FirstDiff(got, want string) string {
	if got == want {
		return ""
	}
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		gl, wl := "(end)", "(end)"
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d: got\n\t%q\nwant\n\t%q", i+1, gl, wl)
		}
	}
	return ""
}
