package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestGenerated: the generated files of package manifest are what
// decodegen writes from its types.
func TestGenerated(t *testing.T) {
	const dir = "../.."
	files, err := generate(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		have, err := os.ReadFile(filepath.Join(dir, f.name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(have, f.text) {
			t.Errorf("manifest/%s is stale: run go generate ./manifest", f.name)
		}
	}
}

func TestSplitDefault(t *testing.T) {
	for _, tt := range []struct{ doc, desc, def string }{
		{"Seconds to wait. Default: 300.", "Seconds to wait.", "300"},
		{"Name of the message. Default: the base name of file, or message.md.", "Name of the message.", "the base name of file, or message.md"},
		{"No default here.", "No default here.", ""},
	} {
		if desc, def := splitDefault(tt.doc); desc != tt.desc || def != tt.def {
			t.Errorf("splitDefault(%q) = %q, %q, want %q, %q", tt.doc, desc, def, tt.desc, tt.def)
		}
	}
}
