package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"smith/cmd/smith-temporal/engine"
)

// failYAML: a step that fails, with no transition for it.
var failYAML = testWorkflow("fail.yaml")

// TestTemporalShowsSmithTruth: a failed Smith run is a FAILED workflow
// whose failure carries the reason; a halted run says so (and its current
// step) in its memo; every step activity is labelled with its step and its
// id's counter goes on after a resume; status and resume work with no
// worker running, and the resume is taken by the next worker.
func TestTemporalShowsSmithTruth(t *testing.T) {
	f := newFleet(t)
	w := f.worker()
	cl := f.client()
	ctx := context.Background()

	fail := write(t, filepath.Join(f.base, "fail.yaml"), failYAML)
	if r := f.cli("run", fail, "--run-id", "truth-fail"); r.code != 1 || !strings.Contains(r.stderr, "ERROR: E_STEP_FAILED") {
		t.Errorf("run of a failing workflow: exit %d, want 1 with its ERROR line: %s", r.code, r.stderr)
	}
	d, err := cl.DescribeWorkflowExecution(ctx, "truth-fail", "")
	if err != nil {
		t.Fatal(err)
	}
	if st := d.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_FAILED {
		t.Errorf("the failed run's workflow is %v, want Failed", st)
	}
	evs := history(t, cl, "truth-fail")
	msg := evs[len(evs)-1].GetWorkflowExecutionFailedEventAttributes().GetFailure().GetMessage()
	if !strings.HasPrefix(msg, "E_STEP_FAILED: ") || !strings.Contains(msg, "Build") {
		t.Errorf("the failed workflow's reason = %q, want E_STEP_FAILED naming step Build", msg)
	}
	if r := f.cli("status", "truth-fail"); r.code != 0 || !strings.Contains(r.stdout, "run truth-fail: failed") {
		t.Errorf("status of the failed run: %d %q %s", r.code, r.stdout, r.stderr)
	}

	halt := write(t, filepath.Join(f.base, "h.json"), haltManifest)
	if r := f.cli("run", halt, "--run-id", "truth-halt"); r.code != 4 {
		t.Fatalf("run: exit %d, want 4 (halted): %s", r.code, r.stderr)
	}
	// No worker from here on: what follows reads the server alone.
	w.Process.Signal(syscall.SIGKILL)
	w.Process.Wait()
	d, err = cl.DescribeWorkflowExecution(ctx, "truth-halt", "")
	if err != nil {
		t.Fatal(err)
	}
	var b engine.Brief
	if p := d.GetWorkflowExecutionInfo().GetMemo().GetFields()[engine.MemoBrief]; p == nil || json.Unmarshal(p.GetData(), &b) != nil ||
		b.Status != "halted" || b.CurrentStep != "Block:Check" {
		t.Errorf("memo %q of the halted run = %+v, want status halted, current step Block:Check", engine.MemoBrief, b)
	}
	start := time.Now()
	r := f.cli("status", "truth-halt")
	if r.code != 0 || !strings.Contains(r.stdout, "run truth-halt: halted") || !strings.Contains(r.stdout, "current step Block:Check") ||
		!strings.Contains(r.stdout, "Block:Check") {
		t.Errorf("status with no worker: %d %q %s", r.code, r.stdout, r.stderr)
	}
	if r := f.cli("status", "truth-halt", "--json"); r.code != 0 || parseState(t, r.stdout).HaltedBlock == "" {
		t.Errorf("status --json with no worker: %d %q %s, want the halted state", r.code, r.stdout, r.stderr)
	}
	if r := f.cli("resume", "truth-halt", "--signal", "SIGNAL:APPROVED", "--detach"); r.code != 0 {
		t.Fatalf("resume with no worker: exit %d: %s", r.code, r.stderr)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("status and resume with no worker took %v, want no wait for a worker", d)
	}
	f.worker()
	waitFor(t, 2*time.Minute, "the next worker to take the resume", func() bool {
		return runStatus(f, "truth-halt") == "completed"
	})
	var ids, summaries []string
	for _, ev := range history(t, cl, "truth-halt") {
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == engine.StepActivity {
			ids = append(ids, a.GetActivityId())
			var s string
			json.Unmarshal(ev.GetUserMetadata().GetSummary().GetData(), &s)
			summaries = append(summaries, s)
		}
	}
	if want := []string{"1:Block:Check", "2:Block:Publish"}; !slices.Equal(ids, want) {
		t.Errorf("step activity ids = %q, want %q (the counter goes on after the resume)", ids, want)
	}
	if want := []string{"step Block:Check", "step Block:Publish"}; !slices.Equal(summaries, want) {
		t.Errorf("step activity summaries = %q, want %q", summaries, want)
	}
}
