package vm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"smith/internal/goldenfile"
	"smith/isa"
	"smith/source"
	"smith/vm"
	"smith/workers"
	"smith/workers/step"
)

func seg(id, content string) step.Segment {
	return step.Segment{ID: id, Type: "AI_RESPONSE", Content: content, Timestamp: "t"}
}

func withSeg(id string) step.Result {
	return step.Result{Signal: vm.SigSuccess, Segments: []step.Segment{seg(id, id)}}
}

func TestCallReturn(t *testing.T) {
	tests := []struct {
		name     string
		inherit  bool
		call     string
		calls    string
		payloads map[string]string // step -> payload ids it saw
		final    string
	}{
		{"pure subroutine", false, "call:Sub", "Caller,S1,S2,Caller,After",
			map[string]string{"S1": "", "S2": "s1", "After": "c1,s2,c2"}, "c1,s2,c2,after"},
		{"inherit", true, "call:Sub", "Caller,S1,S2,Caller,After",
			map[string]string{"S1": "c1", "S2": "c1,s1", "After": "c1,s1,s2,c2"}, "c1,s1,s2,c2,after"},
		{"return_to", false, "call:Sub>After", "Caller,S1,S2,After",
			map[string]string{"S1": "", "After": "c1,s2"}, "c1,s2,after"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := build(t,
				N{ID: "Main", Blocks: []B{
					{ID: "Caller", On: [][2]string{{vm.SigSuccess, tt.call}, {"SIGNAL:DONE", "next"}}},
					{ID: "After", On: [][2]string{{vm.SigSuccess, "end"}}},
				}},
				N{ID: "Sub", Inherit: tt.inherit, Blocks: []B{
					{ID: "S1", On: ok},
					{ID: "S2", On: ok},
				}})
			f := &fake{script: map[string][]step.Result{
				"Caller": {withSeg("c1"), {Signal: "SIGNAL:DONE", Segments: []step.Segment{seg("c2", "c2")}}},
				"S1":     {withSeg("s1")}, "S2": {withSeg("s2")}, "After": {withSeg("after")},
			}}
			r := run(t, p, f, nil)
			if r.err != nil || strings.Join(f.calls, ",") != tt.calls {
				t.Fatalf("Run() = %v, calls %v, want nil, %s", r.err, f.calls, tt.calls)
			}
			for step, want := range tt.payloads {
				if got := ids(f.req(t, step).Payload); got != want {
					t.Errorf("payload seen by %s = %s, want %s", step, got, want)
				}
			}
			if got := ids(r.st.Payload); got != tt.final {
				t.Errorf("final payload = %s, want %s", got, tt.final)
			}
			if len(r.st.ReturnStack) != 0 {
				t.Errorf("return stack = %v, want empty", r.st.ReturnStack)
			}
			checkRebuilt(t, r)
		})
	}
}

func ids(p []step.Segment) string {
	var s []string
	for _, g := range p {
		s = append(s, g.ID)
	}
	return strings.Join(s, ",")
}

func TestReturnEmptyStackCompletes(t *testing.T) {
	p := build(t, N{ID: "Main", Blocks: []B{{ID: "A", On: [][2]string{{vm.SigSuccess, "return"}}}}})
	r := run(t, p, &fake{}, nil)
	if r.err != nil || r.st.Status != vm.StatusCompleted {
		t.Errorf("Run() = %v, status %s; want nil, completed", r.err, r.st.Status)
	}
}

func TestTraceback(t *testing.T) {
	p := build(t,
		N{ID: "Main", Blocks: []B{{ID: "Caller", On: [][2]string{{vm.SigSuccess, "call:Sub"}}}}},
		N{ID: "Sub", Blocks: []B{{ID: "S1", On: [][2]string{{vm.SigSuccess, "fail:deep failure"}}}}})
	r := run(t, p, &fake{}, nil)
	var re *vm.RuntimeError
	if !errors.As(r.err, &re) || len(re.Traceback) != 1 || !strings.Contains(re.Traceback[0], "block 'Caller' called node 'Sub'") {
		t.Errorf("Run() error = %#v, want a traceback naming the CALL site", r.err)
	}
}

