package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/common/testing/freeport"
)

// A Temporal server whose state survives its process: smith-temporal dev
// (SQLite in a file, the frontend on a fixed 127.0.0.1 port), run as a
// subprocess of the test binary, so a test can kill it and start it again
// on the same port and database.

// fileServer is a smith-temporal dev subprocess.
type fileServer struct {
	t       testing.TB
	db, ns  string
	port    int
	cmd     *exec.Cmd
	started time.Duration // how long the last start took
}

func (s *fileServer) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// start starts the server and waits until it answers on its namespace.
func (s *fileServer) start() {
	s.t.Helper()
	exe, err := os.Executable()
	if err != nil {
		s.t.Fatal(err)
	}
	t0 := time.Now()
	cmd := exec.Command(exe, "dev", "--db", s.db, "--port", strconv.Itoa(s.port), "--namespace", s.ns)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.cmd = cmd
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "smith-temporal dev: Temporal server on "+s.addr()) {
				ready <- true
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			s.t.Fatal("the test server exited before it was ready")
		}
	case <-time.After(2 * time.Minute):
		s.t.Fatal("the test server was not ready within 2 minutes")
	}
	c, err := client.Dial(client.Options{HostPort: s.addr(), Namespace: s.ns, Logger: quietLogger{}})
	if err != nil {
		s.t.Fatal(err)
	}
	defer c.Close()
	waitFor(s.t, time.Minute, "the namespace to answer", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: s.ns})
		return err == nil
	})
	s.started = time.Since(t0)
}

// dead reports whether the server's process has ended (a zombie not yet
// reaped counts).
func (s *fileServer) dead() bool {
	if s.cmd == nil || s.cmd.Process == nil {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(s.cmd.Process.Pid) + "/stat")
	if err != nil {
		return true
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return strings.HasPrefix(rest, "Z")
}

// kill ends the server with SIGKILL: no clean shutdown.
func (s *fileServer) kill() {
	if s.cmd != nil && s.cmd.ProcessState == nil {
		s.cmd.Process.Signal(syscall.SIGKILL)
		s.cmd.Wait()
	}
}

// TestServerRestartMidRun: the Temporal server is killed (SIGKILL) while
// step B runs and started again on the same port and database: the run
// completes, A and C ran once, and B at most twice (once when its result
// reached the server after the restart; again when it was lost with the
// server and the activity timed out).
func TestServerRestartMidRun(t *testing.T) {
	s := &fileServer{t: t, db: filepath.Join(t.TempDir(), "temporal.db"), port: freeport.MustGetFreePort(), ns: "restart"}
	s.start()
	t.Cleanup(s.kill)
	t.Logf("server started in %v", s.started.Round(time.Millisecond))
	f := newFleetAt(t, s.addr(), s.ns)
	f.worker()
	file := write(t, filepath.Join(f.base, "r.yaml"), restartYAML)
	if r := f.cli("run", file, "--run-id", "restart1", "--detach"); r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	waitFor(t, 60*time.Second, "step B to start", func() bool {
		return lines(t, filepath.Join(f.base, "B.count")) > 0
	})
	s.kill()
	time.Sleep(time.Second)
	s.start()
	t.Logf("server restarted in %v", s.started.Round(time.Millisecond))
	waitFor(t, 3*time.Minute, "the run to complete after the restart", func() bool {
		return runStatus(f, "restart1") == "completed"
	})
	a, b, c := lines(t, filepath.Join(f.base, "A.count")), lines(t, filepath.Join(f.base, "B.count")), lines(t, filepath.Join(f.base, "C.count"))
	t.Logf("executions A=%d B=%d C=%d", a, b, c)
	if a != 1 || c != 1 || b < 1 || b > 2 {
		t.Errorf("executions A=%d B=%d C=%d, want A and C once, B once or twice", a, b, c)
	}
}

// restartYAML: B takes 4 s, long enough to kill the server in.
var restartYAML = testWorkflow("restart.yaml")

// cutoffYAML: Write makes a.txt; Slow reports whether it sees stray.txt,
// then writes it and half of a.txt, and (the first time) waits to be
// killed.
var cutoffYAML = testWorkflow("cutoff.yaml")

// TestRestartedWorkerRunsCutOffStepClean: the only worker is killed
// (SIGKILL) while Slow runs, after Slow wrote stray.txt and changed
// a.txt; a worker restarted on the same BASE runs Slow again from Write's
// files: no stray.txt, a.txt as Write left it.
func TestRestartedWorkerRunsCutOffStepClean(t *testing.T) {
	f := newFleet(t)
	w := f.worker()
	file := write(t, filepath.Join(f.base, "cutoff.yaml"), cutoffYAML)
	if r := f.cli("run", file, "--run-id", "cutoff1", "--detach"); r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	waitFor(t, time.Minute, "Slow to start", func() bool {
		_, err := os.Stat(filepath.Join(f.base, "slow-started"))
		return err == nil
	})
	w.Process.Signal(syscall.SIGKILL)
	w.Process.Wait()
	f.worker()
	waitFor(t, 2*time.Minute, "the run to complete on the restarted worker", func() bool {
		return runStatus(f, "cutoff1") == "completed"
	})
	st := parseState(t, f.cli("status", "cutoff1", "--json").stdout)
	if got, want := st.Steps["Slow"].Output, "clean\nhalf"; got != want {
		t.Errorf("Slow's output = %q, want %q (run again from Write's files)", got, want)
	}
}
