package vm_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"smith/isa"
	"smith/source"
	"smith/vm"
	"smith/workers"
	"smith/workers/step"
)

func TestLinear(t *testing.T) {
	p := build(t, N{ID: "main", Blocks: []B{
		{ID: "A", Step: cmd("echo", "a"), On: ok},
		{ID: "B", Step: cmd("false"), On: [][2]string{{vm.SigSuccess, "next"}, {vm.SigFailure, "next"}}},
		{ID: "C", On: ok},
	}})
	f := &fake{script: map[string][]step.Result{"B": {fail(2)}}}
	r := run(t, p, f, nil)
	if r.err != nil {
		t.Fatalf("Run() error = %v", r.err)
	}
	if got, want := strings.Join(f.calls, ","), "A,B,C"; got != want {
		t.Errorf("calls = %s, want %s", got, want)
	}
	want := []string{
		"INFO: Run r1 started (workflow 'demo').",
		"INFO: Step 'A' starting.",
		"INFO: Step 'A' completed successfully in 0.1s.",
		"INFO: Step 'B' starting.",
		"ERROR: Step 'B' failed with exit code 2 in 0.1s.",
		"INFO: Step 'C' starting.",
		"INFO: Step 'C' completed successfully in 0.1s.",
		"INFO: Run r1 completed.",
	}
	if got := strings.Join(r.console, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("console =\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
	if r.st.Status != vm.StatusCompleted || r.st.Steps["B"].Status != vm.StepFailed || r.st.Steps["B"].ExitCode != 2 {
		t.Errorf("state = %s", jsonOf(t, r.st))
	}
	if got := f.req(t, "A").Argv; !slices.Equal(got, []string{"echo", "a"}) {
		t.Errorf("argv = %q", got)
	}
	for i, e := range r.events {
		if e.Seq != i+1 || e.RunID != "r1" {
			t.Errorf("event %d: seq %d run %q, want %d r1", i, e.Seq, e.RunID, i+1)
		}
	}
	checkRebuilt(t, r)
}

func TestGoto(t *testing.T) {
	p := build(t, N{ID: "main", Blocks: []B{
		{ID: "A", On: [][2]string{{vm.SigSuccess, "jump:C"}}},
		{ID: "B", On: ok},
		{ID: "C", On: [][2]string{{vm.SigSuccess, "end"}}},
	}})
	f := &fake{}
	r := run(t, p, f, nil)
	if r.err != nil || strings.Join(f.calls, ",") != "A,C" {
		t.Errorf("Run() = %v, calls %v, want nil, [A C]", r.err, f.calls)
	}
}

func TestWhenSkipped(t *testing.T) {
	p := build(t, N{ID: "main", Blocks: []B{
		{ID: "A", On: ok},
		{ID: "B", When: &isa.Cond{Op: isa.CondEquals, X: tp("${steps.A.output}"), Y: tp("nope")}, On: append(ok, [2]string{vm.SigSkipped, "next"})},
		{ID: "C", When: &isa.Cond{Op: isa.CondEquals, X: tp("${steps.A.output}"), Y: tp("out-A")}, On: append(ok, [2]string{vm.SigSkipped, "next"})},
	}})
	f := &fake{}
	r := run(t, p, f, nil)
	if r.err != nil || strings.Join(f.calls, ",") != "A,C" {
		t.Fatalf("Run() = %v, calls %v, want nil, [A C]", r.err, f.calls)
	}
	if s := r.st.Steps["B"]; s.Status != vm.StepSkipped || s.Signal != vm.SigSkipped {
		t.Errorf("B = %+v, want skipped", s)
	}
	if !slices.Contains(r.console, "INFO: Step 'B' skipped (condition false).") {
		t.Errorf("console lacks the skipped line: %q", r.console)
	}
	checkRebuilt(t, r)
}

func TestMaxVisits(t *testing.T) {
	p := build(t, N{ID: "main", Blocks: []B{
		{ID: "A", MaxVisits: 2, On: [][2]string{{vm.SigSuccess, "jump:A"}, {vm.SigMaxVisits, "jump:Done"}}},
		{ID: "Done", On: ok},
	}})
	f := &fake{}
	r := run(t, p, f, nil)
	if r.err != nil || strings.Join(f.calls, ",") != "A,A,Done" {
		t.Fatalf("Run() = %v, calls %v, want nil, [A A Done]", r.err, f.calls)
	}
	if r.st.Visits["A"] != 3 {
		t.Errorf("visits[A] = %d, want 3", r.st.Visits["A"])
	}
	if !slices.Contains(r.console, "WARNING: Step 'A' reached max_visits (2); not run.") {
		t.Errorf("console lacks the max_visits line: %q", r.console)
	}
	checkRebuilt(t, r)
}

func TestSetContext(t *testing.T) {
	p := build(t, N{ID: "main", Blocks: []B{
		{ID: "Set", Set: []isa.Field{
			{Key: "a.b", Val: num("1")},
			{Key: "a.c", Val: str("${context.project}-x")},
			{Key: "files", Val: *list(str("x"), str("y"))},
			{Key: "copy", Val: str("${context.orig}")},
		}, On: ok},
		{ID: "Use", Step: cmd("${context.a.c}", "${context.a}", "${context.copy[1]}"), On: ok},
	}})
	p.Context = &isa.TValue{Kind: isa.TMap, Map: []isa.Field{{Key: "project", Val: str("app")}, {Key: "keep", Val: str("${run.id}")},
		{Key: "orig", Val: *list(str("x"), str("y"))}}}
	f := &fake{}
	r := run(t, p, f, nil)
	if r.err != nil {
		t.Fatalf("Run() error = %v\n%s", r.err, jsonOf(t, r.st.Steps))
	}
	got := jsonOf(t, r.st.Context)
	want := jsonOf(t, map[string]any{"project": "app", "keep": "r1", "orig": []any{"x", "y"}, "a": map[string]any{"b": 1.0, "c": "app-x"},
		"files": []any{"x", "y"}, "copy": []any{"x", "y"}})
	if got != want {
		t.Errorf("context = %s, want %s", got, want)
	}
	if argv := f.req(t, "Use").Argv; !slices.Equal(argv, []string{"app-x", `{"b":1,"c":"app-x"}`, "y"}) {
		t.Errorf("argv = %q", argv)
	}
	checkRebuilt(t, r)
}

func TestContextOverride(t *testing.T) {
	p := build(t, N{ID: "main", Blocks: []B{{ID: "A", Step: cmd("${context.project}"), On: ok}}})
	p.Context = &isa.TValue{Kind: isa.TMap, Map: []isa.Field{{Key: "project", Val: str("app")}}}
	f := &fake{}
	r := run(t, p, f, func(c *vm.Config) { c.Context = map[string]any{"project": "cli"} })
	if got := f.req(t, "A").Argv[0]; r.err != nil || got != "cli" {
		t.Errorf("argv[0] = %q (err %v), want cli", got, r.err)
	}
}

func TestNestedForEach(t *testing.T) {
	p := build(t, N{ID: "main", Blocks: []B{
		{ID: "Outer", Items: list(str("a"), str("b")), As: "dir", Body: []B{
			{ID: "Inner", Items: &isa.TValue{Kind: isa.TString, Str: tpl("${context.files}")}, As: "file", Body: []B{
				{ID: "Work", Step: cmd("${dir}/${file}", "${loop.index}/${loop.total}", "${item}"), On: ok},
			}, On: ok},
			{ID: "After", Step: cmd("${steps.Work.output}"), On: ok},
		}, On: ok},
	}})
	p.Context = &isa.TValue{Kind: isa.TMap, Map: []isa.Field{{Key: "files", Val: *list(str("x"), str("y"), str("z"))}}}
	f := &fake{}
	r := run(t, p, f, nil)
	if r.err != nil {
		t.Fatalf("Run() error = %v", r.err)
	}
	var got []string
	for _, q := range f.reqs {
		got = append(got, strings.Join(q.Argv, " "))
	}
	want := []string{
		"a/x 0/3 x", "a/y 1/3 y", "a/z 2/3 z", "out-Work",
		"b/x 0/3 x", "b/y 1/3 y", "b/z 2/3 z", "out-Work",
	}
	if !slices.Equal(got, want) {
		t.Errorf("argvs = %q, want %q", got, want)
	}
	outer := r.st.Steps["Outer"]
	if outer.Status != vm.StepCompleted || outer.IterationsTotal != 2 || len(outer.Iterations) != 2 {
		t.Fatalf("Outer = %s", jsonOf(t, outer))
	}
	it := outer.Iterations[1]
	if it.Index != 1 || it.Item != "b" || it.Output != "out-After" || it.Steps["Inner"].IterationsTotal != 3 || it.Steps["After"] == nil {
		t.Errorf("Outer.iterations[1] = %s", jsonOf(t, it))
	}
	if inner := it.Steps["Inner"].Iterations[2]; inner.Item != "z" || inner.Steps["Work"].Status != vm.StepCompleted {
		t.Errorf("Inner.iterations[2] = %s", jsonOf(t, inner))
	}
	checkRebuilt(t, r)
}

func TestLoopControl(t *testing.T) {
	items := list(str("1"), str("2"), str("3"), str("4"))
	tests := []struct {
		name   string
		on     [][2]string
		script []step.Result
		calls  int    // Body runs
		status string // loop status
		err    source.Code
		last   string
	}{
		{"continue", [][2]string{{vm.SigSuccess, "continue"}, {vm.SigFailure, "continue"}},
			[]step.Result{fail(1), {Signal: vm.SigSuccess}}, 4, vm.StepCompleted, "", "completed"},
		{"break", [][2]string{{vm.SigSuccess, "next"}, {vm.SigFailure, "break"}},
			[]step.Result{{Signal: vm.SigSuccess}, fail(1)}, 2, vm.StepCompleted, "", "completed"},
		{"fail", [][2]string{{vm.SigSuccess, "next"}, {vm.SigFailure, "loopfail"}},
			[]step.Result{{Signal: vm.SigSuccess}, {Signal: vm.SigSuccess}, fail(3)}, 3, vm.StepFailed, source.EStepFailed, "failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := build(t, N{ID: "main", Blocks: []B{
				{ID: "L", Items: items, Body: []B{{ID: "Body", On: tt.on}}, On: [][2]string{{vm.SigSuccess, "end"}, {vm.SigFailure, "fail:loop failed"}}},
			}})
			f := &fake{script: map[string][]step.Result{"Body": tt.script}}
			r := run(t, p, f, nil)
			if codeOf(r.err) != tt.err {
				t.Errorf("Run() error = %v, want code %q", r.err, tt.err)
			}
			l := r.st.Steps["L"]
			if len(f.calls) != tt.calls || l.Status != tt.status || l.IterationsTotal != tt.calls {
				t.Errorf("calls %d, L = %s; want %d calls, status %s", len(f.calls), jsonOf(t, l), tt.calls, tt.status)
			}
			if got := l.Iterations[len(l.Iterations)-1].Status; got != tt.last {
				t.Errorf("last iteration status = %s, want %s", got, tt.last)
			}
			checkRebuilt(t, r)
		})
	}
}

