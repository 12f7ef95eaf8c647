package vm_test

import (
	"os"
	"path/filepath"
	"testing"

	"smith/isa"
	"smith/vm"
	"smith/workers/confine"
	"smith/workers/step"
)

func TestConditions(t *testing.T) {
	base := t.TempDir()
	dirs, err := confine.New(base)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(base, "workspace"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "workspace", "here.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c := func(op isa.CondOp, x, y string) *isa.Cond { return &isa.Cond{Op: op, X: tp(x), Y: tp(y)} }
	tests := []struct {
		name string
		cond *isa.Cond
		want bool
		code string // the step fails with this code instead
	}{
		{"step_ok true", &isa.Cond{Op: isa.CondStepOK, Name: "Prev"}, true, ""},
		{"step_ok failed", &isa.Cond{Op: isa.CondStepOK, Name: "Bad"}, false, ""},
		{"step_ok never ran", &isa.Cond{Op: isa.CondStepOK, Name: "Nope"}, false, ""},
		{"file_exists", &isa.Cond{Op: isa.CondFileExists, X: tp("here.txt")}, true, ""},
		{"file_exists no", &isa.Cond{Op: isa.CondFileExists, X: tp("gone.txt")}, false, ""},
		{"file_exists escape", &isa.Cond{Op: isa.CondFileExists, X: tp("../../etc/passwd")}, false, "E_PATH_ESCAPE"},
		{"equals", c(isa.CondEquals, "${steps.Prev.output}", "out-Prev"), true, ""},
		{"equals no", c(isa.CondEquals, "a", "b"), false, ""},
		{"exit_code ==", &isa.Cond{Op: isa.CondExitCode, Name: "Bad", Cmp: "==", Num: 3}, true, ""},
		{"exit_code >", &isa.Cond{Op: isa.CondExitCode, Name: "Bad", Cmp: ">", Num: 3}, false, ""},
		{"exit_code never ran", &isa.Cond{Op: isa.CondExitCode, Name: "Nope", Cmp: "==", Num: 0}, false, ""},
		{"env_set", &isa.Cond{Op: isa.CondEnvSet, Name: "HOME"}, true, ""},
		{"env_set no", &isa.Cond{Op: isa.CondEnvSet, Name: "NOPE"}, false, ""},
		{"contains string", c(isa.CondContains, "hello world", "lo w"), true, ""},
		{"contains list", c(isa.CondContains, "${context.list}", "b"), true, ""},
		{"contains list no", c(isa.CondContains, "${context.list}", "z"), false, ""},
		{"regex", &isa.Cond{Op: isa.CondRegex, X: tp("Hello"), Y: tp("^hel"), Flags: "i"}, true, ""},
		{"regex case", &isa.Cond{Op: isa.CondRegex, X: tp("Hello"), Y: tp("^hel")}, false, ""},
		{"regex multiline", &isa.Cond{Op: isa.CondRegex, X: tp("a\nb"), Y: tp("^b$"), Flags: "m"}, true, ""},
		{"regex bad", &isa.Cond{Op: isa.CondRegex, X: tp("a"), Y: tp("(")}, false, "E_STEP_FAILED"},
		{"number <", &isa.Cond{Op: isa.CondNumber, X: tp("9"), Y: tp("10"), Cmp: "<"}, true, ""},
		{"number >= float", &isa.Cond{Op: isa.CondNumber, X: tp("${context.n}"), Y: tp("2.5"), Cmp: ">="}, true, ""},
		{"number !=", &isa.Cond{Op: isa.CondNumber, X: tp("1"), Y: tp("1.0"), Cmp: "!="}, false, ""},
		{"number bad", &isa.Cond{Op: isa.CondNumber, X: tp("x"), Y: tp("1"), Cmp: "<"}, false, "E_STEP_FAILED"},
		{"all", &isa.Cond{Op: isa.CondAll, Sub: []isa.Cond{*c(isa.CondEquals, "a", "a"), {Op: isa.CondStepOK, Name: "Prev"}}}, true, ""},
		{"all no", &isa.Cond{Op: isa.CondAll, Sub: []isa.Cond{*c(isa.CondEquals, "a", "a"), *c(isa.CondEquals, "a", "b")}}, false, ""},
		{"any", &isa.Cond{Op: isa.CondAny, Sub: []isa.Cond{*c(isa.CondEquals, "a", "b"), *c(isa.CondEquals, "a", "a")}}, true, ""},
		{"any no", &isa.Cond{Op: isa.CondAny, Sub: []isa.Cond{*c(isa.CondEquals, "a", "b")}}, false, ""},
		{"not", &isa.Cond{Op: isa.CondNot, Sub: []isa.Cond{*c(isa.CondEquals, "a", "b")}}, true, ""},
		{"missing var", c(isa.CondEquals, "${context.nope}", "x"), false, "E_VAR_MISSING"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := [][2]string{{vm.SigSuccess, "next"}, {vm.SigFailure, "next"}}
			p := build(t, N{ID: "main", Blocks: []B{
				{ID: "Prev", On: next},
				{ID: "Bad", On: next},
				{ID: "Check", When: tt.cond, On: [][2]string{{vm.SigSuccess, "end"}, {vm.SigSkipped, "end"}, {vm.SigFailure, "end"}}},
			}})
			p.Context = &isa.TValue{Kind: isa.TMap, Map: []isa.Field{
				{Key: "list", Val: *list(str("a"), str("b"))}, {Key: "n", Val: num("2.5")}}}
			f := &fake{script: map[string][]step.Result{"Bad": {fail(3)}}}
			r := run(t, p, f, func(c *vm.Config) {
				c.Dirs = dirs
				c.Env = func(k string) (string, bool) { return "/h", k == "HOME" }
			})
			if r.err != nil {
				t.Fatalf("Run() error = %v", r.err)
			}
			s := r.st.Steps["Check"]
			if tt.code != "" {
				if s.Status != vm.StepFailed || s.Error == nil || s.Error.Code != tt.code {
					t.Errorf("Check = %s, want failed with %s", jsonOf(t, s), tt.code)
				}
				return
			}
			if got := s.Status != vm.StepSkipped; got != tt.want {
				t.Errorf("cond = %v (Check %s), want %v", got, s.Status, tt.want)
			}
		})
	}
}
