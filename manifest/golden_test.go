package manifest

import (
	"flag"
	"testing"

	"smith/internal/goldenfile"
)

var update = flag.Bool("update", false, "rewrite .golden files in testdata")

// checkGolden compares got with the golden file at path, or rewrites the
// file under -update.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	goldenfile.Check(t, path, got, *update, goldenfile.Regen(t, "manifest"))
}
