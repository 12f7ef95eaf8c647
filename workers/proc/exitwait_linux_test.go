package proc

import (
	"context"
	"os"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestRunWaitsWithoutThreads checks that a step waiting for its process
// holds no OS thread and fewer than four descriptors: 48 steps run at
// once, and while all of them wait, the test process has far fewer than
// 48 threads more than before, and at most 3 descriptors more per step
// (the pidfd and the two pipes, no record file of its own), and no
// goroutine besides the one that called Run (its streams are read by the
// goroutine that waits for every leader). The steps are
// then cancelled: every one ends by the SIGTERM to its group.
func TestRunWaitsWithoutThreads(t *testing.T) {
	const n = 48
	count := func(dir string) int {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	threads0, fds0, g0 := count("/proc/self/task"), count("/proc/self/fd"), runtime.NumGoroutine()
	root := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := []string{"PATH=" + os.Getenv("PATH")}
	var wg sync.WaitGroup
	results := make([]Result, n)
	for i := range n {
		wg.Go(func() {
			results[i] = Run(ctx, Spec{Argv: []string{"sleep", "60"}, Env: env, RunRoot: root, KillGrace: time.Second})
		})
	}
	// Wait until every step's process runs (its leader is registered).
	deadline := time.Now().Add(time.Minute)
	for {
		leaders.Lock()
		k := len(leaders.m)
		leaders.Unlock()
		if k >= n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d steps started", k, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	threads, fds, gs := count("/proc/self/task")-threads0, count("/proc/self/fd")-fds0, runtime.NumGoroutine()-g0
	cancel()
	wg.Wait()
	for i, r := range results {
		if r.ExitCode != 128+int(syscall.SIGTERM) || r.StartErr != nil {
			t.Fatalf("step %d: exit %d, %v; want %d (SIGTERM at the cancellation)", i, r.ExitCode, r.StartErr, 128+int(syscall.SIGTERM))
		}
	}
	if threads >= n/2 {
		t.Errorf("%d steps waiting added %d threads, want far fewer than one per step", n, threads)
	}
	if gs > n+8 {
		t.Errorf("%d steps waiting added %d goroutines, want one per step (the caller's; none per output stream)", n, gs)
	}
	if fds > 3*n+4 {
		t.Errorf("%d steps waiting added %d descriptors, want at most 3 per step", n, fds)
	}
}
