package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"smith/vm"
)

// The acceptance-style workflows run on both engines.

// loopsYAML: a for_each loop, a retried step and a failure followed.
var loopsYAML = testWorkflow("loops.yaml")

// parallelYAML: a for_each with parallel: 3 over five items, then a
// parallel step of two branches, one with two steps.
var parallelYAML = testWorkflow("parallel.yaml")

// callManifest: CALL with return_to, a pure callee, RETURN.
var callManifest = testWorkflow("call_manifest.json")

// haltManifest: a failing check halts; resume re-runs it (it halts again)
// or takes --signal's transition.
var haltManifest = testWorkflow("halt_manifest.json")

// A parity case: a workflow (written into BASE, or copied from a
// directory), then resumes (each: --signal, --note) after halts.
type parityCase struct {
	name    string
	file    string            // path relative to BASE
	src     string            // its content, or
	copyDir string            // a repository directory copied as BASE
	resumes [][2]string       // --signal, --note of each resume
	codes   []int             // expected exit codes: run, then each resume
	context map[string]string // --context
	flags   []string          // run's flags on both engines
	tflags  []string          // run's flags on Temporal only
	// fromRepo is a workflow file of the repository copied to file.
	fromRepo string
	// gitWorkspace is a repository directory copied to BASE/workspace
	// and committed there as a git repository (isolation: git-worktree).
	gitWorkspace string
	// goEnv passes the Go toolchain's caches to the local run (the
	// workflow runs go test; the workers have the test's environment).
	goEnv bool
	// volatile are steps whose output differs between any two runs (a
	// go test's timing or "(cached)"): their output is not compared.
	volatile []string
	// ownBase runs the case on a fleet of its own (one worker, its own
	// BASE): its agents' inboxes must not see another case's messages.
	ownBase bool
}

var parityCases = []parityCase{
	{name: "demo", file: "demo.yaml", copyDir: "examples/demo", codes: []int{0}},
	{name: "feature", file: "workflows.json", copyDir: "examples/feature", resumes: [][2]string{{"SIGNAL:APPROVED", "lgtm"}}, codes: []int{4, 0}},
	{name: "loops", file: "loops.yaml", src: loopsYAML, codes: []int{0}},
	{name: "call", file: "workflows.json", src: callManifest, codes: []int{0}},
	{name: "halt", file: "workflows.json", src: haltManifest, resumes: [][2]string{{"", "try again"}, {"SIGNAL:APPROVED", "ship it"}}, codes: []int{4, 4, 0}},
	{name: "parallel", file: "par.yaml", src: parallelYAML, codes: []int{0}},
	// --context files.0=z makes files an object: the loop fails, on both.
	{name: "context-fails", file: "loops.yaml", src: loopsYAML, context: map[string]string{"files.0": "z"}, codes: []int{1}},
	// The team: messages between agents, two engineers in parallel
	// worktrees merged at the join, go test, a halt approved by resume.
	// Last: it makes the fleet's WORKSPACE a git repository.
	{name: "team", file: "team.yaml", fromRepo: "examples/team/team.yaml", gitWorkspace: "examples/team/project", goEnv: true,
		resumes: [][2]string{{"SIGNAL:APPROVED", ""}}, codes: []int{4, 0}, volatile: []string{"Test"}},
	// The other examples and the cookbook's recipes.
	{name: "agents", file: "agents.yaml", copyDir: "examples/agents", codes: []int{0}, ownBase: true},
	{name: "cookbook-conditional", file: "c.yaml", fromRepo: "examples/cookbook/conditional-goto.yaml", context: map[string]string{"size": "500"}, codes: []int{0}, ownBase: true},
	{name: "cookbook-review-loop", file: "review-loop.yaml", copyDir: "examples/cookbook/review-loop", codes: []int{0}, ownBase: true},
	{name: "cookbook-approval", file: "approval.json", fromRepo: "examples/cookbook/approval.json", resumes: [][2]string{{"SIGNAL:APPROVED", "ship it"}}, codes: []int{4, 0}, ownBase: true},
	{name: "cookbook-messaging", file: "messaging.yaml", fromRepo: "examples/cookbook/messaging.yaml", codes: []int{0}, ownBase: true},
	{name: "cookbook-parallel", file: "parallel.yaml", fromRepo: "examples/cookbook/parallel.yaml", codes: []int{0}, ownBase: true},
}

var (
	smithvmOnce sync.Once
	smithvmPath string
	smithvmErr  error
)

