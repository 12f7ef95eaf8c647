package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenBlobs: a path and a file:// URL are the same directory store; a
// blob reads back, a corrupt one is refused; other URLs are refused with
// the forms --blobs takes.
func TestOpenBlobs(t *testing.T) {
	dir := t.TempDir()
	for _, spec := range []string{dir, "file://" + dir} {
		b, err := OpenBlobs(context.Background(), spec)
		if err != nil {
			t.Fatalf("OpenBlobs(%q): %v", spec, err)
		}
		ref, err := b.Put([]byte("hello"))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := b.Get(ref); err != nil || string(got) != "hello" {
			t.Errorf("Get(%s) = %q, %v, want hello", ref, got, err)
		}
		if _, err := os.Stat(filepath.Join(dir, ref[:2], ref)); err != nil {
			t.Errorf("the blob is not at DIR/HH/SHA256: %v", err)
		}
	}
	b := DirBlobs(dir)
	ref, _ := b.Put([]byte("data"))
	os.WriteFile(filepath.Join(dir, ref[:2], ref), []byte("other"), 0o644)
	if _, err := b.Get(ref); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("Get of a changed blob = %v, want corrupt", err)
	}
	for _, spec := range []string{"ftp://host/x", "file://relative/x", "s3:///nobucket", "s3://b/p?colour=red"} {
		if _, err := OpenBlobs(context.Background(), spec); err == nil {
			t.Errorf("OpenBlobs(%q) = nil error, want refused", spec)
		}
	}
}
