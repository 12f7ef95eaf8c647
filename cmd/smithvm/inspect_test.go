package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"smith/isa"
	"smith/vm"
)

// workflowProject writes src as wf.yaml in a new folder, beside a BASE
// with its workspace, and returns both paths.
func workflowProject(t *testing.T, src string) (wf, base string) {
	t.Helper()
	dir := t.TempDir()
	base, wf = filepath.Join(dir, "base"), filepath.Join(dir, "wf.yaml")
	if err := os.WriteFile(wf, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(base, "workspace"), 0o755); err != nil {
		t.Fatal(err)
	}
	return wf, base
}

// TestStatusCompilesOnce: status compiles the run's workflow once for all
// the parts that read it (the step order, the kept outputs, a halted
// step's signals, the secrets to mask), not once for each: of a large
// workflow the compile is most of a status.
func TestStatusCompilesOnce(t *testing.T) {
	wf, base := workflowProject(t, `version: "1.0"
name: twice
steps:
  - name: A
    command: ["true"]
    output_file: a.txt
    on: {success: {goto: B}, failure: {error: "A failed"}}
  - name: B
    command: ["true"]
    on: {success: {end: true}, failure: {error: "B failed"}}
`)
	var out, errb bytes.Buffer
	if code := run([]string{"run", wf, "--base", base, "--run-id", "r1"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("run: exit %d: %s", code, errb.String())
	}
	compiles := 0
	defer func(old func(*env, *vm.State) *isa.Program) { loadProgram = old }(loadProgram)
	old := loadProgram
	loadProgram = func(e *env, st *vm.State) *isa.Program { compiles++; return old(e, st) }
	out.Reset()
	if code := run([]string{"status", "r1", "--base", base}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("status: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "A: ") || !strings.Contains(out.String(), "B ") {
		t.Errorf("status shows no kept output of A or no step B:\n%s", out.String())
	}
	if compiles != 1 {
		t.Errorf("status compiled the workflow %d times, want 1", compiles)
	}
}
