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
)

// TestGroupSlots checks the records of RUN_ROOT/procs: the steps of a
// run share one file, a slot holds its group while its step runs, is
// blanked and reused after it, and KillLeftovers kills every recorded
// group, skips blank records and removes every file.
func TestGroupSlots(t *testing.T) {
	root := t.TempDir()
	var pgids []int
	var dones []chan error
	for range 2 {
		cmd := exec.Command("sleep", "30")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		t.Cleanup(func() { cmd.Process.Kill() })
		pgids = append(pgids, cmd.Process.Pid)
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

	s, err := recordGroup(root, pgids[0])
	if err != nil || s == nil {
		t.Fatalf("recordGroup() = %v, %v", s, err)
	}
	if f := record(s.f, s.idx); len(f) != 2 || f[0] != strconv.Itoa(pgids[0]) {
		t.Fatalf("record while the step runs = %q, want %d and its start time", f, pgids[0])
	}
	// a second step running at the same time: the same file, the next record
	s2, err := recordGroup(root, pgids[1])
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
	again, err := recordGroup(root, pgids[0])
	if err != nil || again.f != s.f || again.idx != s.idx {
		t.Fatalf("recordGroup() after forgetGroup = %+v, %v; want the same slot %+v", again, err, s)
	}
	// a third slot, blank: KillLeftovers skips it
	other, err := takeSlot(root)
	if err != nil {
		t.Fatal(err)
	}
	releaseSlot(other)
	if ents, _ := os.ReadDir(filepath.Join(root, "procs")); len(ents) != 1 {
		t.Errorf("RUN_ROOT/procs holds %d files, want one for all the steps", len(ents))
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
	if ents, _ := os.ReadDir(filepath.Join(root, "procs")); len(ents) != 0 {
		t.Errorf("RUN_ROOT/procs after KillLeftovers holds %d files, want none", len(ents))
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

// TestKillLeftoversSkipsHoles checks that a slot not written yet (zero
// bytes, when a later slot was written first) hides no other record.
func TestKillLeftoversSkipsHoles(t *testing.T) {
	root := t.TempDir()
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	rec := fmt.Sprintf("%d 0", cmd.Process.Pid)
	rec += strings.Repeat(" ", recordWidth-1-len(rec)) + "\n"
	if err := os.MkdirAll(filepath.Join(root, "procs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "procs", "slot-1-1"), append(make([]byte, recordWidth), rec...), 0o644); err != nil {
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
}
