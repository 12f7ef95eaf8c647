package confine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a", "b", "plan.json")
	for _, data := range []string{"first\n", "second, longer\n"} {
		if err := WriteFileAtomic(path, []byte(data), 0o640); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != data {
			t.Fatalf("read back %q, %v; want %q", got, err, data)
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("mode = %v, %v; want 0640", fi.Mode().Perm(), err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the file (no temporary left)", len(entries))
	}
	if err := WriteFileAtomic(filepath.Join(path, "under-a-file"), []byte("x"), 0o644); err == nil {
		t.Error("write under a regular file succeeded")
	}
}

// TestTempNameOfLongestName: the temporary twin of a name as long as a file
// system takes fits in one too, and is still known as a temporary file (so
// that a write cut off by a kill is cleaned up).
func TestTempNameOfLongestName(t *testing.T) {
	for _, name := range []string{"a.txt", strings.Repeat("n", 255), strings.Repeat("é", 127)} {
		tmp := tempName(name)
		if len(tmp) > maxName || !IsTempName(tmp) || !utf8.ValidString(tmp) {
			t.Errorf("tempName(%d bytes) = %q (%d bytes), want at most %d bytes of valid UTF-8 that IsTempName knows", len(name), tmp, len(tmp), maxName)
		}
	}
}