func TestEmptyAndBadItems(t *testing.T) {
	tests := []struct {
		name  string
		items isa.TValue
		sig   string
		code  string
	}{
		{"empty", *list(), vm.SigSuccess, ""},
		{"not a list", str("${context.s}"), vm.SigFailure, "E_STEP_FAILED"},
		{"missing", str("${context.nope}"), vm.SigFailure, "E_VAR_MISSING"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := build(t, N{ID: "main", Blocks: []B{
				{ID: "L", Items: &tt.items, Body: []B{{ID: "Body", On: ok}}, On: [][2]string{{vm.SigSuccess, "end"}, {vm.SigFailure, "jump:Err"}}},
				{ID: "Err", On: [][2]string{{vm.SigSuccess, "end"}}},
			}})
			p.Context = &isa.TValue{Kind: isa.TMap, Map: []isa.Field{{Key: "s", Val: str("text")}}}
			f := &fake{}
			r := run(t, p, f, nil)
			l := r.st.Steps["L"]
			var code string
			if l.Error != nil {
				code = l.Error.Code
			}
			if r.err != nil || l.Signal != tt.sig || code != tt.code || slices.Contains(f.calls, "Body") {
				t.Errorf("Run() = %v, L = %s, calls %v; want signal %s code %q", r.err, jsonOf(t, l), f.calls, tt.sig, tt.code)
			}
		})
	}
}

