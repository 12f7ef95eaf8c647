package vm_test

import (
	"strings"
	"testing"

	"smith/isa"
	"smith/vm"
	"smith/workers/step"
)

// varsProgram runs Prev (scripted), then Use with argv [tmpl]; Use's
// failure goes to Handler.
func varsProgram(t *testing.T, tmpl string, allow []string) *isa.Program {
	use := cmd(tmpl)
	use.AllowMissing = allow
	p := build(t, N{ID: "main", Blocks: []B{
		{ID: "Prev", On: ok},
		{ID: "Loop", Items: list(str("only")), As: "f", Body: []B{
			{ID: "Use", Agent: "eng", Step: use, On: [][2]string{{vm.SigSuccess, "next"}, {vm.SigFailure, "continue"}}},
		}, On: ok},
	}})
	p.EnvAllow = []string{"HOME"}
	p.Secrets = []string{"TOKEN"}
	p.Agents = []isa.AgentDef{{Name: "eng", Providers: []string{"mock"}}}
	p.Context = &isa.TValue{Kind: isa.TMap, Map: []isa.Field{
		{Key: "a", Val: isa.TValue{Kind: isa.TMap, Map: []isa.Field{{Key: "b", Val: str("deep")}}}},
		{Key: "n", Val: num("2.5")},
	}}
	return p
}

func TestVariables(t *testing.T) {
	prev := step.Result{Signal: vm.SigSuccess, ExitCode: 0, Output: "hello", Lines: []string{"l1", "l2"},
		JSON: map[string]any{"result": map[string]any{"files": []any{"f0.go", "f1.go"}}, "n": 3.0}, HasJSON: true,
		Duration: 1500000000, Attempts: 1}
	tests := []struct {
		name, tmpl string
		allow      []string
		want       string
		code       string // E_* when the step fails instead
	}{
		{"item", "${item}", nil, "only", ""},
		{"as name", "${f}-x", nil, "only-x", ""},
		{"loop index total", "${loop.index}/${loop.total}", nil, "0/1", ""},
		{"exit code", "${steps.Prev.exit_code}", nil, "0", ""},
		{"output", "[${steps.Prev.output}]", nil, "[hello]", ""},
		{"lines", "${steps.Prev.lines}", nil, `["l1","l2"]`, ""},
		{"lines index", "${steps.Prev.lines[1]}", nil, "l2", ""},
		{"json path", "${steps.Prev.json.result.files[0]}", nil, "f0.go", ""},
		{"json number", "n=${steps.Prev.json.n}", nil, "n=3", ""},
		{"json object in string", "x ${steps.Prev.json.result}", nil, `x {"files":["f0.go","f1.go"]}`, ""},
		{"duration", "${steps.Prev.duration}", nil, "1.5", ""},
		{"status", "${steps.Prev.status}", nil, "completed", ""},
		{"context path", "${context.a.b}", nil, "deep", ""},
		{"context number", "${context.n}", nil, "2.5", ""},
		{"env allowed", "${env.HOME}", nil, "/home/u", ""},
		{"env secret", "${env.TOKEN}", nil, "s3cret", ""},
		{"env not allowed", "${env.PATH}", nil, "", "E_ENV_NOT_ALLOWED"},
		{"env allow list empty", "${env.NOPE}", nil, "", "E_ENV_NOT_ALLOWED"},
		{"run id", "${run.id}", nil, "r1", ""},
		{"run timestamp", "${run.timestamp_utc}", nil, "20250301T120001Z", ""},
		{"agent", "${agent.name}:${agent.inbox}", nil, "eng:agents/eng/inbox", ""},
		{"missing context", "${context.nope}", nil, "", "E_VAR_MISSING"},
		{"missing step", "${steps.Nope.output}", nil, "", "E_VAR_MISSING"},
		{"missing json path", "${steps.Prev.json.result.files[9]}", nil, "", "E_VAR_MISSING"},
		{"allow missing", "a${context.nope}b", []string{"context.nope"}, "ab", ""},
		{"literal", "plain", nil, "plain", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := varsProgram(t, tt.tmpl, tt.allow)
			if tt.name == "env allow list empty" {
				p.EnvAllow = nil
			}
			env := map[string]string{"HOME": "/home/u", "TOKEN": "s3cret", "PATH": "/bin"}
			f := &fake{script: map[string][]step.Result{"Prev": {prev}}}
			r := run(t, p, f, func(c *vm.Config) {
				c.Env = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
			})
			if r.err != nil {
				t.Fatalf("Run() error = %v", r.err)
			}
			use := r.st.Steps["Loop"].Iterations[0].Steps["Use"]
			if tt.code != "" {
				if use.Status != vm.StepFailed || use.Error == nil || use.Error.Code != tt.code {
					t.Errorf("substitute(%q): Use = %s, want failed with %s", tt.tmpl, jsonOf(t, use), tt.code)
				}
				if strings.Contains(strings.Join(f.calls, ","), "Use") {
					t.Errorf("Use was run despite %s", tt.code)
				}
				return
			}
			if got := f.req(t, "Use").Argv[0]; got != tt.want {
				t.Errorf("substitute(%q) = %q, want %q", tt.tmpl, got, tt.want)
			}
		})
	}
}

