package proc

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"smith/internal/testchild"
	"smith/workers/text"
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

// TestRunWaitsBothWays runs steps that a step's own goroutine waits for
// and reads (few steps at once) and steps that the shared goroutine waits
// for and reads (directMax 0, as past directMax steps at once): both
// capture a large stream whole, both streams apart, and return soon
// after the leader exited although a grandchild holds the pipes.
func TestRunWaitsBothWays(t *testing.T) {
	defer func(n int32) { directMax = n }(directMax)
	mask := text.NewMasker([]string{"a-secret-the-output-lacks"}) // a pipe, not an unnamed file
	for _, max := range []int32{4, 0} {
		directMax = max
		const size = 3 << 20
		argv, env := testchild.Argv(t, "out", strconv.Itoa(size))
		res := Run(context.Background(), Spec{Argv: argv, Env: env, MemCap: 4 << 20, Mask: mask})
		if res.ExitCode != 0 || res.Stdout != string(testchild.Pattern(size)) {
			t.Errorf("directMax %d: out %d: exit %d, %d bytes of stdout, want 0 and the whole stream", max, size, res.ExitCode, len(res.Stdout))
		}
		argv, env = testchild.Argv(t, "print", "to stdout", "to stderr")
		res = Run(context.Background(), Spec{Argv: argv, Env: env})
		if res.Stdout != "to stdout" || res.Stderr != "to stderr" {
			t.Errorf("directMax %d: print: stdout %q, stderr %q", max, res.Stdout, res.Stderr)
		}
		argv, env = testchild.Argv(t, "orphan", "60s")
		begin := time.Now()
		res = Run(context.Background(), Spec{Argv: argv, Env: env})
		if pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(res.Stdout, "\n", 2)[0])); err == nil && pid > 0 {
			defer syscall.Kill(pid, syscall.SIGKILL)
		}
		if d := time.Since(begin); d > 20*time.Second || res.ExitCode != 0 {
			t.Errorf("directMax %d: orphan: exit %d after %v, want 0 well before its grandchild's 60s", max, res.ExitCode, d)
		}
	}
}
