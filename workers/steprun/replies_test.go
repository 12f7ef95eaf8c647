package steprun_test

import (
	"os"
	"path/filepath"
	"testing"

	"smith/workers/step"
	"smith/workers/steprun"
)

func TestKeepReply(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, step, thread, file string
	}{
		{"step", "Ask", "", "Ask.txt"},
		{"thread", "Ask", "2", "Ask[2].txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			req := &step.Request{Step: tt.step, Thread: tt.thread, RunRoot: root}
			if err := steprun.KeepReply(req, "the reply\n"); err != nil {
				t.Fatalf("KeepReply = %v", err)
			}
			want := filepath.Join(root, "replies", tt.file)
			if p := steprun.ReplyPath(root, req.CallKey()); p != want {
				t.Errorf("ReplyPath(%s) = %q, want %q", req.CallKey(), p, want)
			}
			b, err := os.ReadFile(want)
			if err != nil || string(b) != "the reply\n" {
				t.Errorf("KeepReply(%s) wrote %q (%v), want %q in %s", tt.name, b, err, "the reply\n", want)
			}
			if fi, err := os.Stat(want); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("KeepReply(%s) file mode %v (%v), want 0600", tt.name, fi.Mode().Perm(), err)
			}
		})
	}
}

// TestKeepReplyNoRunRoot: without a RUN_ROOT there is nowhere to keep a
// reply, and that is not an error (nothing is written relative to the
// working directory).
func TestKeepReplyNoRunRoot(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := steprun.KeepReply(&step.Request{Step: "Ask"}, "x"); err != nil {
		t.Errorf("KeepReply(no RUN_ROOT) = %v, want nil", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("KeepReply(no RUN_ROOT) wrote %d files into the working directory", len(ents))
	}
}