// TestCallDepth: a node whose block calls the node again nests CALLs;
// MaxCallDepth frames on the return stack are allowed (they all return),
// one CALL more ends the run with E_LIMIT naming the block, the node and
// the depth, with the return stack as it was.
func TestCallDepth(t *testing.T) {
	tests := []struct {
		name  string
		calls int // CALLs in a row before S returns
		code  source.Code
	}{
		{"at the limit", source.MaxCallDepth, ""},
		{"past the limit", source.MaxCallDepth + 1, source.ELimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := build(t,
				N{ID: "Main", Blocks: []B{
					{ID: "A", On: [][2]string{{vm.SigSuccess, "call:Sub>After"}}},
					{ID: "After", On: [][2]string{{vm.SigSuccess, "end"}}},
				}},
				N{ID: "Sub", Blocks: []B{
					{ID: "S", On: [][2]string{{vm.SigSuccess, "call:Sub>R"}, {"SIGNAL:DONE", "return"}}},
					{ID: "R", On: [][2]string{{vm.SigSuccess, "return"}}},
				}})
			script := make([]step.Result, tt.calls) // S calls tt.calls-1 times, then is done
			for i := range script {
				script[i] = step.Result{Signal: vm.SigSuccess}
			}
			script[tt.calls-1].Signal = "SIGNAL:DONE"
			f := &fake{script: map[string][]step.Result{"S": script}}
			r := run(t, p, f, nil)
			if tt.code == "" {
				if r.err != nil || r.st.Status != vm.StatusCompleted || len(r.st.ReturnStack) != 0 {
					t.Fatalf("Run() = %v, status %s, stack %d; want nil, completed, 0", r.err, r.st.Status, len(r.st.ReturnStack))
				}
				checkRebuilt(t, r)
				return
			}
			if codeOf(r.err) != tt.code || r.st.Status != vm.StatusFailed {
				t.Fatalf("Run() = %v, status %s; want %s, failed", r.err, r.st.Status, tt.code)
			}
			want := fmt.Sprintf("block 'S' of node 'Sub' calls node 'Sub' with %d CALLs not returned yet, the limit (%d): "+
				"a RETURN is missing on the way out of node 'Sub', or the transition meant JUMP:, not CALL:",
				source.MaxCallDepth, source.MaxCallDepth)
			if r.err.Error() != want {
				t.Errorf("message = %q\nwant      %q", r.err.Error(), want)
			}
			if n := len(r.st.ReturnStack); n != source.MaxCallDepth {
				t.Errorf("return stack = %d frames, want %d", n, source.MaxCallDepth)
			}
			if n := strings.Count(strings.Join(f.calls, ","), "S"); n != source.MaxCallDepth {
				t.Errorf("S ran %d times, want %d (no step after the refused CALL)", n, source.MaxCallDepth)
			}
			last := r.events[len(r.events)-1]
			if last.Kind != vm.EvRunFailed || last.Code != string(source.ELimit) || len(last.Traceback) != source.MaxCallDepth {
				t.Errorf("last event = %s %s with %d traceback lines, want run_failed E_LIMIT with %d",
					last.Kind, last.Code, len(last.Traceback), source.MaxCallDepth)
			}
			checkRebuilt(t, r)
		})
	}
}

// haltProgram: Review halts on SIGNAL:FAILURE; its SIGNAL:APPROVED goes
// to Publish.
func haltProgram(t *testing.T) *isa.Program {
	return build(t, N{ID: "Main", Blocks: []B{
		{ID: "Prep", On: ok},
		{ID: "Review", On: [][2]string{{vm.SigSuccess, "jump:Publish"}, {"SIGNAL:APPROVED", "jump:Publish"}, {vm.SigFailure, "halt"}}},
		{ID: "Publish", On: [][2]string{{vm.SigSuccess, "end"}}},
	}})
}

