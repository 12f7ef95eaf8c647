package provider

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseScriptGolden parses every testdata/mock script and compares the
// entries (or the error) with NAME.entries.golden.
func TestParseScriptGolden(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "mock", "*.*"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, file := range files {
		if strings.HasSuffix(file, ".golden") {
			continue
		}
		n++
		stem := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
		t.Run(stem, func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var got string
			entries, err := ParseScript(string(src))
			if err != nil {
				got = "error: " + err.Error() + "\n"
			} else {
				b, err := json.MarshalIndent(entries, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				got = string(b) + "\n"
			}
			golden(t, filepath.Join("testdata", "mock", stem+".entries.golden"), got)
		})
	}
	if n == 0 {
		t.Fatal("no mock scripts in testdata/mock")
	}
}
