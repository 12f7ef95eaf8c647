package engine

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"smith/compiler"
	"smith/source"
	"smith/vm"
	"smith/workers/confine"
)

// compile compiles src (a YAML workflow or a manifest, by name) into
// bytecode.
func compile(t *testing.T, name, src string) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p, ds := compiler.LoadProgram(path, compiler.Options{})
	if p == nil || ds.ExitStatus() != 0 {
		t.Fatalf("compile: %v", ds)
	}
	b, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newEnv is the SDK's in-memory test environment with Smith registered,
// steps run in this process under a fresh BASE.
func newEnv(t *testing.T, lookup func(string) (string, bool)) (*testsuite.TestWorkflowEnvironment, string) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	// The test environment counts a step's activity in the workflow's
	// time between yields: on a loaded machine a command step can pass
	// the default 1 s deadlock detection.
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	base := t.TempDir()
	dirs, err := confine.New(base)
	if err != nil {
		t.Fatal(err)
	}
	if lookup == nil {
		lookup = func(n string) (string, bool) {
			if n == "PATH" {
				return os.LookupEnv(n)
			}
			return "", false
		}
	}
	Register(env, &Workflows{Dirs: dirs}, &Activities{Base: base, Lookup: lookup})
	return env, base
}

var loopYAML = testWorkflow("loop.yaml")

func TestWorkflowRunsTheProgram(t *testing.T) {
	env, _ := newEnv(t, nil)
	env.ExecuteWorkflow(WorkflowName, Input{RunID: "r1", Program: compile(t, "loops.yaml", loopYAML)})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("workflow: completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	var out Output
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if out.ExitCode != 0 || out.State.Status != vm.StatusCompleted {
		t.Fatalf("exit %d status %s: %s", out.ExitCode, out.State.Status, out.Message)
	}
	if got := out.State.Steps["Last"].Output; got != "prep|1" {
		t.Errorf("Last output = %q, want prep|1", got)
	}
	if got := out.State.Steps["Flaky"].Attempts; got != 2 {
		t.Errorf("Flaky attempts = %d, want 2 (retries run inside the step activity)", got)
	}
	if got := out.State.Steps["Each"].IterationsTotal; got != 3 {
		t.Errorf("Each iterations = %d, want 3", got)
	}
}

var haltJSON = testWorkflow("halt.json")

func TestHaltWaitsForTheResumeSignal(t *testing.T) {
	env, _ := newEnv(t, nil)
	var halted *vm.State
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(StatusQuery)
		if err != nil {
			t.Errorf("query: %v", err)
		}
		if err := v.Get(&halted); err != nil {
			t.Errorf("query result: %v", err)
		}
		env.SignalWorkflow(ResumeSignal, ResumeRequest{Signal: "SIGNAL:APPROVED", Note: "lgtm"})
	}, time.Hour)
	env.ExecuteWorkflow(WorkflowName, Input{RunID: "h1", Program: compile(t, "workflows.json", haltJSON)})
	if halted == nil || halted.Status != vm.StatusHalted || halted.CurrentStep != "Block:Check" {
		t.Fatalf("status query while halted = %+v", halted)
	}
	var out Output
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if out.ExitCode != 0 || out.State.Steps["Block:Publish"].Output != "published" {
		t.Fatalf("after resume: exit %d, %s", out.ExitCode, out.Message)
	}
	var note bool
	for _, s := range out.State.Payload {
		note = note || (s.Type == "USER_NOTE" && s.Content == "lgtm")
	}
	if !note {
		t.Errorf("payload lacks the USER_NOTE: %+v", out.State.Payload)
	}
}

func TestSecretsStayOutOfTheWorkflow(t *testing.T) {
	const secret = "s3cr3t-value"
	env, _ := newEnv(t, func(n string) (string, bool) {
		switch n {
		case "TOKEN":
			return secret, true
		case "PATH":
			return os.LookupEnv(n)
		}
		return "", false
	})
	src := testWorkflow("secrets_stay_out_of_the_workflow.yaml")
	var inputs []string
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		if info.ActivityType.Name != StepActivity {
			return
		}
		var wr WireRequest
		if err := args.Get(&wr); err != nil {
			t.Errorf("step input: %v", err)
		}
		b, _ := json.Marshal(wr)
		inputs = append(inputs, string(b))
	})
	env.ExecuteWorkflow(WorkflowName, Input{RunID: "s1", Program: compile(t, "s.yaml", src)})
	var out Output
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if out.ExitCode != 0 {
		t.Fatalf("exit %d: %s", out.ExitCode, out.Message)
	}
	if got := out.State.Steps["Leak"].Output; got != "token=***" {
		t.Errorf("output = %q, want the secret masked", got)
	}
	if len(inputs) != 1 {
		t.Fatalf("%d step activities, want 1", len(inputs))
	}
	if strings.Contains(inputs[0], secret) || !strings.Contains(inputs[0], Placeholder("TOKEN")) {
		t.Errorf("the step's input (history) holds the secret, or no placeholder: %s", inputs[0])
	}
}

