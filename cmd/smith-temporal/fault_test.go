package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// slowYAML: A and C are quick; B records each start and its pid, then
// sleeps long enough to be killed in (2 minutes the first time, 1 s after).
var slowYAML = testWorkflow("slow.yaml")

func lines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\n")
}

// ppid returns the parent of pid (0 when it is gone).
func ppid(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	n, _ := strconv.Atoi(f[1])
	return n
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	return !strings.HasPrefix(s[strings.LastIndexByte(s, ')')+2:], "Z")
}

// TestKillWorkerMidStep: a worker killed with SIGKILL while it runs B:
// B's process (which would sleep for 2 minutes) dies with it (no orphan), B runs again on the other worker,
// A and C run once, the run completes.
func TestKillWorkerMidStep(t *testing.T) {
	f := newFleet(t)
	w1, w2 := f.worker(), f.worker()
	file := write(t, filepath.Join(f.base, "slow.yaml"), slowYAML)
	r := f.cli("run", file, "--run-id", "kill1", "--detach")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	pidFile := filepath.Join(f.base, "B.pid")
	defer func() {
		if t.Failed() {
			t.Logf("status: %s", f.cli("status", "kill1").stdout)
			out, _ := exec.Command("find", f.base).CombinedOutput()
			t.Logf("%s", out)
		}
	}()
	var stepPid int
	waitFor(t, 60*time.Second, "step B to start", func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		stepPid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return stepPid > 0
	})
	os.Remove(pidFile)
	// B runs under the step host under a worker: find which one.
	holder := ppid(ppid(stepPid))
	var victim, other = w1, w2
	switch holder {
	case w1.Process.Pid:
	case w2.Process.Pid:
		victim, other = w2, w1
	default:
		t.Fatalf("step B (pid %d) is not a grandchild of a worker (%d, %d): its grandparent is %d", stepPid, w1.Process.Pid, w2.Process.Pid, holder)
	}
	if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the killed worker's step to die", func() bool { return !alive(stepPid) })
	r = f.cli("status", "kill1")
	t.Logf("after the kill: %s", strings.TrimSpace(r.stdout))
	waitFor(t, 120*time.Second, "the run to complete on the other worker", func() bool {
		return runStatus(f, "kill1") == "completed"
	})
	if other.ProcessState != nil {
		t.Fatal("the surviving worker exited")
	}
	if a, b, c := lines(t, filepath.Join(f.base, "A.count")), lines(t, filepath.Join(f.base, "B.count")), lines(t, filepath.Join(f.base, "C.count")); a != 1 || b != 2 || c != 1 {
		t.Errorf("executions A=%d B=%d C=%d, want 1 2 1 (B re-runs, completed steps never do)", a, b, c)
	}
}

// TestHaltSurvivesLosingEveryWorker: a halted run waits in Temporal with
// no worker alive; a new worker picks it up and resume continues it.
func TestHaltSurvivesLosingEveryWorker(t *testing.T) {
	f := newFleet(t)
	w := f.worker()
	file := write(t, filepath.Join(f.base, "h.json"), haltManifest)
	r := f.cli("run", file, "--run-id", "lose1")
	if r.code != 4 {
		t.Fatalf("run: exit %d, want 4 (halted): %s", r.code, r.stderr)
	}
	w.Process.Signal(syscall.SIGKILL)
	w.Process.Wait()
	f.worker()
	r = f.cli("resume", "lose1", "--signal", "SIGNAL:APPROVED", "--note", "after the fleet died", "--json")
	if r.code != 0 {
		t.Fatalf("resume: exit %d: %s", r.code, r.stderr)
	}
	st := parseState(t, r.stdout)
	if st.Status != "completed" || st.Steps["Block:Publish"].Output != "published" {
		t.Errorf("after resume: %s, Publish %+v", st.Status, st.Steps["Block:Publish"])
	}
}
