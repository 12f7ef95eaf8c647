package vm_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"smith/compiler"
	"smith/vm"
	"smith/workers"
	"smith/workers/confine"
)

// TestCrashedProviderCallRepeats: the machine is killed after a mock
// provider step ran (its reply consumed) but before its result was durable;
// the resumed run repeats the step and gets the same reply, so it matches an
// uninterrupted run.
func TestCrashedProviderCallRepeats(t *testing.T) {
	base := t.TempDir()
	dirs, err := confine.New(base)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dirs.Workspace, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dirs.Workspace, "s.yaml"), []byte("- reply: first\n- reply: second\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := []byte(`version: "1.0"
name: crash
steps:
  - name: Ask
    provider: mock
    provider_params: {script: s.yaml}
    prompt: "question"
    on: {success: {goto: _end}, failure: {error: "ask failed"}}
`)
	res, ds := compiler.Compile("crash.yaml", src, compiler.Options{})
	if res.Prog == nil {
		t.Fatal(ds.Error())
	}
	runRoot := filepath.Join(base, ".orchestrator", "runs", "r1")
	if err := os.MkdirAll(runRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	reg := workers.NewRegistry(func(string) (string, bool) { return "", false })
	withDirs := func(c *vm.Config) { c.Dirs, c.RunRoot, c.Registry = dirs, runRoot, reg }

	// Seq 1 starts the run, seq 2 starts Ask; the checkpoint of Ask's result
	// (seq 3) never becomes durable.
	crashed := &rec{killAt: 3}
	cfg := crashed.config(nil)
	withDirs(&cfg)
	m, err := vm.New(res.Prog, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Run(context.Background()); err == nil {
		t.Fatal("Run() with a failing checkpoint = nil error, want the kill")
	}
	st := crashed.rebuilt(t)
	if r := st.Steps["Ask"]; r == nil || r.Status != vm.StepRunning {
		t.Fatalf("durable state of Ask = %+v, want running (cut off by the crash)", r)
	}

	again := &rec{}
	cfg = again.config(nil)
	withDirs(&cfg)
	m, err = vm.New(res.Prog, cfg)
	if err != nil {
		t.Fatal(err)
	}
	final, err := m.Resume(context.Background(), st, vm.ResumeOptions{})
	if err != nil {
		t.Fatalf("Resume() = %v", err)
	}
	if got := final.Steps["Ask"].Output; got != "first" {
		t.Errorf("Ask after the crash and resume replied %q, want %q (the reply of the cut-off call)", got, "first")
	}
}
