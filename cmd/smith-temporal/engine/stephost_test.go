package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"smith/isa"
	"smith/workers/step"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hostSession runs ServeSteps over pipes, as the worker's child would.
type hostSession struct {
	t     *testing.T
	in    *io.PipeWriter
	out   *bufio.Scanner
	done  chan error
	base  string
	reply chan hostReply
}

func startHost(t *testing.T) *hostSession {
	t.Helper()
	base := t.TempDir()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &hostSession{t: t, in: inW, out: bufio.NewScanner(outR), done: make(chan error, 1), base: base, reply: make(chan hostReply, 10)}
	go func() { s.done <- ServeSteps(context.Background(), base, inR, outW, os.LookupEnv); outW.Close() }()
	go func() {
		for s.out.Scan() {
			var r hostReply
			if err := json.Unmarshal(s.out.Bytes(), &r); err == nil {
				s.reply <- r
			}
		}
	}()
	t.Cleanup(func() { inW.Close() })
	return s
}

func (s *hostSession) send(m hostMsg) {
	s.t.Helper()
	b, _ := json.Marshal(m)
	if _, err := s.in.Write(append(b, '\n')); err != nil {
		s.t.Fatal(err)
	}
}

func command(argv ...string) *WireRequest {
	return &WireRequest{Request: step.Request{RunID: "r", Step: "S", Kind: isa.KindCommand, Argv: argv, Timeout: time.Minute}}
}

func (s *hostSession) next(within time.Duration) hostReply {
	s.t.Helper()
	select {
	case r := <-s.reply:
		return r
	case <-time.After(within):
		s.t.Fatalf("no result within %v", within)
		return hostReply{}
	}
}

// waitPid reads the pid a step wrote to path.
func waitPid(t *testing.T, path string) int {
	t.Helper()
	end := time.Now().Add(30 * time.Second)
	for time.Now().Before(end) {
		if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			return pid
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no pid in %s", path)
	return 0
}

func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	return strings.HasPrefix(s[strings.LastIndexByte(s, ')')+2:], "Z")
}

func waitGone(t *testing.T, pid int, what string) {
	t.Helper()
	end := time.Now().Add(15 * time.Second)
	for !gone(pid) {
		if time.Now().After(end) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("%s: process %d still runs", what, pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServeSteps: the step host runs steps at once and answers each by
// its id; a cancel ends one step (its process killed) and not the other;
// the end of its input (the worker died) cancels every running step and
// ends the host.
func TestServeSteps(t *testing.T) {
	s := startHost(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	s.send(hostMsg{ID: 1, Req: command("sh", "-c", "echo $$ > "+pidFile+"; exec sleep 60")})
	pid := waitPid(t, pidFile)
	s.send(hostMsg{ID: 2, Req: command("printf", "two")})
	if r := s.next(30 * time.Second); r.ID != 2 || r.Result.Result.Output != "two" {
		t.Fatalf("first result: id %d, %+v; want step 2 with output two while step 1 runs", r.ID, r.Result.Result)
	}
	s.send(hostMsg{ID: 1, Cancel: true})
	if r := s.next(30 * time.Second); r.ID != 1 || r.Result.Result.ExitCode == 0 {
		t.Errorf("cancelled step: id %d, exit %d; want step 1, not successful", r.ID, r.Result.Result.ExitCode)
	}
	waitGone(t, pid, "after its cancel")

	os.Remove(pidFile)
	s.send(hostMsg{ID: 3, Req: command("sh", "-c", "echo $$ > "+pidFile+"; exec sleep 60")})
	pid = waitPid(t, pidFile)
	s.in.Close()
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("ServeSteps after its input closed: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the step host did not end when its input closed")
	}
	waitGone(t, pid, "after the host's input closed")
}
