package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"smith/vm"
)

// resumeFailedYAML: First writes a file, Flaky fails, Last reads First's
// file.
var resumeFailedYAML = testWorkflow("resume_failed.yaml")

// TestResumeFailedRun: resume of a failed run, as smithvm's: the workflow
// is recompiled (Flaky fixed), First (completed) does not run again, the
// run goes on from Flaky and completes; the failed workflow execution
// stays in Temporal's history and a new one of the same workflow id
// continues the run (a resume that fails again can be resumed again).
// --signal on a failed run is E_USAGE, as smithvm's.
func TestResumeFailedRun(t *testing.T) {
	f := newFleet(t)
	f.worker()
	file := write(t, filepath.Join(f.base, "resume_failed.yaml"), resumeFailedYAML)
	if r := f.cli("run", file, "--run-id", "rf1"); r.code != 1 || !strings.Contains(r.stderr, "E_STEP_FAILED") {
		t.Fatalf("run: exit %d, want 1 (Flaky fails): %s", r.code, r.stderr)
	}
	if r := f.cli("resume", "rf1", "--signal", "SIGNAL:X"); r.code != 2 || !strings.Contains(r.stderr, "smith-temporal resume: E_USAGE: run rf1 is failed, not halted: --signal answers a halted run; resume it without --signal\n") {
		t.Errorf("resume --signal of a failed run: exit %d, want 2 with E_USAGE: %s", r.code, r.stderr)
	}
	// Still broken: the resume fails again at Flaky, and can be resumed again.
	if r := f.cli("resume", "rf1"); r.code != 1 || !strings.Contains(r.stderr, "E_STEP_FAILED") {
		t.Fatalf("resume, Flaky still broken: exit %d, want 1: %s", r.code, r.stderr)
	}
	write(t, file, strings.Replace(resumeFailedYAML, `echo broken >&2; exit 3`, `echo fixed`, 1))
	r := f.cli("resume", "rf1", "--json")
	if r.code != 0 {
		t.Fatalf("resume of the failed run: exit %d, want 0: %s", r.code, r.stderr)
	}
	st := parseState(t, r.stdout)
	if st.Status != vm.StatusCompleted {
		t.Errorf("resumed run is %s, want completed", st.Status)
	}
	for name, want := range map[string]string{"Flaky": "fixed", "Last": "ran\nlast"} {
		if got := st.Steps[name].Output; got != want {
			t.Errorf("%s's output = %q, want %q", name, got, want)
		}
	}
	b, err := os.ReadFile(filepath.Join(f.base, "workspace", "first-ran.txt"))
	if err != nil || string(b) != "ran\n" {
		t.Errorf("first-ran.txt = %q, %v; want First run once", b, err)
	}
	if !strings.Contains(r.stderr, "Flaky") || strings.Contains(r.stderr, "broken") {
		t.Errorf("resume's console: want Flaky's new lines only, got:\n%s", r.stderr)
	}
	if s := runStatus(f, "rf1"); s != vm.StatusCompleted {
		t.Errorf("status after the resume: %q, want completed", s)
	}
	if r := f.cli("resume", "rf1"); r.code != 0 || !strings.Contains(r.stderr, "nothing to do") {
		t.Errorf("resume of the completed run: exit %d: %s", r.code, r.stderr)
	}
}