func TestIterationCap(t *testing.T) {
	var items []isa.TValue
	for i := range 150 {
		items = append(items, num(strings.Repeat("1", 1)+strings.Repeat("0", 0)+itoa(i)))
	}
	p := build(t, N{ID: "main", Blocks: []B{
		{ID: "L", Items: list(items...), Body: []B{{ID: "Body", Step: cmd("${item}"), On: ok}}, On: ok},
	}})
	r := run(t, p, &fake{}, nil)
	l := r.st.Steps["L"]
	if r.err != nil || len(l.Iterations) != vm.MaxInlineIterations || l.IterationsTotal != 150 || l.Iterations[0].Index != 50 {
		t.Fatalf("Run() = %v; L has %d inline, total %d, first index %d; want 100, 150, 50",
			r.err, len(l.Iterations), l.IterationsTotal, l.Iterations[0].Index)
	}
	checkRebuilt(t, r)
}

func itoa(i int) string {
	return strings.TrimSpace(strings.Repeat(" ", 0) + string(rune('0'+i/100)) + string(rune('0'+i/10%10)) + string(rune('0'+i%10)))
}

func TestDispatch(t *testing.T) {
	timeout := step.Result{Signal: vm.SigTimeout, ExitCode: 124}
	custom := step.Result{Signal: "SIGNAL:NEEDS_CLARIFICATION"}
	tests := []struct {
		name string
		res  step.Result
		on   [][2]string
		def  string
		want string // the step run after A ("" = none)
		code source.Code
	}{
		{"exact", timeout, [][2]string{{vm.SigTimeout, "jump:T"}, {vm.SigFailure, "jump:F"}}, "jump:D", "T", ""},
		{"timeout to failure", timeout, [][2]string{{vm.SigFailure, "jump:F"}}, "jump:D", "F", ""},
		{"timeout to default", timeout, [][2]string{{vm.SigSuccess, "jump:T"}}, "jump:D", "D", ""},
		{"custom to default", custom, [][2]string{{vm.SigFailure, "jump:F"}}, "jump:D", "D", ""},
		{"none", custom, [][2]string{{vm.SigFailure, "jump:F"}}, "", "", source.ENoTransition},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			end := [][2]string{{vm.SigSuccess, "end"}}
			p := build(t, N{ID: "main", Blocks: []B{
				{ID: "A", On: tt.on, Default: tt.def}, {ID: "T", On: end}, {ID: "F", On: end}, {ID: "D", On: end},
			}})
			f := &fake{script: map[string][]step.Result{"A": {tt.res}}}
			r := run(t, p, f, nil)
			var got string
			if len(f.calls) > 1 {
				got = f.calls[1]
			}
			if got != tt.want || codeOf(r.err) != tt.code {
				t.Errorf("after A ran %q (err %v), want %q (code %q)", got, r.err, tt.want, tt.code)
			}
			if tt.code != "" && r.st.Status != vm.StatusFailed {
				t.Errorf("status = %s, want failed", r.st.Status)
			}
		})
	}
}

