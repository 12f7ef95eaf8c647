package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
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

func TestMain(m *testing.M) {
	testchild.Main()
	os.Exit(m.Run())
}

// gone waits up to 10 s for pid to disappear (or become a zombie) and reports
// whether it did.
func gone(pid int) bool {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// firstPID parses the pid a helper printed on its first stdout line, and
// makes sure that process does not outlive the test.
func firstPID(t *testing.T, out string) int {
	t.Helper()
	line, _, _ := strings.Cut(out, "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		t.Fatalf("helper printed %q, want a pid", out)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

func TestRunProcExitCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"success", []string{"print", "out", "err"}, 0, "out", "err"},
		{"exit code", []string{"exit", "3"}, 3, "", ""},
		{"exit code 1", []string{"exit", "1"}, 1, "", ""},
		{"killed by signal", []string{"kill"}, 128 + int(syscall.SIGKILL), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			argv, env := testchild.Argv(t, tt.args...)
			res := Run(context.Background(), Spec{Argv: argv, Env: env})
			if res.StartErr != nil {
				t.Fatalf("RunProc(%v).StartErr = %v", tt.args, res.StartErr)
			}
			if res.ExitCode != tt.wantCode || res.TimedOut {
				t.Errorf("RunProc(%v) = exit %d timedOut %v, want exit %d timedOut false", tt.args, res.ExitCode, res.TimedOut, tt.wantCode)
			}
			if res.Stdout != tt.wantStdout || res.Stderr != tt.wantStderr {
				t.Errorf("RunProc(%v) stdout %q stderr %q, want %q %q", tt.args, res.Stdout, res.Stderr, tt.wantStdout, tt.wantStderr)
			}
			if res.StdoutTruncated || res.StderrTruncated || res.StdoutSpill != "" {
				t.Errorf("RunProc(%v) truncated %v/%v spill %q, want nothing truncated", tt.args, res.StdoutTruncated, res.StderrTruncated, res.StdoutSpill)
			}
		})
	}
}

func TestRunProcStdin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	input := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(input, []byte("line one\nline two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		mode  string
		stdin string
		want  string
	}{
		{"file piped", "cat", input, "line one\nline two\n"},
		{"default is dev null", "stdin", "", "devnull\n0\n"},
		{"file is not dev null", "stdin", input, "other\n18\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			argv, env := testchild.Argv(t, tt.mode)
			res := Run(context.Background(), Spec{Argv: argv, Env: env, StdinPath: tt.stdin, Timeout: time.Minute})
			if res.TimedOut || res.ExitCode != 0 || res.Stdout != tt.want {
				t.Errorf("RunProc(%s, stdin %q) = exit %d stdout %q, want exit 0 stdout %q", tt.mode, tt.stdin, res.ExitCode, res.Stdout, tt.want)
			}
		})
	}
}

func TestRunProcEnvIsExact(t *testing.T) {
	// Not parallel: t.Setenv changes the parent's environment.
	t.Setenv("SMITH_PARENT_ONLY", "leak") // must not reach the child
	argv, env := testchild.Argv(t, "env")
	env = append(env, "FOO=bar", "EMPTY=", "WITH_EQ=a=b")
	res := Run(context.Background(), Spec{Argv: argv, Env: env, Dir: t.TempDir()})
	want := strings.Join(env, "\n") + "\n"
	if res.ExitCode != 0 || res.Stdout != want {
		t.Errorf("RunProc(env) = exit %d, stdout %q, want exit 0, stdout %q", res.ExitCode, res.Stdout, want)
	}
}

func TestRunProcDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "here.txt"), []byte("in dir"), 0o644); err != nil {
		t.Fatal(err)
	}
	argv, env := testchild.Argv(t, "cat")
	res := Run(context.Background(), Spec{Argv: argv, Env: env, Dir: dir, StdinPath: filepath.Join(dir, "here.txt")})
	if res.ExitCode != 0 || res.Stdout != "in dir" {
		t.Errorf("RunProc(cat) = exit %d stdout %q, want 0 %q", res.ExitCode, res.Stdout, "in dir")
	}
}

