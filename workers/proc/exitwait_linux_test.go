package proc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
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

// TestRunWithoutPidfds runs steps as on a kernel (or sandbox) that gives
// no pidfds (noPidfd, set when a fork refused CLONE_PIDFD): the fork asks
// for none, the step waits by waitid, and its output, its exit code and
// the end of its group are as with pidfds.
func TestRunWithoutPidfds(t *testing.T) {
	if !pidfdWorks() {
		t.Skip("this kernel gives no pidfds: every test here runs without them")
	}
	defer noPidfd.Store(false)
	noPidfd.Store(true)
	var sys syscall.SysProcAttr
	fd := -1
	if askPidfd(&sys, &fd); sys.PidFD != nil {
		t.Fatal("askPidfd asked for a pidfd with noPidfd set")
	}
	if takeDirect() {
		dropDirect()
		t.Fatal("takeDirect let a step wait on a pidfd with noPidfd set")
	}
	argv, env := testchild.Argv(t, "print", "to stdout", "to stderr")
	res := Run(context.Background(), Spec{Argv: argv, Env: env})
	if res.Stdout != "to stdout" || res.Stderr != "to stderr" || res.ExitCode != 0 {
		t.Errorf("print: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	argv, env = testchild.Argv(t, "exit", "3")
	if res = Run(context.Background(), Spec{Argv: argv, Env: env}); res.ExitCode != 3 {
		t.Errorf("exit 3: got exit %d, %v", res.ExitCode, res.StartErr)
	}
}

// TestRetryWithoutPidfd: a fork refused with EINVAL, ENOSYS or EPERM while
// asking for a pidfd is tried again without the request; other errors,
// and a fork that asked for none, are not.
func TestRetryWithoutPidfd(t *testing.T) {
	fd := -1
	for _, c := range []struct {
		err  error
		ask  bool
		want bool
	}{
		{syscall.EINVAL, true, true},
		{syscall.ENOSYS, true, true},
		{syscall.EPERM, true, true},
		{syscall.ENOENT, true, false},
		{syscall.EACCES, true, false},
		{syscall.EINVAL, false, false},
	} {
		var sys syscall.SysProcAttr
		if c.ask {
			sys.PidFD = &fd
		}
		if got := retryWithoutPidfd(&sys, c.err); got != c.want || (got && sys.PidFD != nil) {
			t.Errorf("%v (asked %v): retry %v, PidFD kept %v; want retry %v", c.err, c.ask, got, sys.PidFD != nil, c.want)
		}
	}
}

// TestRunLinesWhileRunning: Spec.Lines gets a step's stdout lines while
// the step runs, both ways: from the unnamed file the child writes to
// when the step waits in its own goroutine (a fileTail), and from a pipe
// when the shared goroutine waits for it (directMax 0). The child waits
// for the test to have seen its first line before it goes on, so a line
// passed only after the exit fails the test; the last line, without its
// newline, is passed too, and the spill holds the whole stream.
func TestRunLinesWhileRunning(t *testing.T) {
	defer func(n int32) { directMax = n }(directMax)
	for _, c := range []struct {
		max  int32
		kind string
	}{{4, "file"}, {0, "pipe"}} {
		directMax = c.max
		dir := t.TempDir()
		flag := filepath.Join(dir, "got-first-line")
		var mu sync.Mutex
		var got []string
		argv, env := testchild.Argv(t, "handshake", flag)
		res := Run(context.Background(), Spec{
			Argv: argv, Env: env, StdoutSpill: filepath.Join(dir, "logs", "S-stdout.log"),
			Lines: func(s Stream, lines []byte) bool {
				mu.Lock()
				defer mu.Unlock()
				EachLine(lines, func(line []byte) {
					got = append(got, fmt.Sprintf("%d %s", s, line))
					if len(got) == 1 {
						os.WriteFile(flag, nil, 0o644)
					}
				})
				return true
			},
		})
		want := []string{"1 " + c.kind, "1 seen", "1 end"}
		if res.ExitCode != 0 || !slices.Equal(got, want) {
			t.Errorf("directMax %d: exit %d, Lines got %q, want %q", c.max, res.ExitCode, got, want)
		}
		if res.Stdout != c.kind+"\nseen\nend" {
			t.Errorf("directMax %d: stdout %q", c.max, res.Stdout)
		}
	}
}

// TestUnnamedStdoutKept: the unnamed file a step's stdout went to is
// emptied and kept for the next step of the same directory (one inode for
// many steps), which captures its own output only; a stream that became
// the spill by being named is never kept (the next step gets a new file,
// and the spill stays whole).
func TestUnnamedStdoutKept(t *testing.T) {
	dir := t.TempDir()
	spill := filepath.Join(dir, "logs", "S-stdout.log")
	kept := func() *os.File {
		unnamedKept.Lock()
		defer unnamedKept.Unlock()
		for _, k := range unnamedKept.files {
			if k.dir == filepath.Dir(spill) {
				return k.f
			}
		}
		return nil
	}
	run := func(n int) Result {
		t.Helper()
		argv, env := testchild.Argv(t, "out", strconv.Itoa(n))
		res := Run(context.Background(), Spec{Argv: argv, Env: env, MemCap: 1000, StdoutSpill: spill})
		if res.ExitCode != 0 || (n <= 1000 && res.Stdout != string(testchild.Pattern(n))) {
			t.Fatalf("out %d: exit %d, stdout %q", n, res.ExitCode, res.Stdout)
		}
		return res
	}
	run(500)
	f := kept()
	if f == nil {
		t.Fatal("no unnamed file kept after a step")
	}
	run(20) // its stdout is exactly its own 20 bytes (checked by run)
	if kept() != f {
		t.Errorf("the second step did not give the kept file back")
	}
	// A step that moves its stdout's offset and writes nothing leaves an
	// empty file, which is kept without a truncation: the next step's
	// stream still starts at byte 0, with no hole before it.
	argv, env := testchild.Argv(t, "seekout", "300")
	if res := Run(context.Background(), Spec{Argv: argv, Env: env, MemCap: 1000, StdoutSpill: spill}); res.ExitCode != 0 || res.Stdout != "" {
		t.Fatalf("seekout: exit %d, stdout %q", res.ExitCode, res.Stdout)
	}
	if kept() != f {
		t.Errorf("the seeking step did not give the kept file back")
	}
	run(20)
	if res := run(5000); res.StdoutSpill != spill || kept() != nil {
		t.Fatalf("a 5000-byte stream: spill %q, kept %v; want %s and no file kept", res.StdoutSpill, kept(), spill)
	}
	run(20)
	b, err := os.ReadFile(spill)
	if err != nil || string(b) != string(testchild.Pattern(5000)) {
		t.Errorf("the spill after the next step: %d bytes, %v; want the whole 5000-byte stream", len(b), err)
	}
}
