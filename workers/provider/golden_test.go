package provider

import (
	"flag"
	"testing"

	"smith/internal/goldenfile"
)

var update = flag.Bool("update", false, "rewrite .golden files in testdata")

// golden compares got with the golden file path, or rewrites it with -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	goldenfile.Check(t, path, []byte(got), *update, goldenfile.Regen(t, "workers/provider"))
}