func TestEnvUnsetButAllowed(t *testing.T) {
	p := varsProgram(t, "${env.HOME}", nil)
	r := run(t, p, &fake{}, func(c *vm.Config) {
		c.Env = func(k string) (string, bool) { return "xval", k == "TOKEN" }
	})
	use := r.st.Steps["Loop"].Iterations[0].Steps["Use"]
	if use.Error == nil || use.Error.Code != "E_VAR_MISSING" {
		t.Errorf("Use = %s, want E_VAR_MISSING", jsonOf(t, use))
	}
}

func TestSecretsMasked(t *testing.T) {
	p := varsProgram(t, "${env.TOKEN}", nil)
	out := step.Result{Signal: vm.SigFailure, ExitCode: 1, Output: "leak s3cret", Err: &stepErr{"boom s3cret"}}
	f := &fake{script: map[string][]step.Result{"Use": {out}}}
	r := run(t, p, f, func(c *vm.Config) {
		c.Env = func(k string) (string, bool) { return "s3cret", k == "TOKEN" || k == "HOME" }
	})
	if f.req(t, "Use").Mask.String("s3cret") != "***" {
		t.Errorf("request masker does not mask the secret")
	}
	if s := jsonOf(t, r.st) + strings.Join(r.console, "\n") + jsonOf(t, r.events); strings.Contains(s, "s3cret") {
		t.Errorf("a secret leaked into the state or events")
	}
}

type stepErr struct{ msg string }

func (e *stepErr) Error() string { return e.msg }

// TestLinesOfTextOutput: ${steps.S.lines} is S's output split into lines
// whatever its output_capture; only state.json's lines field depends on it.
func TestLinesOfTextOutput(t *testing.T) {
	tests := []struct{ name, tmpl, want string }{
		{"whole list", "${steps.Prev.lines}", `["a","b"]`},
		{"index", "${steps.Prev.lines[1]}", "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := varsProgram(t, tt.tmpl, nil)
			f := &fake{script: map[string][]step.Result{"Prev": {{Signal: vm.SigSuccess, Output: "a\nb", Attempts: 1}}}}
			p.Secrets = nil // varsProgram declares one; this test needs none
			r := run(t, p, f, nil)
			if r.err != nil {
				t.Fatalf("Run() error = %v", r.err)
			}
			if got := f.req(t, "Use").Argv[0]; got != tt.want {
				t.Errorf("substitute(%q) = %q, want %q", tt.tmpl, got, tt.want)
			}
			if r.st.Steps["Prev"].Lines != nil {
				t.Errorf("state lines of a text step = %v, want null (CONTRACT 6)", r.st.Steps["Prev"].Lines)
			}
		})
	}
}