func TestFail(t *testing.T) {
	tests := []struct {
		name string
		res  step.Result
		code source.Code
		line string
	}{
		{"failure", fail(1), source.EStepFailed, "ERROR: Run r1 failed: Prep failed (at flow.yaml:4:1)."},
		{"timeout", step.Result{Signal: vm.SigTimeout, ExitCode: 124}, source.ETimeout, "ERROR: Run r1 failed: E_TIMEOUT: Prep failed (at flow.yaml:4:1)."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := build(t, N{ID: "main", Blocks: []B{{ID: "Prep", On: [][2]string{{vm.SigSuccess, "end"}}, Default: "fail:Prep failed"}}})
			f := &fake{script: map[string][]step.Result{"Prep": {tt.res}}}
			r := run(t, p, f, nil)
			var re *vm.RuntimeError
			if !errors.As(r.err, &re) || re.Code != tt.code || re.Msg != "Prep failed" || !re.Pos.IsValid() {
				t.Fatalf("Run() error = %#v, want %s 'Prep failed'", r.err, tt.code)
			}
			if r.st.Status != vm.StatusFailed || r.st.Phase != vm.PhaseStart || r.st.CurrentStep != "Prep" {
				t.Errorf("state status %s phase %s step %s, want failed start Prep", r.st.Status, r.st.Phase, r.st.CurrentStep)
			}
			if last := r.console[len(r.console)-1]; last != tt.line {
				t.Errorf("last console line = %q", last)
			}
		})
	}
}

