package builtin

import (
	"testing"

	"smith/workers/step"
)

// TestNoticeAfterAbsentLook checks that a notice appended after a first
// look that found no notices file is seen by the next look.
func TestNoticeAfterAbsentLook(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if ns, err := Notices(root, 0); err != nil || len(ns) != 0 {
		t.Fatalf("Notices = %v, %v; want none", ns, err)
	}
	if err := appendNotice(root, step.Conflict{Run: "r1", Paths: []string{"a.go"}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if ns, err := Notices(root, 0); err != nil || len(ns) != 1 {
			t.Fatalf("look %d: Notices = %v, %v; want 1 notice", i, ns, err)
		}
	}
}
