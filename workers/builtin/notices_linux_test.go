package builtin

import (
	"os"
	"path/filepath"
	"testing"

	"smith/workers/step"
)

// TestNoticesSeenAtOnce checks that a notice appended just before a look
// is seen by it, also once the file is watched (notices_linux.go), and
// after the file was removed and written again; and that the first look
// creates no file.
func TestNoticesSeenAtOnce(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	look := func(skip, want int) {
		t.Helper()
		ns, err := Notices(root, skip)
		if err != nil || len(ns) != want {
			t.Fatalf("Notices(root, %d) = %v, %v; want %d notices", skip, ns, err, want)
		}
	}
	exists := func() bool {
		_, err := os.Stat(filepath.Join(root, noticesFile))
		return err == nil
	}
	for i := 1; i < createLook; i++ {
		look(0, 0)
		if exists() {
			t.Fatalf("look %d made the notices file: a short run has no use for it", i)
		}
	}
	look(0, 0)
	if !exists() {
		t.Fatalf("look %d did not make the notices file (kept open, a look is then one fstat)", createLook)
	}
	if err := appendNotice(root, step.Conflict{Run: "r1", Paths: []string{"a.go"}}); err != nil {
		t.Fatal(err)
	}
	look(0, 1)
	look(1, 0)
	look(1, 0)
	if err := appendNotice(root, step.Conflict{Run: "r2", Paths: []string{"b.go"}}); err != nil {
		t.Fatal(err)
	}
	look(1, 1)
	look(2, 0)
	look(0, 2) // a resume that counted none sees both
	if err := os.Remove(filepath.Join(root, noticesFile)); err != nil {
		t.Fatal(err)
	}
	look(0, 0)
	if err := appendNotice(root, step.Conflict{Run: "r3", Paths: []string{"c.go"}}); err != nil {
		t.Fatal(err)
	}
	look(0, 1)
}