func TestHaltAndResume(t *testing.T) {
	tests := []struct {
		name  string
		opt   vm.ResumeOptions
		calls string // on resume
		note  bool
	}{
		{"re-run", vm.ResumeOptions{}, "Review,Publish", false},
		{"signal", vm.ResumeOptions{Signal: "SIGNAL:APPROVED"}, "Publish", false},
		{"note", vm.ResumeOptions{Note: "use v2"}, "Review,Publish", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := haltProgram(t)
			f := &fake{script: map[string][]step.Result{"Review": {fail(1)}}}
			r := run(t, p, f, nil)
			if !errors.Is(r.err, vm.ErrHalted) {
				t.Fatalf("Run() error = %v, want ErrHalted", r.err)
			}
			st := r.st
			if st.Status != vm.StatusHalted || !st.IsHalted || st.HaltedBlock != "Review" || st.CurrentStep != "Review" {
				t.Fatalf("halted state = %s", jsonOf(t, st))
			}
			if last := r.console[len(r.console)-1]; last != "WARNING: Run r1 halted at 'Review' awaiting resume." {
				t.Errorf("last console line = %q", last)
			}
			checkRebuilt(t, r)
			// Resume from the state rebuilt out of the deltas, as the store does.
			st = r.rebuilt(t)
			f2 := &fake{}
			r2 := &rec{}
			m, err := vm.New(p, r2.config(f2))
			if err != nil {
				t.Fatal(err)
			}
			st, err = m.Resume(context.Background(), st, tt.opt)
			if err != nil || strings.Join(f2.calls, ",") != tt.calls || st.Status != vm.StatusCompleted || st.IsHalted {
				t.Fatalf("Resume() = %v, calls %v, status %s; want nil, %s, completed", err, f2.calls, st.Status, tt.calls)
			}
			if got := r2.events[0].Seq; got <= r.events[len(r.events)-1].Seq {
				t.Errorf("first resumed event seq = %d, want > %d", got, r.events[len(r.events)-1].Seq)
			}
			noteID := ""
			hasNote := slices.ContainsFunc(st.Payload, func(s step.Segment) bool {
				noteID = s.ID
				return s.Type == "USER_NOTE" && s.Content == "use v2" && s.ID != ""
			})
			if hasNote != tt.note {
				t.Errorf("payload %v: has note = %v, want %v", st.Payload, hasNote, tt.note)
			}
			if tt.note && ids(f2.req(t, "Review").Payload) != noteID {
				t.Errorf("Review saw payload %v, want the note", f2.req(t, "Review").Payload)
			}
		})
	}
}

func TestResumeCompleted(t *testing.T) {
	p := haltProgram(t)
	f := &fake{}
	r := run(t, p, f, nil)
	m, _ := vm.New(p, vm.Config{Registry: f, Host: workers.Local{}})
	st, err := m.Resume(context.Background(), r.st, vm.ResumeOptions{})
	if err != nil || st != r.st || len(f.calls) != 3 {
		t.Errorf("Resume(completed) = %v, %d calls; want nil and nothing run", err, len(f.calls))
	}
}

func TestResumeUnknownName(t *testing.T) {
	p := haltProgram(t)
	r := run(t, p, &fake{script: map[string][]step.Result{"Review": {fail(1)}}}, nil)
	r.st.CurrentStep = "Gone"
	m, _ := vm.New(p, vm.Config{Host: workers.Local{}})
	_, err := m.Resume(context.Background(), r.st, vm.ResumeOptions{})
	if codeOf(err) != source.EStateCorrupt || !strings.Contains(err.Error(), "'Gone'") {
		t.Errorf("Resume() error = %v, want E_STATE_CORRUPT naming 'Gone'", err)
	}
}

