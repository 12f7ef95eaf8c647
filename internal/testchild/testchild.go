// Package testchild lets a test binary run itself as a child process, so
// the tests of the process runner (workers/proc) and of the workers start
// real processes that exit, print, sleep, ignore SIGTERM or leave
// grandchildren behind, without any program outside the test. TestMain
// calls Main first; Argv gives the argv and environment of one helper mode.
//
// It is test support only: no production package may import it.
package testchild

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Var selects the helper-process mode of the test binary: with it set to
// 1, Main runs the helper instead of the tests.
const Var = "SMITH_TEST_HELPER"

// Main runs the test binary as the helper process and exits when Var is
// set; otherwise it returns and TestMain runs the tests.
func Main() {
	if os.Getenv(Var) == "1" {
		os.Exit(helperMain(os.Args[1:]))
	}
}

// helperMain is the child process. args[0] is the mode:
//
//	exit K              exit with status K
//	print OUT ERR       write OUT to stdout and ERR to stderr
//	out N               write N bytes of pattern(N) to stdout
//	cat                 copy stdin to stdout
//	stdin               print "devnull" or "other" for fd 0, then the number of bytes read
//	stdoutkind          print "file" or "pipe" for fd 1
//	env                 print os.Environ, one per line
//	sleep D             sleep D
//	ignoreterm D        ignore SIGTERM, sleep D
//	kill                SIGKILL itself
//	grandchild D        start "sleep D" sharing stdout, print its pid, sleep D
//	orphan D            start "sleep D" sharing stdout, print its pid, exit 0
//	split SECRET PAD    write SECRET in pieces (with pauses) to both streams, then PAD bytes to stdout
func helperMain(args []string) int {
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	dur := func(s string) time.Duration {
		d, err := time.ParseDuration(s)
		if err != nil {
			panic(err)
		}
		return d
	}
	switch arg(0) {
	case "exit":
		n, _ := strconv.Atoi(arg(1))
		os.Stderr.WriteString(arg(2))
		return n
	case "print":
		os.Stdout.WriteString(arg(1))
		os.Stderr.WriteString(arg(2))
	case "out":
		n, _ := strconv.Atoi(arg(1))
		p := Pattern(n)
		for len(p) > 0 {
			k := min(len(p), 4096)
			os.Stdout.Write(p[:k])
			p = p[k:]
		}
	case "cat":
		io.Copy(os.Stdout, os.Stdin)
	case "seekout":
		// Moves its stdout's offset without writing (where stdout can seek).
		n, _ := strconv.Atoi(arg(1))
		os.Stdout.Seek(int64(n), io.SeekStart)
	case "stdin":
		in, err1 := os.Stdin.Stat()
		null, err2 := os.Stat(os.DevNull)
		if err1 == nil && err2 == nil && os.SameFile(in, null) {
			fmt.Println("devnull")
		} else {
			fmt.Println("other")
		}
		b, _ := io.ReadAll(os.Stdin)
		fmt.Println(len(b))
	case "stdoutkind":
		// What the child's stdout is: "file" (a regular file) or "pipe".
		kind := "other"
		if fi, err := os.Stdout.Stat(); err == nil {
			switch {
			case fi.Mode().IsRegular():
				kind = "file"
			case fi.Mode()&os.ModeNamedPipe != 0:
				kind = "pipe"
			}
		}
		fmt.Println(kind)
	case "env":
		for _, kv := range os.Environ() {
			fmt.Println(kv)
		}
	case "sleep":
		time.Sleep(dur(arg(1)))
	case "ignoreterm":
		signal.Ignore(syscall.SIGTERM)
		time.Sleep(dur(arg(1)))
	case "kill":
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Minute)
	case "grandchild", "orphan":
		exe, _ := os.Executable()
		c := exec.Command(exe, "sleep", arg(1))
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 99
		}
		fmt.Println(c.Process.Pid)
		if f := arg(2); f != "" {
			// Tell the test the grandchild runs (it waits for this file
			// instead of guessing how long starting takes).
			os.WriteFile(f, []byte("started"), 0o644)
		}
		if arg(0) == "grandchild" {
			time.Sleep(dur(arg(1)))
		}
	case "handshake":
		// What its stdout is ("file" or "pipe") on a first line, then waits
		// (20 s at most) for the file arg(1), which the test makes once it
		// got that line while the child runs; then "seen" (or "not seen")
		// and a last line without its newline.
		kind := "pipe"
		if fi, err := os.Stdout.Stat(); err == nil && fi.Mode().IsRegular() {
			kind = "file"
		}
		fmt.Println(kind)
		seen := "not seen"
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(arg(1)); err == nil {
				seen = "seen"
				break
			}
		}
		fmt.Println(seen)
		os.Stdout.WriteString("end")
	case "split":
		s := arg(1)
		for _, w := range []*os.File{os.Stdout, os.Stderr} {
			w.WriteString("before " + s[:3])
			time.Sleep(50 * time.Millisecond)
			w.WriteString(s[3:] + " after\n")
		}
		n, _ := strconv.Atoi(arg(2))
		os.Stdout.Write(Pattern(n))
	default:
		fmt.Fprintf(os.Stderr, "unknown helper mode %q\n", arg(0))
		return 98
	}
	return 0
}

// Pattern returns n deterministic printable bytes.
func Pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return b
}

// Argv returns the argv that runs the test binary in a helper mode, and the
// environment that selects helper mode.
func Argv(t testing.TB, args ...string) ([]string, []string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{exe}, args...), []string{Var + "=1"}
}
