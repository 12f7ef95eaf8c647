package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"smith/cmd/smith-temporal/engine"
	"smith/vm"
)

// cutOffYAML: First is quick; Long marks that it started, then sleeps for
// 2 minutes (the workflow is ended on Temporal meanwhile).
var cutOffYAML = testWorkflow("cut_off.yaml")

// TestStatusOfCutOffStep: a run whose workflow is ended on Temporal while
// a step runs no longer shows that step running. Terminated, the memo
// still says the step runs: status and status --json show it interrupted,
// as smithvm status shows a step cut off by a stop or a crash
// (vm.State.Shown), and the table says the run is cut off. Cancelled, the
// run itself ends failed, with the step failed.
func TestStatusOfCutOffStep(t *testing.T) {
	for _, tt := range []struct {
		name string
		end  func(ctx context.Context, cl client.Client, id string) error
		long string // Long's status after the end
		cut  string // the cut-off line ("" when the run ended itself)
	}{
		// Terminated: the workflow ends at once, its memo says Long runs.
		{"terminated", func(ctx context.Context, cl client.Client, id string) error {
			return cl.TerminateWorkflow(ctx, id, "", "ended by the test")
		}, vm.StepInterrupted, "  cut off: its workflow is terminated on Temporal and nothing drives the run"},
		// Cancelled: the workflow takes the cancel as Long's failure and
		// the run fails (a failed workflow, its final state in the result).
		{"cancelled", func(ctx context.Context, cl client.Client, id string) error {
			return cl.CancelWorkflow(ctx, id, "")
		}, vm.StepFailed, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFleet(t)
			f.worker()
			cl := f.client()
			ctx := context.Background()
			id := "cut-" + tt.name
			file := write(t, filepath.Join(f.base, "cut_off.yaml"), cutOffYAML)
			if r := f.cli("run", file, "--run-id", id, "--detach"); r.code != 0 {
				t.Fatalf("run: %d %s", r.code, r.stderr)
			}
			waitFor(t, time.Minute, "Long to start", func() bool {
				_, err := os.Stat(filepath.Join(f.base, "long-started"))
				return err == nil
			})
			// The memo (what status reads of an ended run) says Long runs.
			waitFor(t, time.Minute, "the memo to show Long running", func() bool {
				d, err := cl.DescribeWorkflowExecution(ctx, id, "")
				if err != nil {
					return false
				}
				var b engine.Brief
				p := d.GetWorkflowExecutionInfo().GetMemo().GetFields()[engine.MemoBrief]
				return p != nil && json.Unmarshal(p.GetData(), &b) == nil && b.Steps["Long"].Status == vm.StepRunning
			})
			if r := f.cli("status", id); !strings.Contains(r.stdout, "running") {
				t.Fatalf("status while Long runs: %d %q %s, want it running", r.code, r.stdout, r.stderr)
			}
			if err := tt.end(ctx, cl, id); err != nil {
				t.Fatal(err)
			}
			waitFor(t, time.Minute, "the workflow to end", func() bool {
				d, err := cl.DescribeWorkflowExecution(ctx, id, "")
				return err == nil && d.GetWorkflowExecutionInfo().GetCloseTime() != nil
			})

			r := f.cli("status", id)
			if r.code != 0 {
				t.Fatalf("status: exit %d: %s", r.code, r.stderr)
			}
			var long string
			for _, line := range strings.Split(r.stdout, "\n") {
				if fs := strings.Fields(line); len(fs) >= 2 && fs[0] == "Long" {
					long = fs[1]
				}
			}
			if long != tt.long {
				t.Errorf("status shows Long %q, want %q:\n%s", long, tt.long, r.stdout)
			}
			if got := strings.Contains(r.stdout, "cut off:"); tt.cut == "" && got || tt.cut != "" && !strings.Contains(r.stdout, tt.cut) {
				t.Errorf("status =\n%s\nwant a cut-off line %q", r.stdout, tt.cut)
			}
			r = f.cli("status", id, "--json")
			if r.code != 0 {
				t.Fatalf("status --json: exit %d: %s", r.code, r.stderr)
			}
			st := parseState(t, r.stdout)
			if s := st.Steps["Long"]; s == nil || s.Status != tt.long {
				t.Errorf("status --json shows Long %+v, want status %q", s, tt.long)
			}
			for name, s := range st.Steps {
				if s != nil && s.Status == vm.StepRunning {
					t.Errorf("status --json shows step %s running after its workflow ended", name)
				}
			}
		})
	}
}
