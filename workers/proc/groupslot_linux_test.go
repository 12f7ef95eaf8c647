package proc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"smith/internal/testchild"
)

// TestGroupSlots checks the records of RUN_ROOT/procs: a slot holds the
// group while its step runs, is blanked and reused after it, and
// KillLeftovers kills a recorded group, skips a blank slot and removes
// every record.
func TestGroupSlots(t *testing.T) {
	root := t.TempDir()
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	started := bootTicks()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	pgid := cmd.Process.Pid

	s, err := recordGroup(root, pgid, started)
	if err != nil || s == nil {
		t.Fatalf("recordGroup() = %v, %v", s, err)
	}
	b, err := os.ReadFile(s.path)
	if f := strings.Fields(string(b)); err != nil || len(f) != 2 || f[0] != strconv.Itoa(pgid) || len(b) != recordWidth {
		t.Fatalf("record while the step runs = %q, %v; want %d and its start time, %d bytes", b, err, pgid, recordWidth)
	}
	forgetGroup(s)
	if b, _ := os.ReadFile(s.path); strings.Join(strings.Fields(string(b)), " ") != "0 0" {
		t.Fatalf("record after the step = %q, want 0 0", b)
	}
	again, err := recordGroup(root, pgid, started)
	if err != nil || again != s {
		t.Fatalf("recordGroup() after forgetGroup = %v, %v; want the same slot %v", again, err, s)
	}
	// a second slot, blank: KillLeftovers skips it
	other, err := takeSlot(root)
	if err != nil {
		t.Fatal(err)
	}
	releaseSlot(other)

	if n := KillLeftovers(root); n != 1 {
		t.Errorf("KillLeftovers() = %d, want 1 (the sleep)", n)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the recorded group was not killed")
	}
	if ents, _ := os.ReadDir(filepath.Join(root, "procs")); len(ents) != 0 {
		t.Errorf("RUN_ROOT/procs after KillLeftovers holds %d files, want none", len(ents))
	}
	slots.Lock()
	n := len(slots.free[root])
	slots.Unlock()
	if n != 0 {
		t.Errorf("%d free slots of the run after KillLeftovers, want none", n)
	}
}

// TestBootTicksBeforeStart checks the start time a group's record holds:
// bootTicks read before a fork is no later than the child's start time in
// /proc/<pid>/stat (so KillLeftovers, which kills what started no earlier
// than the record, kills the leader), and close to it.
func TestBootTicksBeforeStart(t *testing.T) {
	for range 20 {
		before := bootTicks()
		cmd := exec.Command("sleep", "30")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p, ok := readProc(cmd.Process.Pid)
		after := bootTicks()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if !ok {
			t.Fatal("readProc of a running child failed")
		}
		if before == 0 || before > p.start || p.start > after {
			t.Fatalf("bootTicks() before the fork %d, the child's start %d, bootTicks() after %d: want before <= start <= after", before, p.start, after)
		}
	}
}

// TestChildrenReadAgain checks that the kept children file shows the
// orphans of each moment: one reparented here after the file was opened
// appears, and is gone once reaped.
func TestChildrenReadAgain(t *testing.T) {
	becomeSubreaper()
	self, _ := selfIDs()
	if _, ok := children(self); !ok {
		t.Skip("no children file (CONFIG_PROC_CHILDREN)")
	}
	argv, env := testchild.Argv(t, "orphan", "30s")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	f, err := os.CreateTemp(t.TempDir(), "pid")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd.Stdout = f // not a pipe, which the orphan would hold open
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("orphan's pid %q: %v", out, err)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	listed := func() bool {
		procs, _ := children(self)
		for _, p := range procs {
			if p.pid == pid {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(10 * time.Second)
	for !listed() {
		if time.Now().After(deadline) {
			t.Fatalf("orphan %d never listed among the children", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
		t.Fatal(err)
	}
	if listed() {
		t.Errorf("orphan %d still listed after it was reaped", pid)
	}
}
