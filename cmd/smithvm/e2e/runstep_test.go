package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunStepEdges: run-step refuses a step inside a loop before creating a
// run; --context takes dotted keys as paths (a.b=v satisfies ${context.a.b}).
func TestRunStepEdges(t *testing.T) {
	t.Parallel()
	flow := workflow("run_step_edges.yaml")
	t.Run("a step inside a loop", func(t *testing.T) {
		t.Parallel()
		p := newProj(t)
		wf := p.write("edges.yaml", flow)
		r := p.vm("run-step", wf, "Inner")
		want(t, r, 2)
		if !strings.Contains(r.stderr, "step 'Inner' is inside the for_each 'Loop'") {
			t.Errorf("stderr lacks the reason:\n%s", r.stderr)
		}
		if runs, _ := os.ReadDir(filepath.Join(p.base, ".orchestrator", "runs")); len(runs) != 0 {
			t.Errorf("run-step of a loop step left %d run(s) behind", len(runs))
		}
	})
	t.Run("a failed run-step resumes as one step", func(t *testing.T) {
		t.Parallel()
		p := newProj(t)
		wf := p.write("gate.yaml", workflow("run_step_edges_gate.yaml"))
		r := p.vm("run-step", wf, "Gate")
		want(t, r, 1)
		if !strings.Contains(r.stderr, "failed: step 'Gate' ended with SIGNAL:FAILURE") || strings.Contains(r.stderr, "ERROR: step 'Gate'") {
			t.Errorf("stderr: want the run's failure with the step's signal and no error: action line:\n%s", r.stderr)
		}
		want(t, p.vm("resume", r.runID()), 0)
		if g, n := p.count("gate.cnt"), p.count("next.cnt"); g != 2 || n != 0 {
			t.Errorf("Gate ran %d times, Next %d; want 2 and 0 (a resumed run-step run stays one step)", g, n)
		}
	})
	t.Run("dotted --context", func(t *testing.T) {
		t.Parallel()
		p := newProj(t)
		wf := p.write("edges.yaml", flow)
		r := p.vm("run-step", wf, "Report", "--context", "result.status=built")
		want(t, r, 0)
		if got := p.read("workspace/artifacts/Report/report.txt"); got != "status built\n" {
			t.Errorf("report.txt = %q, want %q", got, "status built\n")
		}
		// The same key satisfies the pre-run check of a whole run.
		r = p.vm("run", wf, "--context", "result.status=ok")
		want(t, r, 0)

		// status lists the steps in the workflow's order, loop bodies indented.
		r = p.vm("status", r.runID())
		want(t, r, 0)
		var order []string
		for _, l := range strings.Split(r.stdout, "\n") {
			for _, name := range []string{"Loop ", "  Inner ", "Report "} {
				if strings.HasPrefix(l, name) {
					order = append(order, strings.TrimSpace(name))
				}
			}
		}
		if got := strings.Join(order, ","); got != "Loop,Inner,Report" {
			t.Errorf("status step order = %s, want Loop,Inner,Report:\n%s", got, r.stdout)
		}
	})
}
