package workers

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite .golden files in testdata")

// golden compares got with the golden file path, or rewrites it with -update.
// A mismatch reports the first differing line and the command that
// regenerates the file.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file: %v (run: go test ./workers -update)", err)
	}
	want := string(b)
	if got == want {
		return
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
			t.Errorf("%s:%d: got %q, want %q (regenerate with: go test ./workers -update)", filepath.ToSlash(path), i+1, gl, wl)
			return
		}
	}
}