// smithvm builds the local engine once per test binary.
func smithvm(t testing.TB) string {
	t.Helper()
	smithvmOnce.Do(func() {
		dir, err := os.MkdirTemp("", "smithvm-")
		if err != nil {
			smithvmErr = err
			return
		}
		smithvmPath = filepath.Join(dir, "smithvm")
		cmd := exec.Command("go", "build", "-o", smithvmPath, "./cmd/smithvm")
		cmd.Dir = repo(t, ".")
		if out, err := cmd.CombinedOutput(); err != nil {
			smithvmErr = err
			t.Logf("%s", out)
		}
	})
	if smithvmErr != nil {
		t.Fatalf("build smithvm: %v", smithvmErr)
	}
	return smithvmPath
}

// prepare lays out a case's BASE and returns the workflow's path in it.
func (c parityCase) prepare(t *testing.T, base string) string {
	t.Helper()
	if c.gitWorkspace != "" {
		gitWorkspace(t, repo(t, c.gitWorkspace), filepath.Join(base, "workspace"))
	}
	if c.fromRepo != "" {
		b, err := os.ReadFile(repo(t, c.fromRepo))
		if err != nil {
			t.Fatal(err)
		}
		return write(t, filepath.Join(base, c.file), string(b))
	}
	if c.copyDir != "" {
		cmd := exec.Command("cp", "-r", repo(t, c.copyDir)+"/.", base)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("copy %s: %v %s", c.copyDir, err, out)
		}
		return filepath.Join(base, c.file)
	}
	return write(t, filepath.Join(base, c.file), c.src)
}

func (c parityCase) contextFlags() []string {
	var fl []string
	for k, v := range c.context {
		fl = append(fl, "--context", k+"="+v)
	}
	return fl
}

// localRun runs the case on the local engine: the exit codes and the
// final state.
func (c parityCase) localRun(t *testing.T, runID string) ([]int, *vm.State) {
	t.Helper()
	base := t.TempDir()
	file := c.prepare(t, base)
	bin := smithvm(t)
	var codes []int
	var last string
	do := func(args ...string) {
		cmd := exec.Command(bin, args...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + base}
		if c.goEnv {
			cmd.Env = append(cmd.Env, goEnv(t)...)
		}
		out, _ := cmd.Output()
		codes = append(codes, cmd.ProcessState.ExitCode())
		last = string(out)
	}
	do(append(append([]string{"run", file, "--base", base, "--run-id", runID, "--json"}, c.contextFlags()...), c.flags...)...)
	for _, r := range c.resumes {
		args := []string{"resume", runID, "--base", base, "--json"}
		if r[0] != "" {
			args = append(args, "--signal", r[0])
		}
		if r[1] != "" {
			args = append(args, "--note", r[1])
		}
		do(args...)
	}
	return codes, parseState(t, last)
}

// temporalRun runs the case on Temporal, with the fleet's workers: the
// exit codes, the final state and the last command's stderr.
func (c parityCase) temporalRun(t *testing.T, f *fleet, runID string) ([]int, *vm.State, string) {
	t.Helper()
	file := c.prepare(t, f.base)
	var codes []int
	r := f.cli(append(append(append([]string{"run", file, "--run-id", runID, "--json"}, c.contextFlags()...), c.flags...), c.tflags...)...)
	codes = append(codes, r.code)
	last := r
	for _, rs := range c.resumes {
		args := []string{"resume", runID, "--json"}
		if rs[0] != "" {
			args = append(args, "--signal", rs[0])
		}
		if rs[1] != "" {
			args = append(args, "--note", rs[1])
		}
		r = f.cli(args...)
		codes = append(codes, r.code)
		if r.stdout != "" {
			last = r
		} else {
			t.Logf("resume: %s", r.stderr)
		}
	}
	if last.stdout == "" {
		t.Fatalf("no state printed: %s", last.stderr)
	}
	return codes, parseState(t, last.stdout), r.stderr
}