// TestRunProcChildPath checks that Argv[0] is found through the PATH of the
// child's environment, not the parent's.
func TestRunProcChildPath(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(bin, "smith-test-helper")); err != nil {
		t.Fatal(err)
	}
	env := []string{testchild.Var + "=1", "PATH=relative/dir:" + t.TempDir() + ":" + bin}
	res := Run(context.Background(), Spec{Argv: []string{"smith-test-helper", "print", "found", ""}, Env: env})
	if res.StartErr != nil || res.ExitCode != 0 || res.Stdout != "found" {
		t.Errorf("RunProc(smith-test-helper) = exit %d, stdout %q, StartErr %v, want 0, %q, nil", res.ExitCode, res.Stdout, res.StartErr, "found")
	}
}

func TestRunProcStartErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	noExec := filepath.Join(dir, "noexec")
	if err := os.WriteFile(noExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exeName := filepath.Base(exe)
	tests := []struct {
		name     string
		spec     Spec
		notFound bool
	}{
		{"not in child PATH", Spec{Argv: []string{"smith-no-such-command"}, Env: []string{"PATH=" + dir}}, true},
		{"only in parent PATH", Spec{Argv: []string{exeName}, Env: []string{"PATH=" + dir}}, true},
		{"no PATH at all", Spec{Argv: []string{"ls"}}, true},
		{"not executable in PATH", Spec{Argv: []string{"noexec"}, Env: []string{"PATH=" + dir}}, true},
		{"not executable by path", Spec{Argv: []string{noExec}}, false},
		{"missing absolute path", Spec{Argv: []string{filepath.Join(dir, "missing")}}, false},
		{"empty argv", Spec{}, false},
		{"missing stdin file", Spec{Argv: []string{exe}, Env: []string{testchild.Var + "=1"}, StdinPath: filepath.Join(dir, "nope")}, false},
		{"missing working directory", Spec{Argv: []string{exe}, Env: []string{testchild.Var + "=1"}, Dir: filepath.Join(dir, "nodir")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := Run(context.Background(), tt.spec)
			if res.StartErr == nil || res.ExitCode != -1 {
				t.Fatalf("RunProc(%v) = exit %d, StartErr %v, want -1 and an error", tt.spec.Argv, res.ExitCode, res.StartErr)
			}
			if got := errors.Is(res.StartErr, exec.ErrNotFound); got != tt.notFound {
				t.Errorf("RunProc(%v).StartErr = %v, errors.Is(exec.ErrNotFound) = %v, want %v", tt.spec.Argv, res.StartErr, got, tt.notFound)
			}
		})
	}
}

func TestRunProcCancelledBeforeStart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	argv, env := testchild.Argv(t, "exit", "0")
	res := Run(ctx, Spec{Argv: argv, Env: env})
	if !errors.Is(res.StartErr, context.Canceled) || res.ExitCode != -1 {
		t.Errorf("RunProc(cancelled) = exit %d, StartErr %v, want -1, context.Canceled", res.ExitCode, res.StartErr)
	}
}