func TestStepBudget(t *testing.T) {
	p := build(t, N{ID: "main", Blocks: []B{{ID: "A", On: [][2]string{{vm.SigSuccess, "jump:A"}}}}})
	f := &fake{}
	r := run(t, p, f, func(c *vm.Config) { c.MaxSteps = 5 })
	if codeOf(r.err) != source.EStepBudget || len(f.calls) != 5 || r.st.Status != vm.StatusFailed {
		t.Errorf("Run() = %v after %d calls, status %s; want E_STEP_BUDGET after 5, failed", r.err, len(f.calls), r.st.Status)
	}
}

// TestStepBudgetStepsBefore: the blocks a continued Run or Resume executed
// before (StepsBefore) count against MaxSteps; Executed counts them too.
func TestStepBudgetStepsBefore(t *testing.T) {
	p := build(t, N{ID: "main", Blocks: []B{{ID: "A", On: [][2]string{{vm.SigSuccess, "jump:A"}}}}})
	f := &fake{}
	r := run(t, p, f, func(c *vm.Config) { c.MaxSteps, c.StepsBefore = 5, 3 })
	if codeOf(r.err) != source.EStepBudget || len(f.calls) != 2 {
		t.Errorf("Run() = %v after %d calls; want E_STEP_BUDGET after 2 (3 counted before)", r.err, len(f.calls))
	}
	m, err := vm.New(p, vm.Config{Host: workers.Local{}, StepsBefore: 7})
	if err != nil || m.Executed() != 7 {
		t.Errorf("Executed() of a new machine = %d (%v), want StepsBefore 7", m.Executed(), err)
	}
}

func TestCancel(t *testing.T) {
	p := build(t, N{ID: "main", Blocks: []B{{ID: "A", On: ok}, {ID: "B", On: ok}}})
	ctx, cancel := context.WithCancel(context.Background())
	f := &fake{before: func(req *step.Request) {
		if req.Step == "B" {
			cancel()
		}
	}}
	r := &rec{}
	m, err := vm.New(p, r.config(f))
	if err != nil {
		t.Fatal(err)
	}
	st, err := m.Run(ctx)
	if codeOf(err) != source.EInterrupted || st.Status != vm.StatusInterrupted || st.CurrentStep != "B" || st.Phase != vm.PhaseStart {
		t.Fatalf("Run() = %v, status %s at %s/%s; want E_INTERRUPTED, interrupted at B/start", err, st.Status, st.CurrentStep, st.Phase)
	}
	if st.Steps["B"].Status != vm.StepRunning {
		t.Errorf("B = %+v, want running (not recorded)", st.Steps["B"])
	}
	// Resume runs B again.
	f2 := &fake{}
	m2, _ := vm.New(p, r.config(f2))
	st, err = m2.Resume(context.Background(), st, vm.ResumeOptions{})
	if err != nil || strings.Join(f2.calls, ",") != "B" || st.Status != vm.StatusCompleted {
		t.Errorf("Resume() = %v, calls %v, status %s; want nil, [B], completed", err, f2.calls, st.Status)
	}
}

func TestSecretMissing(t *testing.T) {
	p := build(t, N{ID: "main", Blocks: []B{{ID: "A", On: ok}}})
	p.Secrets = []string{"TOKEN"}
	f := &fake{}
	r := run(t, p, f, nil)
	if codeOf(r.err) != source.ESecretMissing || len(f.calls) != 0 || len(r.events) != 0 {
		t.Errorf("Run() = %v, calls %v, want E_SECRET_MISSING before anything runs", r.err, f.calls)
	}
}

