package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWatchNewFolders: a file written in a folder that mkdir -p made while
// watch runs (sub/deeper/, both new) starts a run.
func TestWatchNewFolders(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	wf := p.write("w.yaml", workflow("watch_new_folders.yaml"))
	w := p.start("watch", wf)
	defer func() {
		w.cmd.Process.Signal(syscall.SIGINT)
		w.wait(t)
	}()
	watching := func() int { return strings.Count(w.stderr.String(), "INFO: Watching for changes") }
	waitFor(t, 20*time.Second, "the first run", func() bool { return watching() == 1 })

	// mkdir -p sub/deeper, made deterministic: the tree appears at once
	// (built beside WORKSPACE, then renamed in), so deeper/ exists before
	// watch can have seen sub/, as happens whenever mkdir -p is quick.
	staged := filepath.Join(p.base, "staging")
	if err := os.MkdirAll(filepath.Join(staged, "sub", "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(staged, "sub"), filepath.Join(p.ws, "sub")); err != nil {
		t.Fatal(err)
	}
	// Folders alone are no change: let the debounce pass, so that the file
	// below is seen only if sub/deeper/ itself is watched.
	time.Sleep(1200 * time.Millisecond)
	if n := watching(); n != 1 {
		t.Fatalf("new empty folders started a run (%d runs)", n)
	}
	p.write("workspace/sub/deeper/input.txt", "new\n")
	waitFor(t, 20*time.Second, "a run after a file appeared in sub/deeper/", func() bool { return watching() == 2 })
	if n := p.count("build.cnt"); n != 2 {
		t.Errorf("Build ran %d times, want 2", n)
	}
}