func TestRunProcSpill(t *testing.T) {
	t.Parallel()
	const size = 3 << 20
	dir := t.TempDir()
	spill := filepath.Join(dir, "logs", "Step-stdout.log")
	stderrLog := filepath.Join(dir, "logs", "Step-stderr.log")
	var sink bytes.Buffer
	argv, env := testchild.Argv(t, "out", strconv.Itoa(size))
	res := Run(context.Background(), Spec{Argv: argv, Env: env, StdoutSpill: spill, StderrLog: stderrLog, Stdout: &sink})
	want := testchild.Pattern(size)
	if res.ExitCode != 0 || res.IOErr != nil {
		t.Fatalf("RunProc(out %d) = exit %d, IOErr %v, want 0, nil", size, res.ExitCode, res.IOErr)
	}
	if !res.StdoutTruncated || res.StdoutSpill != spill {
		t.Errorf("RunProc(out %d) truncated %v spill %q, want true %q", size, res.StdoutTruncated, res.StdoutSpill, spill)
	}
	if res.Stdout != string(want[:1<<20]) {
		t.Errorf("RunProc(out %d).Stdout has %d bytes, want the first %d bytes of the stream", size, len(res.Stdout), 1<<20)
	}
	got, err := os.ReadFile(spill)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("spill file has %d bytes (err %v), want the whole %d-byte stream", len(got), err, size)
	}
	if !bytes.Equal(sink.Bytes(), want) {
		t.Errorf("Stdout sink got %d bytes, want the whole %d-byte stream", sink.Len(), size)
	}
	if _, err := os.Stat(stderrLog); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stderr log of a step with no stderr: Stat = %v, want no file (created at the first byte)", err)
	}
}

// TestRunProcStderrLogLazy: the stderr log is created at the first byte of
// stderr, a stale one from an earlier attempt is removed when the step
// writes none, and a log that cannot be created is an IOErr, not a start
// error (the step still ran).
func TestRunProcStderrLogLazy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	logPath := filepath.Join(dir, "logs", "Step-stderr.log")
	// A try with no stderr creates no log.
	argv, env := testchild.Argv(t, "print", "out", "")
	res := Run(context.Background(), Spec{Argv: argv, Env: env, StderrLog: logPath, StderrHeader: "--- attempt 1 ---\n"})
	if res.ExitCode != 0 || res.IOErr != nil {
		t.Fatalf("RunProc(print) = exit %d, IOErr %v, want 0, nil", res.ExitCode, res.IOErr)
	}
	if _, err := os.Stat(logPath); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stderr log after a try with no stderr: Stat = %v, want none", err)
	}
	// Tries with stderr append under their header; a try without adds
	// nothing.
	argv, env = testchild.Argv(t, "print", "", "oops")
	Run(context.Background(), Spec{Argv: argv, Env: env, StderrLog: logPath, StderrHeader: "--- attempt 2 ---\n"})
	quiet, qenv := testchild.Argv(t, "print", "out", "")
	Run(context.Background(), Spec{Argv: quiet, Env: qenv, StderrLog: logPath, StderrHeader: "--- attempt 3 ---\n"})
	Run(context.Background(), Spec{Argv: argv, Env: env, StderrLog: logPath, StderrHeader: "--- attempt 4 ---\n"})
	want := "--- attempt 2 ---\noops--- attempt 4 ---\noops"
	if got, err := os.ReadFile(logPath); err != nil || string(got) != want {
		t.Errorf("stderr log = %q, %v, want %q", got, err, want)
	}
	noDir := filepath.Join(dir, "file")
	if err := os.WriteFile(noDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res = Run(context.Background(), Spec{Argv: argv, Env: env, StderrLog: filepath.Join(noDir, "err.log")})
	if res.StartErr != nil || res.ExitCode != 0 || res.IOErr == nil {
		t.Errorf("RunProc(uncreatable stderr log) = exit %d, StartErr %v, IOErr %v, want 0, nil, an error", res.ExitCode, res.StartErr, res.IOErr)
	}
}

// captureModes are the two ways stdout is captured: into an unnamed file
// when nothing needs it while it is written, and through a pipe when a
// secret is to be masked (or a live copy or output_file wants it).
var captureModes = []struct {
	name string
	mask *text.Masker
}{
	{"file", nil},
	{"pipe", text.NewMasker([]string{"a-secret-the-output-lacks"})},
}