// TestKillResume kills the run at every checkpoint in turn (the
// Checkpoint hook fails, as a SIGKILL right after a save would leave it),
// rebuilds the state from the saved deltas, resumes, and checks that the
// run finishes with every step that completed before the kill run exactly
// once.
func TestKillResume(t *testing.T) {
	p := build(t, N{ID: "main", Blocks: []B{
		{ID: "A", On: ok},
		{ID: "Set", Set: []isa.Field{{Key: "x", Val: str("1")}}, On: ok},
		{ID: "L", Items: list(str("a"), str("b"), str("c")), Body: []B{
			{ID: "In1", Step: cmd("${item}"), On: ok},
			{ID: "In2", When: &isa.Cond{Op: isa.CondEquals, X: tp("${item}"), Y: tp("b")}, On: append(ok, [2]string{vm.SigSkipped, "next"})},
		}, On: ok},
		{ID: "Z", On: ok},
	}})
	full := run(t, p, &fake{}, nil)
	if full.err != nil {
		t.Fatal(full.err)
	}
	n := len(full.deltas)
	for k := 2; k <= n; k++ {
		f := &fake{}
		r := &rec{killAt: k}
		m, _ := vm.New(p, r.config(f))
		_, err := m.Run(context.Background())
		if err == nil || !strings.Contains(err.Error(), "killed") {
			t.Fatalf("kill at %d: Run() error = %v, want killed", k, err)
		}
		st := r.rebuilt(t)
		done := map[string]bool{}
		for name, s := range st.Steps {
			if s.Status == vm.StepCompleted && name != "L" {
				done[name] = true
			}
		}
		before := slices.Clone(f.calls)
		f2 := &fake{}
		m2, _ := vm.New(p, (&rec{}).config(f2))
		final, err := m2.Resume(context.Background(), st, vm.ResumeOptions{})
		if err != nil || final.Status != vm.StatusCompleted {
			t.Fatalf("kill at %d: Resume() = %v, status %s", k, err, final.Status)
		}
		// Top-level steps that completed before the kill are not run again.
		for _, name := range []string{"A", "Z"} {
			if done[name] && slices.Contains(f2.calls, name) {
				t.Errorf("kill at %d: completed step %s ran again (before %v, after %v)", k, name, before, f2.calls)
			}
		}
		// Every loop iteration ran In1 once overall, except one re-run after the kill.
		all := append(before, f2.calls...)
		if c := count(all, "In1"); c < 3 || c > 4 {
			t.Errorf("kill at %d: In1 ran %d times (before %v, after %v), want 3 or 4", k, c, before, f2.calls)
		}
		l := final.Steps["L"]
		if l.IterationsTotal != 3 || len(l.Iterations) != 3 || l.Iterations[2].Item != "c" {
			t.Errorf("kill at %d: L = %s", k, jsonOf(t, l))
		}
		if final.Context["x"] != "1" {
			t.Errorf("kill at %d: context = %v", k, final.Context)
		}
	}
}

func count(s []string, x string) int {
	n := 0
	for _, e := range s {
		if e == x {
			n++
		}
	}
	return n
}

func TestStateRoundTrip(t *testing.T) {
	p := build(t, N{ID: "main", Blocks: []B{
		{ID: "A", On: ok},
		{ID: "L", Items: list(str("a"), num("2"), isa.TValue{Kind: isa.TBool, Bool: true}), Body: []B{{ID: "In", On: ok}}, On: ok},
		{ID: "Review", On: [][2]string{{vm.SigSuccess, "halt"}}},
	}})
	json1 := step.Result{Signal: vm.SigSuccess, Output: "o", Lines: []string{"x"}, JSON: map[string]any{"k": []any{1.0, "v", nil}}, HasJSON: true,
		Segments: []step.Segment{seg("g1", "c")}, Tokens: 7}
	r := run(t, p, &fake{script: map[string][]step.Result{"A": {json1}}}, nil)
	b, err := json.Marshal(r.st)
	if err != nil {
		t.Fatal(err)
	}
	var back vm.State
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got, want := jsonOf(t, &back), jsonOf(t, r.st); got != want {
		t.Errorf("State JSON round trip differs: %s", goldenfile.FirstDiff(got, want))
	}
	for _, key := range []string{`"run_id"`, `"workflow_name"`, `"program_hash"`, `"isHalted": true`, `"halted_block"`, `"totalTokensUsed": 7`,
		`"iterations_total"`, `"return_stack"`, `"loop_stack"`, `"event_seq"`, `"phase": "start"`} {
		if !strings.Contains(jsonOf(t, r.st), key) {
			t.Errorf("state.json lacks %s", key)
		}
	}
}