// A secret's line breaks at its end do not count towards its length: it
// is also masked without them, so "abc\n" would blank every "abc".
func TestSecretTooShortWithoutItsNewline(t *testing.T) {
	p := build(t, N{ID: "main", Blocks: []B{{ID: "A", On: ok}}})
	p.Secrets = []string{"TOKEN"}
	for _, tc := range []struct {
		val  string
		want string // the refusal's words; "" runs
	}{
		{"abc\n", "is 3 characters long"},
		{"ab\r\n", "is 2 characters long"},
		{"\n\n", "is set but empty"},
		{"abcd\n", ""},
	} {
		f := &fake{}
		r := run(t, p, f, func(c *vm.Config) {
			c.Env = func(k string) (string, bool) { return tc.val, k == "TOKEN" }
		})
		if tc.want == "" {
			if r.err != nil {
				t.Errorf("TOKEN=%q: Run() = %v, want it to run", tc.val, r.err)
			}
			continue
		}
		if codeOf(r.err) != source.ESecretMissing || !strings.Contains(r.err.Error(), tc.want) || len(f.calls) != 0 {
			t.Errorf("TOKEN=%q: Run() = %v, calls %v; want E_SECRET_MISSING %q before anything runs", tc.val, r.err, f.calls, tc.want)
		}
	}
}