func TestRunProcCaptureLimits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		memCap    int
		size      int
		wantSpill bool
	}{
		{"nothing", 100, 0, false},
		{"under the cap", 100, 99, false},
		{"at the cap", 100, 100, false},
		{"one over the cap", 100, 101, true},
		{"far over the cap", 100, 300_000, true},
	}
	for _, mode := range captureModes {
		for _, tt := range tests {
			t.Run(mode.name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				spill := filepath.Join(dir, "out.log")
				argv, env := testchild.Argv(t, "out", strconv.Itoa(tt.size))
				res := Run(context.Background(), Spec{Argv: argv, Env: env, MemCap: tt.memCap, StdoutSpill: spill, Mask: mode.mask})
				got, statErr := os.ReadFile(spill)
				if gotSpill := statErr == nil; gotSpill != tt.wantSpill || res.StdoutTruncated != tt.wantSpill || (res.StdoutSpill != "") != tt.wantSpill {
					t.Errorf("RunProc(out %d, cap %d): spill file %v, truncated %v, StdoutSpill %q, want %v", tt.size, tt.memCap, gotSpill, res.StdoutTruncated, res.StdoutSpill, tt.wantSpill)
				}
				if tt.wantSpill && !bytes.Equal(got, testchild.Pattern(tt.size)) {
					t.Errorf("RunProc(out %d, cap %d): spill holds %d bytes, want the whole stream", tt.size, tt.memCap, len(got))
				}
				if want := testchild.Pattern(min(tt.size, tt.memCap)); res.Stdout != string(want) {
					t.Errorf("RunProc(out %d, cap %d).Stdout = %q, want %q", tt.size, tt.memCap, res.Stdout, want)
				}
				if res.IOErr != nil {
					t.Errorf("RunProc(out %d, cap %d).IOErr = %v", tt.size, tt.memCap, res.IOErr)
				}
				// Nothing else is left in the spill's directory.
				ents, _ := os.ReadDir(dir)
				if n := len(ents); n != map[bool]int{false: 0, true: 1}[tt.wantSpill] {
					t.Errorf("RunProc(out %d, cap %d) left %d files in the spill's directory", tt.size, tt.memCap, n)
				}
			})
		}
	}
}

// TestRunProcSpillReplacesEarlierTry: a retried step's spill holds only
// the last try's stream, in both capture modes.
func TestRunProcSpillReplacesEarlierTry(t *testing.T) {
	t.Parallel()
	for _, mode := range captureModes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			spill := filepath.Join(t.TempDir(), "out.log")
			if err := os.WriteFile(spill, bytes.Repeat([]byte("x"), 5000), 0o600); err != nil {
				t.Fatal(err)
			}
			argv, env := testchild.Argv(t, "out", "200")
			res := Run(context.Background(), Spec{Argv: argv, Env: env, MemCap: 100, StdoutSpill: spill, Mask: mode.mask})
			got, err := os.ReadFile(spill)
			if err != nil || !bytes.Equal(got, testchild.Pattern(200)) || res.StdoutSpill != spill {
				t.Errorf("spill after a second try = %d bytes (%v), StdoutSpill %q; want this try's 200 bytes", len(got), err, res.StdoutSpill)
			}
		})
	}
}

// TestRunProcSpillCopiedWhenNotLinkable: where the unnamed file cannot be
// named (no /proc, no CAP_DAC_READ_SEARCH), the spill is a copy of it.
// Not parallel: it replaces link while no other test runs.
func TestRunProcSpillCopiedWhenNotLinkable(t *testing.T) {
	defer func(l func(*os.File, string) error) { link = l }(link)
	link = func(*os.File, string) error { return errors.ErrUnsupported }
	spill := filepath.Join(t.TempDir(), "out.log")
	argv, env := testchild.Argv(t, "out", "300000")
	res := Run(context.Background(), Spec{Argv: argv, Env: env, MemCap: 100, StdoutSpill: spill})
	got, err := os.ReadFile(spill)
	if err != nil || !bytes.Equal(got, testchild.Pattern(300000)) || res.StdoutSpill != spill || res.IOErr != nil {
		t.Errorf("copied spill = %d bytes (%v), StdoutSpill %q, IOErr %v; want the whole stream", len(got), err, res.StdoutSpill, res.IOErr)
	}
}

