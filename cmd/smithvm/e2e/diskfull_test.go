package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// smallDisk mounts a tmpfs of size (a mount(8) size such as "1m") at dir,
// unmounted when the test ends. Mounting needs root: the test is skipped
// where it is not permitted, except as root with CI=true, where it fails.
func smallDisk(t *testing.T, dir, size string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput()
	if err != nil {
		if inCI() && os.Geteuid() == 0 {
			t.Fatalf("mount a tmpfs at %s: %v: %s", dir, err, out)
		}
		t.Skipf("mounting a small file system is not permitted here (%v: %s)", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
}

// TestDiskFull: a disk that fills up while a run runs stops it with
// E_STATE_IO naming the cause; state.json stays whole JSON and no partial
// state.json.tmp is left taking space; once space is freed, resume
// finishes the run and runs no completed step again.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	p.base = filepath.Join(p.base, "small")
	smallDisk(t, p.base, "1m")
	p.ws = filepath.Join(p.base, "workspace")
	// B prints 40 KB (state.json keeps 8 KiB of it); C fills the disk
	// (once: it leaves the file "filled") and succeeds, so the snapshot at
	// the run's end, which needs fresh pages, fails.
	wf := p.write("full.yaml", `version: "1.0"
name: full
strict_flow: false
steps:
  - name: A
    command: ["HELPER", "count:a.cnt"]
  - name: B
    command: ["sh", "-c", "echo x >> b.cnt; head -c 40000 /dev/zero | tr '\\0' b; echo"]
  - name: C
    command: ["sh", "-c", "[ -f filled ] && exit 0; touch filled; cat /dev/zero > filler 2>/dev/null; true"]
`)
	r := p.vm("run", wf, "--run-id", "f1")
	want(t, r, 1)
	if !strings.Contains(r.stderr, "ERROR: E_STATE_IO: ") || !strings.Contains(r.stderr, "no space left on device; ") {
		t.Fatalf("no E_STATE_IO line naming the full disk:\n%s", r.stderr)
	}
	root := p.runRoot("f1")
	if _, err := os.Stat(filepath.Join(root, "state.json.tmp")); err == nil {
		t.Errorf("a partial state.json.tmp was left on the full disk")
	}
	b, err := os.ReadFile(filepath.Join(root, "state.json"))
	if err != nil || !json.Valid(b) {
		t.Fatalf("state.json is not whole JSON after the failed save (%v):\n%.300s", err, b)
	}
	if err := os.Remove(filepath.Join(p.ws, "filler")); err != nil {
		t.Fatal(err)
	}
	want(t, p.vm("resume", "f1"), 0)
	if st := p.state("f1"); st.Status != "completed" {
		t.Errorf("resumed run is %s, want completed", st.Status)
	}
	if n := p.count("a.cnt"); n != 1 {
		t.Errorf("A ran %d times, want 1", n)
	}
	if n := p.count("b.cnt"); n != 1 {
		t.Errorf("B ran %d times, want 1", n)
	}
}

// TestDiskFullParallel: the disk fills up while the 20 iterations of a
// parallel for_each save their results at the same time. An append the
// full disk cut short must not stay in the journal with other lines after
// it (a torn line in the middle: E_STATE_CORRUPT, the run lost): once space
// is freed, resume finishes the run.
func TestDiskFullParallel(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	p.base = filepath.Join(p.base, "small")
	smallDisk(t, p.base, "2m")
	p.ws = filepath.Join(p.base, "workspace")
	items := make([]string, 20)
	for i := range items {
		items[i] = fmt.Sprintf("%q", fmt.Sprint(i))
	}
	wf := p.write("par.yaml", `version: "1.0"
name: par
strict_flow: false
steps:
  - name: Each
    for_each:
      items: [`+strings.Join(items, ", ")+`]
      parallel: 20
      steps:
        - name: Work
          command: ["sh", "-c", "head -c 20000 /dev/zero | tr '\\0' w; echo; [ $$0 = 7 ] && [ ! -f filled ] && touch filled && cat /dev/zero > filler 2>/dev/null; sleep 0.2; true", "${item}"]
  - name: C
    command: ["HELPER", "count:c.cnt"]
`)
	r := p.vm("run", wf, "--run-id", "p1")
	want(t, r, 1)
	if !strings.Contains(r.stderr, "ERROR: E_STATE_IO: ") {
		t.Fatalf("no E_STATE_IO line:\n%s", r.stderr)
	}
	if err := os.Remove(filepath.Join(p.ws, "filler")); err != nil {
		t.Fatal(err)
	}
	want(t, p.vm("resume", "p1"), 0)
	if n := p.count("c.cnt"); n != 1 {
		t.Errorf("C ran %d times, want 1", n)
	}
}
