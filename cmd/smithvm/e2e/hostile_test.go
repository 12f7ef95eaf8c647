package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// noSecretUnder fails when any file under dir holds the secret.
func noSecretUnder(t *testing.T, dir, secret string) {
	t.Helper()
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), secret) {
			t.Errorf("%s holds the secret", path)
		}
		return nil
	})
}

// killDuringStep starts args, waits for the step to write pidFile (under
// WORKSPACE), SIGKILLs smithvm, waits for it and returns the step's pid.
func killDuringStep(t *testing.T, p *proj, pidFile string, args ...string) int {
	t.Helper()
	run := p.start(args...)
	path := filepath.Join(p.ws, pidFile)
	waitFor(t, 20*time.Second, pidFile, func() bool {
		b, err := os.ReadFile(path)
		return err == nil && len(b) > 0
	})
	pid := pidIn(t, path)
	run.cmd.Process.Signal(syscall.SIGKILL)
	if r := run.wait(t); r.code != 128+int(syscall.SIGKILL) {
		t.Fatalf("smithvm exit %d, want killed:\n%s", r.code, r.stderr)
	}
	os.Remove(path)
	return pid
}

// TestCrashInMaxVisitsStep: a crash while a max_visits step runs does not
// use up a visit, so the resumed run ends as an uninterrupted one (issue 8,
// point 2).
func TestCrashInMaxVisitsStep(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, file, text string }{
		{"yaml", "mv.yaml", workflow("crash_in_max_visits_step.yaml")},
		{"manifest", "mv.json", workflow("crash_in_max_visits_step.json")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := newProj(t)
			wf := p.write(c.file, c.text)
			killDuringStep(t, p, "a.pid", "run", wf, "--run-id", "mv")
			p.write("workspace/go", "")
			r := p.vm("resume", "mv")
			want(t, r, 0)
			if st := p.state("mv"); st.Status != "completed" {
				t.Errorf("status %q after resume, want completed", st.Status)
			}
		})
	}
}

// TestKillInFirstMilliseconds: a SIGKILL in the first milliseconds of run
// leaves the run id usable: resume finishes it, or (when nothing was saved)
// run --run-id starts it again (issue 8, point 3).
func TestKillInFirstMilliseconds(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	wf := p.write("early.yaml", workflow("kill_in_first_milliseconds.yaml"))
	stillborn := 0
	for i := 0; i < 12; i++ {
		id := fmt.Sprintf("early%d", i)
		run := p.start("run", wf, "--run-id", id)
		time.Sleep(time.Duration(i*3) * time.Millisecond)
		run.cmd.Process.Signal(syscall.SIGKILL)
		run.wait(t)
		if _, err := os.Stat(p.runRoot(id)); err != nil {
			continue // killed before the run existed
		}
		r := p.vm("resume", id)
		if r.code != 0 {
			if !strings.Contains(r.stderr, "E_STATE_CORRUPT") || !strings.Contains(r.stderr, "--run-id "+id) {
				t.Errorf("%s: resume exit %d without the way out:\n%s", id, r.code, r.stderr)
			}
			stillborn++
			want(t, p.vm("run", wf, "--run-id", id), 0)
		}
		if st := p.state(id); st.Status != "completed" {
			t.Errorf("%s: status %q, want completed", id, st.Status)
		}
	}
	t.Logf("%d of 12 kills left a run without state", stillborn)
}

// lineWith returns the first stderr line of r that starts with prefix and
// holds code, or "".
func lineWith(r result, prefix, code string) string {
	for _, l := range r.lines() {
		if strings.HasPrefix(l, prefix) && strings.Contains(l, code) {
			return l
		}
	}
	return ""
}

// nested returns a JSON object nested n levels deep: {"a":{"a":...1}}.
func nested(n int) string {
	return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n)
}

// TestDeepCapture: a step's json capture nested deeper than the bound fails
// the step (E_LIMIT) and the run's state stays readable (issue 8, point 6;
// testdata/script/hostile_deep_values.txtar has the deep contexts).
func TestDeepCapture(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	p.write("workspace/deep.json", nested(9990))
	wf := p.write("d.yaml", workflow("deep_capture.yaml"))
	r := p.vm("run", wf, "--run-id", "d")
	want(t, r, 1)
	if lineWith(r, "ERROR: Step 'J' failed", "E_LIMIT") == "" {
		t.Errorf("no E_LIMIT step line:\n%s", r.stderr)
	}
	if s := p.vm("status", "d"); s.code != 0 {
		t.Errorf("status after the deep capture: exit %d\n%s", s.code, s.stderr)
	}
	if fi, err := os.Stat(filepath.Join(p.runRoot("d"), "state.json")); err != nil || fi.Size() > 1<<20 {
		t.Errorf("state.json: %v, size %v", err, fi)
	}
}