// TestRunProcStdoutKind: stdout is an unnamed file only when nothing
// needs the stream while it is written; else a pipe.
func TestRunProcStdoutKind(t *testing.T) {
	t.Parallel()
	var sink bytes.Buffer
	tests := []struct {
		name string
		spec func(spill string) Spec
		want string
	}{
		{"plain", func(spill string) Spec { return Spec{StdoutSpill: spill} }, "file"},
		{"a secret to mask", func(spill string) Spec {
			return Spec{StdoutSpill: spill, Mask: text.NewMasker([]string{"s3cr3t"})}
		}, "pipe"},
		{"a live copy", func(spill string) Spec { return Spec{StdoutSpill: spill, Live: io.Discard} }, "pipe"},
		{"an output_file", func(spill string) Spec { return Spec{StdoutSpill: spill, Stdout: &sink} }, "pipe"},
		{"no spill path", func(string) Spec { return Spec{} }, "pipe"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := tt.spec(filepath.Join(t.TempDir(), "logs", "out.log"))
			spec.Argv, spec.Env = testchild.Argv(t, "stdoutkind")
			res := Run(context.Background(), spec)
			if got := strings.TrimSpace(res.Stdout); got != tt.want || res.ExitCode != 0 {
				t.Errorf("stdout of the child = %q (exit %d), want %q", got, res.ExitCode, tt.want)
			}
		})
	}
}

func TestRunProcStderrLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	logPath := filepath.Join(dir, "Step-stderr.log")
	long := strings.Repeat("e", 50)
	argv, env := testchild.Argv(t, "print", "o", long)
	res := Run(context.Background(), Spec{Argv: argv, Env: env, MemCap: 10, StderrLog: logPath})
	got, err := os.ReadFile(logPath)
	if err != nil || string(got) != long {
		t.Errorf("stderr log = %q, %v, want %q", got, err, long)
	}
	if res.Stderr != long[:10] || !res.StderrTruncated {
		t.Errorf("RunProc.Stderr = %q truncated %v, want %q true", res.Stderr, res.StderrTruncated, long[:10])
	}
}

func TestRunProcTimeoutKillsGroup(t *testing.T) {
	t.Parallel()
	argv, env := testchild.Argv(t, "grandchild", "60s")
	// The timeout must leave the grandchild time to start and print its
	// pid: a short one first, doubled while the machine is too loaded for
	// that (a run that timed out before the pid was printed proves nothing).
	var res Result
	for timeout := 400 * time.Millisecond; ; timeout *= 2 {
		begin := time.Now()
		res = Run(context.Background(), Spec{Argv: argv, Env: env, Timeout: timeout, KillGrace: 2 * time.Second})
		elapsed := time.Since(begin)
		if !res.TimedOut || res.ExitCode != 124 {
			t.Fatalf("RunProc(grandchild) = exit %d timedOut %v, want 124 true", res.ExitCode, res.TimedOut)
		}
		if elapsed > timeout+20*time.Second {
			t.Errorf("RunProc(grandchild) returned after %v, want well before the 60s sleep ends", elapsed)
		}
		if strings.Contains(res.Stdout, "\n") || timeout > 10*time.Second {
			break
		}
	}
	pid := firstPID(t, res.Stdout)
	if !gone(pid) {
		t.Errorf("grandchild %d is still running after the timeout", pid)
	}
}