// TestFileConditionsAreActivities: file_exists is answered by the Files
// activity (a local one) in the worker's BASE, not by the workflow code.
func TestFileConditionsAreActivities(t *testing.T) {
	env, base := newEnv(t, nil)
	if err := os.MkdirAll(filepath.Join(base, "workspace"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "workspace", "here.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var asked []string
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		if info.ActivityType.Name == FilesActivity {
			var in FilesInput
			args.Get(&in)
			asked = append(asked, in.Op+" "+in.Rel)
		}
	})
	// Local activities (local.go) since the smith-truth version.
	env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, args []any) {
		if info.ActivityType.Name == FilesActivity && len(args) == 1 {
			if in, ok := args[0].(FilesInput); ok {
				asked = append(asked, in.Op+" "+in.Rel)
			}
		}
	})
	src := testWorkflow("file_conditions_are_activities.yaml")
	env.ExecuteWorkflow(WorkflowName, Input{RunID: "f1", Program: compile(t, "f.yaml", src)})
	var out Output
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if out.State.Steps["Here"].Status != vm.StepCompleted || out.State.Steps["Gone"].Status != vm.StepSkipped {
		t.Errorf("Here %s, Gone %s; want completed, skipped", out.State.Steps["Here"].Status, out.State.Steps["Gone"].Status)
	}
	if len(asked) != 2 || asked[0] != "exists here.txt" || asked[1] != "exists gone.txt" {
		t.Errorf("Files activity asked %v", asked)
	}
}

var parYAML = testWorkflow("par.yaml")

// TestParallelThreadsAreCoroutines: the threads of a parallel for_each and
// of a parallel step run as workflow coroutines: their step activities run
// at once (at most parallel: 3), and the join is the VM's (index and
// branch order).
func TestParallelThreadsAreCoroutines(t *testing.T) {
	env, _ := newEnv(t, nil)
	var mu sync.Mutex
	running, most := 0, 0
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name == StepActivity {
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
		}
	})
	env.SetOnActivityCompletedListener(func(info *activity.Info, _ converter.EncodedValue, _ error) {
		if info.ActivityType.Name == StepActivity {
			mu.Lock()
			running--
			mu.Unlock()
		}
	})
	env.ExecuteWorkflow(WorkflowName, Input{RunID: "p1", Program: compile(t, "par.yaml", parYAML)})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("workflow: completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	var out Output
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if out.ExitCode != 0 || out.State.Status != vm.StatusCompleted {
		t.Fatalf("exit %d status %s: %s", out.ExitCode, out.State.Status, out.Message)
	}
	if got := out.State.Steps["After"].Output; got != "d-3|sec-ok|style-ok" {
		t.Errorf("After output = %q, want d-3|sec-ok|style-ok (the highest index's Work, both branches)", got)
	}
	var order []string
	for _, it := range out.State.Steps["Fan"].Iterations {
		order = append(order, strconv.Itoa(it.Index))
	}
	if strings.Join(order, ",") != "0,1,2,3" {
		t.Errorf("Fan iterations in order %v, want index order", order)
	}
	if most != 3 {
		t.Errorf("at most %d step activities ran at once, want 3 (parallel: 3)", most)
	}
}

// TestOutputOfExitStatus: a run's end maps to the exit status smithvm
// gives it (vm.ExitStatus), a diagnostic list's included.
func TestOutputOfExitStatus(t *testing.T) {
	ds := source.Diagnostics{source.New(source.Pos{}, source.ESchema, "bad"), source.New(source.Pos{}, source.EPathEscape, "out")}
	for _, err := range []error{nil, vm.ErrHalted, source.Errorf(source.ESchema, "x"), ds, ds.Err(), context.Canceled} {
		if got, want := outputOf(nil, err).ExitCode, vm.ExitStatus(err); got != want {
			t.Errorf("outputOf(%v).ExitCode = %d, want %d", err, got, want)
		}
	}
	if got := outputOf(nil, ds).ExitCode; got != source.ExitPathEscape {
		t.Errorf("diagnostics exit %d, want %d", got, source.ExitPathEscape)
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