// TestNoChildOutlivesItsStep: after a SIGKILL of smithvm, resume kills what
// the dead attempt left before the step runs again (issue 8, point 7;
// testdata/script/hostile_background_child_dies.txtar has the successful
// step's children).
func TestNoChildOutlivesItsStep(t *testing.T) {
	t.Parallel()
	t.Run("what a killed attempt left", func(t *testing.T) {
		t.Parallel()
		p := newProj(t)
		wf := p.write("k.yaml", workflow("no_child_outlives_its_step.yaml"))
		leader := killDuringStep(t, p, "a.pid", "run", wf, "--run-id", "k")
		child := pidIn(t, filepath.Join(p.ws, "c.pid"))
		os.Remove(filepath.Join(p.ws, "c.pid"))
		p.write("workspace/go", "")
		want(t, p.vm("resume", "k"), 0)
		for _, pid := range []int{leader, child} {
			if !gone(pid, 5*time.Second) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("process %d of the killed attempt outlived the resume", pid)
			}
		}
		if b, err := os.ReadFile(filepath.Join(p.ws, "c.pid")); err == nil {
			// (The resumed attempt's child may die before it writes its pid.)
			if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid > 0 && !gone(pid, 5*time.Second) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("the resumed attempt's child %d outlived its step", pid)
			}
		}
	})
}

// TestCapturesCapped: lines and json captures are capped in state.json like
// output; the whole value is kept in a file under RUN_ROOT/logs and
// ${steps.S.lines} / ${steps.S.json} still read it (issue 8, point 8). (The
// lines are of a stream within the 1 MiB a lines capture splits:
// TestCaptureMemoryBounded has a longer one.)
func TestCapturesCapped(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	var b strings.Builder
	b.WriteString(`{"items": [`)
	for i := 0; i < 20000; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"item %d"`, i)
	}
	b.WriteString(`], "last": "the end"}`)
	p.write("workspace/big.json", b.String())
	wf := p.write("c.yaml", workflow("captures_capped.yaml"))
	want(t, p.vm("run", wf, "--run-id", "c"), 0)
	st := p.state("c")
	if got, want := st.Steps["Use"].Output, strings.Repeat("x", 99)+"|the end|item 19999"; got != want {
		t.Errorf("Use printed %.200q, want %.200q", got, want)
	}
	fi, err := os.Stat(filepath.Join(p.runRoot("c"), "state.json"))
	if err != nil || fi.Size() > 200<<10 {
		t.Errorf("state.json is %d bytes (%v), want the captures capped", fi.Size(), err)
	}
	if !st.Steps["L"].Truncated || !st.Steps["J"].Truncated {
		t.Errorf("capped captures not marked truncated")
	}
}

// TestCaptureMemoryBounded: a lines or json capture of a stream far larger
// than the in-memory 1 MiB does not read the stream back whole: smithvm's
// peak memory stays far below the stream's (before: 411 MB for the 39 MB
// of lines, 580 MB for the 44 MB of JSON). lines keeps the complete lines of
// the first 1 MiB, with lines_truncated; json over 8 MiB is E_TOO_LARGE.
func TestCaptureMemoryBounded(t *testing.T) {
	t.Parallel()
	const bound = 150 << 20 // generous: the fixed runs peak around 30 MB
	p := newProj(t)
	wf := p.write("m.yaml", workflow("capture_memory_bounded.yaml"))
	r := p.vmMeasured("run", wf, "--run-id", "m")
	if r.maxRSS > bound {
		t.Errorf("smithvm peaked at %d MB for a 39 MB lines capture and a 44 MB json capture, want at most %d MB", r.maxRSS>>20, bound>>20)
	}
	want(t, r, 1)
	if lineWith(r, "ERROR: Step 'J' failed", "E_TOO_LARGE") == "" {
		t.Errorf("no E_TOO_LARGE line for J:\n%s", r.stderr)
	}
	if r.maxRSS == 0 {
		t.Skip("no peak memory from rusage on this system")
	}
	st := p.state("m")
	l := st.Steps["L"]
	if !l.Truncated || !l.LinesTruncated || l.SpillStdoutPath == "" {
		t.Errorf("L: truncated %v, lines_truncated %v, spill %q; want both true and the spill kept", l.Truncated, l.LinesTruncated, l.SpillStdoutPath)
	}
	if got := st.Steps["Use"].Output; got != "4|end" {
		t.Errorf("Use printed %q, want 4|end (a kept line and the json of the 2 MB stream)", got)
	}
	t.Logf("peak memory %d MB", r.maxRSS>>20)
}

// TestReplyMemoryBounded: a provider's 60 MB reply (claude's stream-json,
// printed by the helper in its place) reaches output_file whole, the
// state keeps its first MiB with truncated: true, and smithvm's peak
// memory stays far below the reply (31 MB; before: 369 MB, the reply
// held several times over).
func TestReplyMemoryBounded(t *testing.T) {
	t.Parallel()
	const bound = 150 << 20 // generous: the fixed run peaks around 40 MB
	p := newProj(t)
	wf := p.write("r.yaml", `version: "1.0"
