package source

import (
	"os"
	"strings"
	"testing"
)

// TestCodesDocumented checks that every code has a section in
// docs/diagnostics.md, and that the doc names no code the table lacks.
func TestCodesDocumented(t *testing.T) {
	data, err := os.ReadFile("../../docs/diagnostics.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if name, ok := strings.CutPrefix(line, "## "); ok {
			sections[strings.TrimSpace(name)] = true
		}
	}
	for _, ci := range Codes() {
		if !sections[string(ci.Code)] {
			t.Errorf("code %s has no '## %s' section in docs/diagnostics.md", ci.Code, ci.Code)
		}
		delete(sections, string(ci.Code))
	}
	for s := range sections {
		t.Errorf("docs/diagnostics.md has a section '## %s' for a code that codes.go does not define", s)
	}
}