// TestParity runs the examples and the acceptance workflows on the local
// engine and on Temporal and compares exit codes, step results and the
// payload.
func TestParity(t *testing.T) {
	f := newFleet(t)
	f.worker()
	f.worker()
	for _, c := range parityCases {
		t.Run(c.name, func(t *testing.T) {
			id := "parity-" + c.name
			lc, ls := c.localRun(t, id)
			f2 := *f
			f2.t = t
			fl := &f2
			if c.ownBase {
				fl = newFleet(t) // stopped when the subtest ends
				fl.worker()
			}
			tc, ts, _ := c.temporalRun(t, fl, id)
			if !reflect.DeepEqual(lc, c.codes) {
				t.Errorf("local exit codes %v, want %v", lc, c.codes)
			}
			if !reflect.DeepEqual(tc, lc) {
				t.Errorf("exit codes: Temporal %v, local %v", tc, lc)
			}
			for _, st := range []*vm.State{ls, ts} {
				for _, n := range c.volatile {
					if r := st.Steps[n]; r != nil {
						r.Output = ""
					}
				}
			}
			compareStates(t, ls, ts)
			if c.gitWorkspace != "" {
				// The threads' branches were merged into the run's, on the
				// host that holds its worktree (goodbye's by fast-forward).
				log := gitIn(t, filepath.Join(f.base, "workspace"), "log", "--format=%s", "smith/"+id)
				for _, want := range []string{"smith: WriteGoodbye (run " + id, "smith: WriteHello (run " + id, "smith: join Build [hello] (run " + id + ")"} {
					if !strings.Contains(log, want) {
						t.Errorf("the run's branch on Temporal lacks %q:\n%s", want, log)
					}
				}
			}
		})
	}
}

// compareStates compares what a run produced: status, each step's result
// and the payload (ids and times aside).
func compareStates(t *testing.T, local, tmp *vm.State) {
	t.Helper()
	if local.Status != tmp.Status || local.CurrentStep != tmp.CurrentStep {
		t.Errorf("status: Temporal %s at %s, local %s at %s", tmp.Status, tmp.CurrentStep, local.Status, local.CurrentStep)
	}
	if !reflect.DeepEqual(stepsOf(local), stepsOf(tmp)) {
		t.Errorf("steps differ:\nlocal    %s\ntemporal %s", js(stepsOf(local)), js(stepsOf(tmp)))
	}
	if !reflect.DeepEqual(payloadOf(local), payloadOf(tmp)) {
		t.Errorf("payload differs:\nlocal    %s\ntemporal %s", js(payloadOf(local)), js(payloadOf(tmp)))
	}
	if !reflect.DeepEqual(local.Context, tmp.Context) {
		t.Errorf("context: Temporal %v, local %v", tmp.Context, local.Context)
	}
}

type stepView struct {
	Status, Output, Signal string
	ExitCode, Attempts     int
	Iterations             int
	Lines                  []string
	JSON                   any
	Error                  *vm.StepError
}

func stepsOf(st *vm.State) map[string]stepView {
	m := map[string]stepView{}
	for n, r := range st.Steps {
		m[n] = stepView{r.Status, r.Output, r.Signal, r.ExitCode, r.Attempts, r.IterationsTotal, r.Lines, r.JSON, r.Error}
	}
	return m
}

func payloadOf(st *vm.State) []string {
	var p []string
	for _, s := range st.Payload {
		p = append(p, s.Type+": "+s.Content)
	}
	return p
}