name: r
steps:
  - name: Ask
    provider: claude
    command_override: ["HELPER", "claudereply:60000000"]
    prompt: "Say a lot."
    output_file: reply.txt
    on: {success: {goto: _end}, failure: {error: "Ask failed"}}
`)
	r := p.vmMeasured("run", wf, "--run-id", "r")
	want(t, r, 0)
	got, err := os.ReadFile(filepath.Join(p.ws, "artifacts", "Ask", "reply.txt"))
	if err != nil || len(got) < 60000000 || !strings.HasPrefix(string(got), "reply line 0000000: the model keeps talking\n") || !strings.HasSuffix(string(got), "\nEND OF REPLY") {
		t.Errorf("output_file: %d bytes, %v; want the whole 60 MB reply, decoded", len(got), err)
	}
	st := p.state("r").Steps["Ask"]
	if !st.Truncated || !strings.HasPrefix(st.Output, "reply line 0000000") {
		t.Errorf("Ask: truncated %v, output starts %.40q; want true and the reply's start", st.Truncated, st.Output)
	}
	if r.maxRSS == 0 {
		t.Skip("no peak memory from rusage on this system")
	}
	t.Logf("peak memory %d MB", r.maxRSS>>20)
	if r.maxRSS > bound {
		t.Errorf("smithvm peaked at %d MB for a 60 MB reply, want at most %d MB: the reply was held in memory", r.maxRSS>>20, bound>>20)
	}
}

// TestSecondInterrupt: a step whose process ignores SIGTERM gets the grace
// period after one Ctrl-C; a second Ctrl-C kills it at once, and smithvm
// exits 130 with the state saved (issue 8, point 11).
func TestSecondInterrupt(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	wf := p.write("i.yaml", workflow("second_interrupt.yaml"))
	run := p.start("run", wf, "--run-id", "i")
	pid := pidIn(t, filepath.Join(p.ws, "s.pid"))
	run.cmd.Process.Signal(os.Interrupt)
	waitFor(t, 10*time.Second, "the first interrupt to reach the step", func() bool {
		return strings.Contains(run.stderr.String(), "Step 'Stubborn' starting")
	})
	time.Sleep(200 * time.Millisecond)
	run.cmd.Process.Signal(os.Interrupt)
	select {
	case <-run.exited:
	case <-time.After(4 * time.Second):
		t.Fatalf("smithvm still runs 4 s after the second Ctrl-C (the 10 s grace was not cut short)")
	}
	if r := run.wait(t); r.code != 130 {
		t.Errorf("exit %d, want 130:\n%s", r.code, r.stderr)
	}
	if alive(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the step's process outlived smithvm")
	}
}

// TestCaptureFilesDoNotPileUp: a loop whose body has a large capture keeps
// one capture file for it, not one per iteration.
func TestCaptureFilesDoNotPileUp(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	wf := p.write("c.yaml", workflow("capture_files_do_not_pile_up.yaml"))
	want(t, p.vm("run", wf, "--run-id", "c"), 0)
	if got := p.state("c").Steps["Use"].Output; got != "d" {
		t.Errorf("Use printed %q, want the last iteration's last line d", got)
	}
	files, _ := filepath.Glob(filepath.Join(p.runRoot("c"), "logs", "Big-*-capture.json"))
	if len(files) != 1 {
		t.Errorf("capture files of Big: %v, want one", files)
	}
}