// TestFailMessage checks that FAIL substitutes its message template in the
// scope of the failing block, falls back to the source text when a
// reference cannot be resolved, masks secrets everywhere, and keeps the
// exit rules.
func TestFailMessage(t *testing.T) {
	const secret = "s3cr3t-4712"
	loopFail := func(msg string) N {
		return N{ID: "main", Blocks: []B{
			{ID: "L", Items: list(str("a.txt"), str("b.txt")), As: "file", Body: []B{
				{ID: "Body", On: [][2]string{{vm.SigSuccess, "continue"}, {vm.SigFailure, "fail:" + msg}}},
			}, On: [][2]string{{vm.SigSuccess, "end"}, {vm.SigFailure, "fail:loop failed"}}},
		}}
	}
	oneFail := func(msg string) N {
		return N{ID: "main", Blocks: []B{{ID: "A", On: [][2]string{{vm.SigSuccess, "end"}, {vm.SigFailure, "fail:" + msg}, {vm.SigTimeout, "fail:" + msg}}}}}
	}
	tests := []struct {
		name   string
		n      N
		script map[string][]step.Result
		code   source.Code
		want   string
	}{
		{"context", oneFail("key ${context.k} rejected"), map[string][]step.Result{"A": {fail(1)}},
			source.EStepFailed, "key v1 rejected"},
		{"step result", oneFail("A exited ${steps.A.exit_code}"), map[string][]step.Result{"A": {fail(7)}},
			source.EStepFailed, "A exited 7"},
		{"timeout", oneFail("A timed out (${context.k})"), map[string][]step.Result{"A": {{Signal: vm.SigTimeout, ExitCode: 124}}},
			source.ETimeout, "A timed out (v1)"},
		{"secret", oneFail("key ${env.TOKEN} rejected"), map[string][]step.Result{"A": {fail(1)}},
			source.EStepFailed, "key *** rejected"},
		{"missing", oneFail("key ${context.nope} rejected"), map[string][]step.Result{"A": {fail(1)}},
			source.EStepFailed, "key ${context.nope} rejected (reference '${context.nope}' cannot be resolved: the context has no 'nope'; pass --context nope=VALUE or add it under the workflow's context:)"},
		{"loop variables", loopFail("${file} (${loop.index} of ${loop.total}) failed"), map[string][]step.Result{"Body": {{Signal: vm.SigSuccess}, fail(1)}},
			source.EStepFailed, "b.txt (1 of 2) failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := build(t, tt.n)
			p.Secrets = []string{"TOKEN"}
			p.Context = &isa.TValue{Kind: isa.TMap, Map: []isa.Field{{Key: "k", Val: str("v1")}}}
			r := run(t, p, &fake{script: tt.script}, func(c *vm.Config) {
				c.Env = func(name string) (string, bool) {
					if name == "TOKEN" {
						return secret, true
					}
					return "", false
				}
			})
			var re *vm.RuntimeError
			if !errors.As(r.err, &re) || re.Code != tt.code || re.Msg != tt.want {
				t.Fatalf("Run() = %v, want %s %q", r.err, tt.code, tt.want)
			}
			last := r.events[len(r.events)-1]
			// The event's message names where the run failed (the FAIL's
			// source position); the RuntimeError keeps it in Pos.
			wantEv := tt.want + " (at " + re.Pos.String() + ")"
			if !re.Pos.IsValid() || last.Kind != vm.EvRunFailed || last.Msg != wantEv {
				t.Errorf("last event = %s %q (pos %s), want %s %q", last.Kind, last.Msg, re.Pos, vm.EvRunFailed, wantEv)
			}
			for _, c := range r.console {
				if strings.Contains(c, secret) {
					t.Errorf("console line %q shows the secret", c)
				}
			}
			for _, d := range r.deltas {
				if strings.Contains(string(d), secret) {
					t.Errorf("state delta %s shows the secret", d)
				}
			}
		})
	}
}