func js(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// TestStatusQueryAndDetach: run --detach returns the run id at once;
// status is a query over the state.
func TestStatusQueryAndDetach(t *testing.T) {
	f := newFleet(t)
	f.worker()
	file := write(t, filepath.Join(f.base, "h.json"), haltManifest)
	r := f.cli("run", file, "--run-id", "st1", "--detach")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "st1" {
		t.Fatalf("run --detach: %d %q %s", r.code, r.stdout, r.stderr)
	}
	waitFor(t, 60*time.Second, "the halt", func() bool {
		return runStatus(f, "st1") == "halted"
	})
	if r := f.cli("run", file, "--run-id", "st1", "--detach"); r.code != 2 || !strings.Contains(r.stderr, "smith-temporal run: E_USAGE: run 'st1' already exists\n") {
		t.Errorf("run --run-id of a halted run: %d %q %s; want exit 2, already exists", r.code, r.stdout, r.stderr)
	}
	r = f.cli("status", "st1")
	if r.code != 0 || !strings.Contains(r.stdout, "run st1: halted") || !strings.Contains(r.stdout, "Block:Check") {
		t.Errorf("status: %d %q %s", r.code, r.stdout, r.stderr)
	}
	if r := f.cli("status", "nope"); r.code != 2 || r.stderr != "smith-temporal status: E_STATE_NOT_FOUND: no run nope on Temporal\n" {
		t.Errorf("status of an unknown run: %d %s", r.code, r.stderr)
	}
	if r := f.cli("resume", "st1", "--signal", "SIGNAL:APPROVED"); r.code != 0 {
		t.Errorf("resume: %d %s", r.code, r.stderr)
	}
	if r := f.cli("resume", "st1"); r.code != 0 || !strings.Contains(r.stderr, "nothing to do") {
		t.Errorf("resume of a completed run: %d %s", r.code, r.stderr)
	}
	if r := f.cli("run", file, "--run-id", "st1", "--detach"); r.code != 2 || !strings.Contains(r.stderr, "already exists") {
		t.Errorf("run --run-id of a completed run: %d %q %s; want exit 2, already exists", r.code, r.stdout, r.stderr)
	}
}

var _ = context.Background
var _ client.Client

// budgetYAML: a 40-iteration loop, more than a --max-steps of 25 allows.
var budgetYAML = testWorkflow("budget.yaml")

// TestStepBudgetAcrossContinueAsNew: --max-steps counts every step of the
// run, not of each execution: a run that continues as new every few steps
// (--history-limit 12: the cheap steps are local activities, a marker
// each) fails with E_STEP_BUDGET where smithvm does, in the
// same state.
func TestStepBudgetAcrossContinueAsNew(t *testing.T) {
	f := newFleet(t)
	f.worker()
	c := parityCase{name: "budget", file: "budget.yaml", src: budgetYAML, codes: []int{1},
		flags: []string{"--max-steps", "25"}, tflags: []string{"--history-limit", "12"}}
	lc, ls := c.localRun(t, "budget1")
	tc, ts, stderr := c.temporalRun(t, f, "budget1")
	if !reflect.DeepEqual(lc, c.codes) || !reflect.DeepEqual(tc, lc) {
		t.Errorf("exit codes: Temporal %v, local %v, want %v", tc, lc, c.codes)
	}
	compareStates(t, ls, ts)
	if ts.Status != vm.StatusFailed || !strings.Contains(stderr, "E_STEP_BUDGET: step budget exceeded: more than 25 steps") {
		t.Errorf("Temporal: status %s, stderr %s; want failed with E_STEP_BUDGET", ts.Status, stderr)
	}
	renewed := 0
	for _, ev := range history(t, f.client(), "budget1") {
		if ev.GetWorkflowExecutionContinuedAsNewEventAttributes() != nil {
			renewed++
		}
	}
	if renewed < 2 {
		t.Errorf("the run continued as new %d times, want several (--history-limit 12)", renewed)
	}
}

// stepLines are the console's step lines of a run's stderr, durations
// cut, sorted (threads finish in any order).
func stepLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if !strings.Contains(l, ": Step '") {
			continue
		}
		if i := strings.LastIndex(l, " in "); i > 0 && strings.HasSuffix(l, "s.") {
			l = l[:i]
		}
		out = append(out, l)
	}
	slices.Sort(out)
	return out
}

// TestConsoleProgressLines: smith-temporal run prints the run's step lines
// as smithvm run does (from the progress query), for a loop with a retry
// and for parallel threads.
func TestConsoleProgressLines(t *testing.T) {
	f := newFleet(t)
	f.worker()
	for _, c := range []parityCase{
		{name: "loops", file: "loops.yaml", src: loopsYAML},
		{name: "parallel", file: "par.yaml", src: parallelYAML},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			file := c.prepare(t, base)
			cmd := exec.Command(smithvm(t), "run", file, "--base", base, "--run-id", "console-"+c.name)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + base}
			var lerr strings.Builder
			cmd.Stderr = &lerr
			if err := cmd.Run(); err != nil {
				t.Fatalf("smithvm: %v\n%s", err, lerr.String())
			}
			r := f.cli("run", c.prepare(t, f.base), "--run-id", "console-"+c.name)
			if r.code != 0 {
				t.Fatalf("run: %d %s", r.code, r.stderr)
			}
			want, got := stepLines(lerr.String()), stepLines(r.stderr)
			if len(want) == 0 || !slices.Equal(want, got) {
				t.Errorf("step lines differ:\nsmithvm\n  %s\nsmith-temporal\n  %s", strings.Join(want, "\n  "), strings.Join(got, "\n  "))
			}
		})
	}
}

// testWorkflow returns testdata/workflows/NAME, a workflow of these tests.
func testWorkflow(name string) string {
	b, err := os.ReadFile(filepath.Join("testdata", "workflows", name))
	if err != nil {
		panic(err)
	}
	return string(b)
}