func TestRunProcKillAfterGrace(t *testing.T) {
	t.Parallel()
	argv, env := testchild.Argv(t, "ignoreterm", "60s")
	begin := time.Now()
	res := Run(context.Background(), Spec{Argv: argv, Env: env, Timeout: 300 * time.Millisecond, KillGrace: 500 * time.Millisecond})
	if elapsed := time.Since(begin); elapsed > 20*time.Second {
		t.Errorf("RunProc(ignoreterm) returned after %v, want SIGKILL after the grace period", elapsed)
	}
	if !res.TimedOut || res.ExitCode != 124 {
		t.Errorf("RunProc(ignoreterm) = exit %d timedOut %v, want 124 true", res.ExitCode, res.TimedOut)
	}
}

func TestRunProcCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	started := filepath.Join(t.TempDir(), "started")
	argv, env := testchild.Argv(t, "grandchild", "60s", started)
	go func() {
		// Cancel once the grandchild runs, however loaded the machine is.
		for {
			if _, err := os.Stat(started); err == nil {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	begin := time.Now()
	res := Run(ctx, Spec{Argv: argv, Env: env, Timeout: time.Hour})
	if elapsed := time.Since(begin); elapsed > 20*time.Second {
		t.Errorf("RunProc(cancelled) returned after %v, want promptly", elapsed)
	}
	if res.TimedOut || res.ExitCode == 0 || res.ExitCode == 124 {
		t.Errorf("RunProc(cancelled) = exit %d timedOut %v, want a signal exit and no timeout", res.ExitCode, res.TimedOut)
	}
	if pid := firstPID(t, res.Stdout); !gone(pid) {
		t.Errorf("grandchild %d is still running after cancellation", pid)
	}
}

// TestRunProcOrphanHoldsPipe checks that RunProc returns although a grandchild
// keeps stdout open after the child exited.
func TestRunProcOrphanHoldsPipe(t *testing.T) {
	t.Parallel()
	argv, env := testchild.Argv(t, "orphan", "60s")
	begin := time.Now()
	res := Run(context.Background(), Spec{Argv: argv, Env: env})
	elapsed := time.Since(begin)
	firstPID(t, res.Stdout) // killed at cleanup
	if elapsed > 20*time.Second {
		t.Errorf("RunProc(orphan) returned after %v, want well before the grandchild's 60s sleep ends", elapsed)
	}
	if res.ExitCode != 0 || res.TimedOut {
		t.Errorf("RunProc(orphan) = exit %d timedOut %v, want 0 false", res.ExitCode, res.TimedOut)
	}
}

// syncBuffer is a bytes.Buffer that both streams may write to.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

func TestRunProcMasking(t *testing.T) {
	t.Parallel()
	const secret = "hunter2-secret-value"
	dir := t.TempDir()
	spill := filepath.Join(dir, "out.log")
	stderrLog := filepath.Join(dir, "err.log")
	var live syncBuffer
	var sink bytes.Buffer
	argv, env := testchild.Argv(t, "split", secret, "40")
	res := Run(context.Background(), Spec{
		Argv: argv, Env: env, MemCap: 32, StdoutSpill: spill, StderrLog: stderrLog,
		Mask: text.NewMasker([]string{secret, "other"}), Live: &live, Stdout: &sink,
	})
	if res.ExitCode != 0 || !res.StdoutTruncated {
		t.Fatalf("RunProc(split) = exit %d truncated %v, want 0 true", res.ExitCode, res.StdoutTruncated)
	}
	spilled, err := os.ReadFile(spill)
	if err != nil {
		t.Fatal(err)
	}
	logged, err := os.ReadFile(stderrLog)
	if err != nil {
		t.Fatal(err)
	}
	const masked = "before *** after\n"
	wantOut := masked + string(testchild.Pattern(40))
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"in-memory stdout", res.Stdout, wantOut[:32]},
		{"in-memory stderr", res.Stderr, masked},
		{"spill file", string(spilled), wantOut},
		{"stderr log", string(logged), masked},
		{"stdout sink", sink.String(), wantOut},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("%s = %q, want %q", tt.name, tt.got, tt.want)
			}
		})
	}
	t.Run("live", func(t *testing.T) {
		got := live.String()
		if strings.Contains(got, secret) || strings.Count(got, "***") != 2 || len(got) != 2*len(masked)+40 {
			t.Errorf("live = %q, want both streams with the secret masked", got)
		}
	})
}

