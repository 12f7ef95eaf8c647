package proc

import (
	"fmt"
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

// TestGroupSlots checks the records of RUN_ROOT/procs-*: the steps of a
// run share one file, in RUN_ROOT itself (no directory of its own), a slot holds its group while its step runs, is
// blanked and reused after it, and KillLeftovers kills every recorded
// group, skips blank records and removes every file.
func TestGroupSlots(t *testing.T) {
	root := t.TempDir()
	var pgids []int
	var starts []uint64
	var dones []chan error
	for range 2 {
		starts = append(starts, bootTicks()) // read before the fork, as Run does
		pgid, done := startGroup(t)
		pgids = append(pgids, pgid)
		dones = append(dones, done)
	}
	record := func(f *slotFile, idx int) []string {
		t.Helper()
		b, err := os.ReadFile(f.path)
		if err != nil || len(b) < (idx+1)*recordWidth {
			t.Fatalf("record file = %q, %v; want record %d", b, err, idx)
		}
		return strings.Fields(string(b[idx*recordWidth : (idx+1)*recordWidth]))
	}

	s, err := recordGroup(root, pgids[0], starts[0])
	if err != nil || s == nil {
		t.Fatalf("recordGroup() = %v, %v", s, err)
	}
	if f := record(s.f, s.idx); len(f) != 2 || f[0] != strconv.Itoa(pgids[0]) || f[1] != strconv.FormatUint(starts[0], 10) {
		t.Fatalf("record while the step runs = %q, want %d %d (the group and its start time)", f, pgids[0], starts[0])
	}
	// a second step running at the same time: the same file, the next record
	s2, err := recordGroup(root, pgids[1], starts[1])
	if err != nil || s2 == nil || s2.f != s.f || s2.idx != s.idx+1 {
		t.Fatalf("recordGroup() of a second step = %+v, %v; want the next slot of %+v", s2, err, s)
	}
	forgetGroup(s)
	if f := record(s.f, s.idx); strings.Join(f, " ") != "0 0" {
		t.Fatalf("record after the step = %q, want 0 0", f)
	}
	if f := record(s2.f, s2.idx); len(f) != 2 || f[0] != strconv.Itoa(pgids[1]) {
		t.Fatalf("the other step's record after the first ended = %q, want %d", f, pgids[1])
	}
	again, err := recordGroup(root, pgids[0], starts[0])
	if err != nil || again.f != s.f || again.idx != s.idx {
		t.Fatalf("recordGroup() after forgetGroup = %+v, %v; want the same slot %+v", again, err, s)
	}
	// a third slot, blank: KillLeftovers skips it
	other, err := takeSlot(root)
	if err != nil {
		t.Fatal(err)
	}
	releaseSlot(other)
	if got := slotFiles(t, root); len(got) != 1 || filepath.Dir(got[0]) != root {
		t.Errorf("record files %q, want one in RUN_ROOT for all the steps", got)
	}

	if n := KillLeftovers(root); n != 2 {
		t.Errorf("KillLeftovers() = %d, want 2 (the sleeps)", n)
	}
	for _, done := range dones {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("a recorded group was not killed")
		}
	}
	if got := slotFiles(t, root); len(got) != 0 {
		t.Errorf("record files after KillLeftovers: %q, want none", got)
	}
	slots.Lock()
	f := slots.files[root]
	slots.Unlock()
	if f != nil {
		t.Errorf("the run's record file is still open after KillLeftovers")
	}
	// The steps still running when it was dropped release their slots
	// into the closed file without harm.
	forgetGroup(again)
	forgetGroup(s2)
}

// startGroup starts sleep 30 as the leader of a process group of its own
// (killed when the test ends) and returns the group and the channel its
// Wait's result arrives on.
func startGroup(t *testing.T) (int, chan error) {
	t.Helper()
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return cmd.Process.Pid, done
}

// slotFiles lists the record files of root, and of the procs directory
// of earlier versions.
func slotFiles(t *testing.T, root string) []string {
	t.Helper()
	a, _ := filepath.Glob(filepath.Join(root, "procs-*"))
	b, _ := filepath.Glob(filepath.Join(root, "procs", "*"))
	return append(a, b...)
}

// TestKillLeftoversSkipsHoles checks that a slot not written yet (zero
// bytes, when a later slot was written first) hides no other record, in a
// record file of RUN_ROOT and in the RUN_ROOT/procs directory that earlier
// versions wrote (a resume after their crash still kills what they left);
// the files, and that directory, are removed.
func TestKillLeftoversSkipsHoles(t *testing.T) {
	for _, file := range []string{"procs-1-1", filepath.Join("procs", "slot-1-1")} {
		t.Run(file, func(t *testing.T) {
			root := t.TempDir()
			pgid, done := startGroup(t)
			rec := fmt.Sprintf("%d 0", pgid)
			rec += strings.Repeat(" ", recordWidth-1-len(rec)) + "\n"
			path := filepath.Join(root, file)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, append(make([]byte, recordWidth), rec...), 0o644); err != nil {
				t.Fatal(err)
			}
			if n := KillLeftovers(root); n != 1 {
				t.Errorf("KillLeftovers() = %d, want 1", n)
			}
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the recorded group was not killed")
			}
			if got := slotFiles(t, root); len(got) != 0 {
				t.Errorf("record files after KillLeftovers: %q, want none", got)
			}
			if _, err := os.Stat(filepath.Join(root, "procs")); !os.IsNotExist(err) {
				t.Errorf("RUN_ROOT/procs after KillLeftovers: %v, want it removed", err)
			}
		})
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
	if _, ok := children(self, nil); !ok {
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
		procs, _ := children(self, nil)
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
