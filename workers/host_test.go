package workers

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"smith/source"
	"smith/workers/confine"
	"smith/workers/steprun"
)

// TestReadArtifact: an ARTIFACT: layer's file is read whole up to the 10
// MiB a prompt holds; a larger one is not read, and E_TOO_LARGE names it,
// its size and the limit.
func TestReadArtifact(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		size int // -1: no file
		want string
	}{
		{"small", 10, ""},
		{"exactly the limit", steprun.MaxPrompt, ""},
		{"one byte over", steprun.MaxPrompt + 1,
			"E_TOO_LARGE: ARTIFACT:docs/a.md: the file is 10485761 bytes, more than the 10485760 bytes (10 MiB) a prompt may hold"},
		{"missing", -1, "file does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			base := t.TempDir()
			d, err := confine.New(base)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(d.Workspace, "docs"), 0o755); err != nil {
				t.Fatal(err)
			}
			if tt.size >= 0 {
				if err := os.WriteFile(filepath.Join(d.Workspace, "docs", "a.md"), []byte(strings.Repeat("a", tt.size)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := Local{}.ReadArtifact(d, d.Workspace, "docs/a.md")
			switch {
			case tt.want == "" && (err != nil || len(got) != tt.size):
				t.Errorf("ReadArtifact(%d bytes) = %d bytes, %v; want it whole", tt.size, len(got), err)
			case tt.size < 0 && !errors.Is(err, fs.ErrNotExist):
				t.Errorf("ReadArtifact(no file) = %v, want fs.ErrNotExist", err)
			case tt.size > steprun.MaxPrompt && (err == nil || got != "" || source.CodeOf(err, "") != source.ETooLarge ||
				!strings.HasPrefix(string(source.CodeOf(err, ""))+": "+err.Error(), tt.want)):
				t.Errorf("ReadArtifact(%d bytes) = %d bytes, %v; want %s", tt.size, len(got), err, tt.want)
			}
		})
	}
}