// TestLineSinkKeepsLinesWhole: two streams writing to one Live writer in
// chunks that end inside lines (as reads of a pipe do) reach it a whole
// line at a time; what ends without a newline comes at the flush.
func TestLineSinkKeepsLinesWhole(t *testing.T) {
	var live bytes.Buffer
	out, errs := &lineSink{w: &live}, &lineSink{w: &live}
	for _, w := range []struct {
		s *lineSink
		p string
	}{
		{out, "stdout li"}, {errs, "stderr line 1\nstderr li"}, {out, "ne 0\nstdout line 2\nstd"},
		{errs, "ne 3\n"}, {out, "out line 4"}, {errs, "tail"},
	} {
		if n, err := w.s.Write([]byte(w.p)); n != len(w.p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", w.p, n, err)
		}
	}
	if want := "stderr line 1\nstdout line 0\nstdout line 2\nstderr line 3\n"; live.String() != want {
		t.Errorf("before the flush, live = %q, want %q", live.String(), want)
	}
	out.flush()
	errs.flush()
	if want := "stderr line 1\nstdout line 0\nstdout line 2\nstderr line 3\nstdout line 4tail"; live.String() != want {
		t.Errorf("after the flush, live = %q, want %q", live.String(), want)
	}
	long := &lineSink{w: &live}
	live.Reset()
	long.Write(bytes.Repeat([]byte("x"), lineSinkMax))
	if live.Len() != lineSinkMax {
		t.Errorf("a line of %d bytes without newline: %d bytes passed, want all (held back at most lineSinkMax)", lineSinkMax, live.Len())
	}
}

// TestRunProcLines: Spec.Lines gets every whole line of both streams,
// masked, each with its stream.
func TestRunProcLines(t *testing.T) {
	t.Parallel()
	const secret = "hunter2-secret-value"
	var mu sync.Mutex
	var got []string
	argv, env := testchild.Argv(t, "split", secret, "40")
	res := Run(context.Background(), Spec{
		Argv: argv, Env: env, Mask: text.NewMasker([]string{secret}),
		Lines: func(s Stream, lines []byte) bool {
			mu.Lock()
			defer mu.Unlock()
			EachLine(lines, func(line []byte) {
				got = append(got, fmt.Sprintf("%d %s", s, line))
			})
			return true
		},
	})
	if res.ExitCode != 0 {
		t.Fatalf("Run(split) = exit %d", res.ExitCode)
	}
	want := []string{"1 before *** after", "1 " + string(testchild.Pattern(40)), "2 before *** after"}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("Lines got %q, want %q", got, want)
	}
}

// TestRunProcLinesDone: once Spec.Lines returns false, it gets no more
// lines of that stream, and the step records no error for it.
func TestRunProcLinesDone(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	calls := map[Stream]int{}
	argv, env := testchild.Argv(t, "split", "secret-x", "40")
	res := Run(context.Background(), Spec{
		Argv: argv, Env: env,
		Lines: func(s Stream, lines []byte) bool {
			mu.Lock()
			defer mu.Unlock()
			calls[s]++
			return false
		},
	})
	if res.ExitCode != 0 || res.IOErr != nil {
		t.Fatalf("Run(split) = exit %d, IOErr %v", res.ExitCode, res.IOErr)
	}
	if calls[Stdout] != 1 || calls[Stderr] != 1 {
		t.Errorf("Lines called %v times per stream, want once each", calls)
	}
	if !strings.Contains(res.Stdout, "before secret-x after") {
		t.Errorf("stdout %q: the capture lost what Lines did not want", res.Stdout)
	}
}
