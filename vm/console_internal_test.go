package vm

import (
	"strings"
	"testing"
)

// TestThreadLines: in a thread, every line of the -v copy comes after its
// step and thread, a line cut across writes gets the prefix once, and a
// last line without its newline stays so; outside a thread the writes pass
// as they are.
func TestThreadLines(t *testing.T) {
	var got strings.Builder
	w := threadLines(&got, "Work", "2")
	for _, s := range []string{"one\ntwo\n", "thr", "ee\n", "", "four"} {
		if n, err := w.Write([]byte(s)); err != nil || n != len(s) {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	const want = "Work [2] | one\nWork [2] | two\nWork [2] | three\nWork [2] | four"
	if got.String() != want {
		t.Errorf("threadLines wrote %q, want %q", got.String(), want)
	}
	var plain strings.Builder
	if w := threadLines(&plain, "Work", ""); w != &plain {
		t.Errorf("threadLines outside a thread = %T, want the writer itself", w)
	}
}