func TestNoRegistry(t *testing.T) {
	p := build(t, N{ID: "main", Blocks: []B{{ID: "A", On: [][2]string{{vm.SigSuccess, "end"}, {vm.SigFailure, "fail:no"}}}}})
	m, err := vm.New(p, vm.Config{Host: workers.Local{}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := m.Run(context.Background())
	if codeOf(err) != source.EStepFailed || st.Steps["A"].Error == nil || st.Steps["A"].Error.Code != "E_EXEC" {
		t.Errorf("Run() = %v, A = %+v; want the step failed with E_EXEC", err, st.Steps["A"])
	}
}

// TestNewNeedsHost: a Config without a Host is refused, not run on this
// machine's files.
func TestNewNeedsHost(t *testing.T) {
	p := build(t, N{ID: "main", Blocks: []B{{ID: "A", On: [][2]string{{vm.SigSuccess, "end"}, {vm.SigFailure, "fail:no"}}}}})
	if _, err := vm.New(p, vm.Config{}); err == nil || !strings.Contains(err.Error(), "Config.Host") {
		t.Errorf("New(no Host) error = %v, want one naming Config.Host", err)
	}
}

func TestNewVerifies(t *testing.T) {
	p := &isa.Program{Code: []isa.Instr{{Op: isa.OpJump, A: 7}}, Pos: []source.Pos{{}}}
	if _, err := vm.New(p, vm.Config{}); err == nil {
		t.Errorf("New(bad program) error = nil, want E_BYTECODE")
	}
}

func TestInternalError(t *testing.T) {
	// LOOP_NEXT with no loop frame breaks an invariant the compiler keeps.
	p := &isa.Program{
		Name:   "bad",
		Nodes:  []isa.Node{{ID: "main"}},
		Blocks: []isa.Block{{ID: "L", Kind: isa.KindLoop, Start: 0, Dispatch: 1, Loop: &isa.Loop{Items: *list(), Body: 0}}},
		Tables: []isa.Table{{Block: 0}},
		Code:   []isa.Instr{{Op: isa.OpLoopNext, A: 0, B: 0}, {Op: isa.OpDispatch}},
		Pos:    []source.Pos{{File: "f.yaml", Line: 3, Col: 5}, {}},
	}
	m, err := vm.New(p, vm.Config{Host: workers.Local{}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := m.Run(context.Background())
	if codeOf(err) != source.EInternal || !strings.HasPrefix(err.Error(), "internal error at pc 0 (f.yaml:3:5)") || st.Status != vm.StatusFailed {
		t.Errorf("Run() = %v, want E_INTERNAL 'internal error at pc 0 (f.yaml:3:5)...'", err)
	}
}

func TestDeltaItemsOnlyOnPush(t *testing.T) {
	p := build(t, N{ID: "main", Blocks: []B{
		{ID: "Outer", Items: list(str("a"), str("b")), Body: []B{
			{ID: "Inner", Items: list(str("x"), str("y")), Body: []B{{ID: "W", On: ok}}, On: ok},
		}, On: ok},
	}})
	r := run(t, p, &fake{}, nil)
	withItems := 0
	for _, b := range r.deltas {
		if strings.Contains(string(b), `"items"`) {
			withItems++
		}
	}
	if withItems != 3 { // Outer once, Inner once per outer iteration
		t.Errorf("%d deltas carry loop items, want 3 (one per push)", withItems)
	}
	checkRebuilt(t, r)
}

// TestRunStep: a program made by isa's Only runs one top-level block and
// ends the run with its outcome (no error: action line); resuming that run
// in the same program runs the same block again, and only it.
func TestRunStep(t *testing.T) {
	p := build(t, N{ID: "main", Blocks: []B{
		{ID: "A", Step: cmd("echo", "a"), On: ok},
		{ID: "B", Step: cmd("make"), On: ok},
		{ID: "C", Step: cmd("echo", "c"), On: ok},
	}})
	p, err := p.Only("B")
	if err != nil {
		t.Fatal(err)
	}
	f := &fake{script: map[string][]step.Result{"B": {fail(2)}}}
	r := run(t, p, f, nil)
	if r.err == nil || codeOf(r.err) != source.EStepFailed || !strings.HasPrefix(r.err.Error(), "step 'B' ended with SIGNAL:FAILURE") {
		t.Fatalf("Run(Only B) error = %v, want E_STEP_FAILED: step 'B' ended with SIGNAL:FAILURE", r.err)
	}
	if got := strings.Join(f.calls, ","); got != "B" {
		t.Errorf("calls = %s, want B", got)
	}
	if r.st.RunStep != "B" {
		t.Errorf("state run_step = %q, want B", r.st.RunStep)
	}
	for _, l := range r.console {
		if l == "ERROR: step 'B' ended with SIGNAL:FAILURE" {
			t.Errorf("run-step printed an error: action line %q", l)
		}
	}
	// Resume the rebuilt state with a fresh machine: B runs (and succeeds), C does not.
	st := r.rebuilt(t)
	if st.RunStep != "B" {
		t.Fatalf("rebuilt state run_step = %q, want B", st.RunStep)
	}
	f2 := &fake{}
	r2 := &rec{}
	m, err := vm.New(p, r2.config(f2))
	if err != nil {
		t.Fatal(err)
	}
	final, err := m.Resume(context.Background(), st, vm.ResumeOptions{})
	if err != nil {
		t.Fatalf("Resume() error = %v", err)
	}
	if got := strings.Join(f2.calls, ","); got != "B" {
		t.Errorf("calls after resume = %s, want B only", got)
	}
	if final.Status != vm.StatusCompleted {
		t.Errorf("status after resume = %q, want completed", final.Status)
	}
}

// TestEventsAfterTheirCheckpoint: an event reaches Config.Events only after
// the Checkpoint of the change that records it (whose event_seq covers the
// event's seq), on the main machine and on the threads of a parallel loop
// and a parallel step alike; the events of a change whose Checkpoint fails
// never reach it.
func TestEventsAfterTheirCheckpoint(t *testing.T) {
	p := compileYAML(t, parWorkflow)
	for _, killAt := range []int{0, 2, 5, 12, 25} {
		t.Run(fmt.Sprintf("checkpoint fails at seq %d", killAt), func(t *testing.T) {
			var mu sync.Mutex
			saved, sent := 0, 0
			_, _, err := runPar(t, p, &parWorker{seed: int64(killAt), maxMs: 3}, func(c *vm.Config) {
				save, events := c.Checkpoint, c.Events
				c.Checkpoint = func(d *vm.Delta, st *vm.State) error {
					if killAt > 0 && d.Seq >= killAt {
						return errors.New("killed")
					}
					if err := save(d, st); err != nil {
						return err
					}
					mu.Lock()
					saved = max(saved, d.EventSeq)
					mu.Unlock()
					return nil
				}
				c.Events = func(e vm.Event) {
					mu.Lock()
					sent++
					if e.Seq > saved {
						t.Errorf("event %d (%s, step %q, thread %q) reached Events before a Checkpoint recorded it (saved event_seq %d)",
							e.Seq, e.Kind, e.Step, e.Thread, saved)
					}
					mu.Unlock()
					events(e)
				}
			})
			if (err != nil) != (killAt > 0) || sent == 0 {
				t.Errorf("Run() error = %v, %d events sent; want an error only when a Checkpoint fails, and events", err, sent)
			}
		})
	}
}
