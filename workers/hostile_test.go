package workers

import (
	"context"
	"os"
	"path/filepath"
	"smith/isa"
	"strings"
	"sync/atomic"
	"testing"

	"smith/internal/stepfake"
)

// TestInputFileSymlinkSwapRace: while a command step with input_file runs
// again and again, another goroutine swaps the input between a regular file
// and a symlink to a secret outside the project. The step's stdin must never
// be the secret: the file is opened without following any link at the moment
// of use, not checked first and opened later (issue 8, point 4).
func TestInputFileSymlinkSwapRace(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("OUTSIDE-SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(f.Dirs.Workspace, "in.txt")
	f.Write("in.txt", "plain")
	plain := filepath.Join(t.TempDir(), "plain.txt")
	if err := os.WriteFile(plain, []byte("plain"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		tmpLink := filepath.Join(f.Dirs.Workspace, "in.link")
		tmpFile := filepath.Join(f.Dirs.Workspace, "in.file")
		for !stop.Load() {
			os.Remove(tmpLink)
			os.Symlink(outside, tmpLink)
			os.Rename(tmpLink, in)
			os.Link(plain, tmpFile)
			os.Rename(tmpFile, in)
		}
	}()
	leaks, ran := 0, 0
	for i := 0; i < raceTrials(); i++ {
		r := f.Req(isa.KindCommand, "Race")
		r.Argv = stepfake.Exe(t, "cat")
		r.InputFile = "in.txt"
		got := f.reg.Run(context.Background(), r)
		if strings.Contains(got.Output, "OUTSIDE") {
			leaks++
		}
		if got.ExitCode == 0 {
			ran++
		}
	}
	stop.Store(true)
	<-done
	if leaks > 0 {
		t.Errorf("%d of %d runs read the secret through a swapped-in symlink", leaks, raceTrials())
	}
	t.Logf("%d of %d runs read the plain file", ran, raceTrials())
}

// raceTrials is how many runs a race test makes: more with SMITH_LONG=1.
func raceTrials() int {
	if os.Getenv("SMITH_LONG") != "" {
		return 3000
	}
	return 200
}
