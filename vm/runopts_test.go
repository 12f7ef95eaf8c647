package vm_test

import (
	"slices"
	"strings"
	"testing"

	"smith/compiler"
	"smith/isa"
	"smith/vm"
	"smith/workers/step"
)

// compileDoc compiles a YAML workflow or a manifest with the real compiler.
func compileDoc(t *testing.T, file, src string) *isa.Program {
	t.Helper()
	res, ds := compiler.Compile(file, []byte(src), compiler.Options{})
	if res.Prog == nil || ds.HasErrors() {
		t.Fatalf("Compile(%s):\n%s", file, ds.Error())
	}
	return res.Prog
}

func envOf(vs []step.EnvVar) string {
	var b []string
	for _, v := range vs {
		b = append(b, v.Name+"="+v.Value)
	}
	return strings.Join(b, " ")
}

// TestRunOptionsReachRequest: model and permissions (step over agent over
// defaults), provider_params.model, the document's env under the step's,
// and a provider entry's own env and secrets reach the worker's Request in
// both formats (CONTRACT 5).
func TestRunOptionsReachRequest(t *testing.T) {
	env := func(name string) (string, bool) {
		if name == "KEY" {
			return "sekrit", true
		}
		return "", false
	}
	yaml := `version: "1.0"
name: opts
strict_flow: false
context: {url: "http://127.0.0.1:1"}
secrets: [KEY]
env: {A: doc, B: doc}
defaults: {model: dm, permissions: read, timeout: 7, retry: {attempts: 3}}
providers:
  claude: {env: {BASE: "${context.url}"}, secrets: [KEY]}
agents:
  eng: {provider: claude, model: am, permissions: full}
steps:
  - {name: Plain, provider: claude, prompt: hi}
  - {name: Agent, agent: eng, prompt: hi}
  - {name: Own, agent: eng, model: sm, permissions: edit, prompt: hi, timeout: 9, env: {B: step}}
  - {name: Params, provider: claude, prompt: hi, provider_params: {model: pm}}
`
	f := &fake{}
	r := run(t, compileDoc(t, "w.yaml", yaml), f, func(c *vm.Config) { c.Env = env })
	if r.err != nil {
		t.Fatalf("run: %v", r.err)
	}
	for _, tt := range []struct {
		step, model, perm, env string
		timeout                string
		attempts               int
	}{
		{"Plain", "dm", "read", "A=doc B=doc", "7s", 3},
		{"Agent", "am", "full", "A=doc B=doc", "7s", 3},
		{"Own", "sm", "edit", "A=doc B=doc B=step", "9s", 3},
		{"Params", "pm", "read", "A=doc B=doc", "7s", 3},
	} {
		req := f.req(t, tt.step)
		if req.Model != tt.model || req.Permissions != tt.perm || envOf(req.Env) != tt.env ||
			req.Timeout.String() != tt.timeout || req.Attempts != tt.attempts {
			t.Errorf("%s: model %q permissions %q env %q timeout %s attempts %d, want %q %q %q %s %d", tt.step,
				req.Model, req.Permissions, envOf(req.Env), req.Timeout, req.Attempts, tt.model, tt.perm, tt.env, tt.timeout, tt.attempts)
		}
		i := slices.IndexFunc(req.ProviderDefs, func(d step.ProviderDef) bool { return d.Name == "claude" })
		if i < 0 || envOf(req.ProviderDefs[i].Env) != "BASE=http://127.0.0.1:1" || envOf(req.ProviderDefs[i].Secrets) != "KEY=sekrit" {
			t.Errorf("%s: provider defs %+v, want claude with env BASE and secret KEY", tt.step, req.ProviderDefs)
		}
	}

	manifest := `{"version": "1", "entry": "Node:N",
  "secrets": ["KEY"], "env_allow": ["GOPATH"], "env": {"A": "doc"},
  "defaults": {"model": "dm", "permissions": "read", "timeout": 5},
  "providers": {"codex": {"env": {"OPENAI_BASE_URL": "http://127.0.0.1:2"}, "secrets": ["KEY"]}},
  "workers": {"Worker:W": {"provider": "codex", "model": "wm", "permissions": "edit"},
              "Worker:D": {"provider": "codex"}},
  "nodes": {"Node:N": {"entry_block": "Block:A", "blocks": {
    "Block:A": {"worker": "Worker:W", "timeout": 3, "transitions": [{"on_signal": "SIGNAL:SUCCESS", "action": "JUMP:B"}, {"on_signal": "SIGNAL:FAIL_DEFAULT", "action": "FAIL:a"}]},
    "Block:B": {"worker": "Worker:D", "transitions": [{"on_signal": "SIGNAL:SUCCESS", "action": "END"}, {"on_signal": "SIGNAL:FAIL_DEFAULT", "action": "FAIL:b"}]}}}}}`
	f = &fake{}
	r = run(t, compileDoc(t, "workflows.json", manifest), f, func(c *vm.Config) { c.Env = env })
	if r.err != nil {
		t.Fatalf("run manifest: %v", r.err)
	}
	a, b := f.req(t, "Block:A"), f.req(t, "Block:B")
	if a.Model != "wm" || a.Permissions != "edit" || a.Timeout.String() != "3s" || envOf(a.Env) != "A=doc" || envOf(a.Secrets) != "KEY=sekrit" {
		t.Errorf("Block:A: model %q permissions %q timeout %s env %q secrets %q", a.Model, a.Permissions, a.Timeout, envOf(a.Env), envOf(a.Secrets))
	}
	if b.Model != "dm" || b.Permissions != "read" || b.Timeout.String() != "5s" {
		t.Errorf("Block:B: model %q permissions %q timeout %s, want the defaults", b.Model, b.Permissions, b.Timeout)
	}
	if len(a.ProviderDefs) != 1 || envOf(a.ProviderDefs[0].Env) != "OPENAI_BASE_URL=http://127.0.0.1:2" {
		t.Errorf("Block:A provider defs %+v", a.ProviderDefs)
	}
}

// TestProviderFallbackIsLogged: a fallback from one provider to the next is
// a WARNING on the console and a provider_fallback event (CONTRACT 5).
func TestProviderFallbackIsLogged(t *testing.T) {
	p := compileDoc(t, "w.yaml", `version: "1.0"
name: fb
strict_flow: false
steps:
  - {name: Ask, provider: [claude, codex], prompt: hi}
`)
	f := &fake{before: func(req *step.Request) { req.OnFallback("claude", "codex", "HTTP 529 overloaded") }}
	r := run(t, p, f, nil)
	want := "WARNING: Step 'Ask': provider 'claude' failed (HTTP 529 overloaded); trying 'codex'."
	if !slices.Contains(r.console, want) {
		t.Errorf("console %q lacks %q", r.console, want)
	}
	i := slices.IndexFunc(r.events, func(e vm.Event) bool { return e.Kind == vm.EvProviderFallback })
	if i < 0 || r.events[i].Provider != "claude" || r.events[i].Next != "codex" || r.events[i].Level != vm.LevelWarning {
		t.Errorf("events %+v lack a provider_fallback from claude to codex", r.events)
	}
}

// TestReplayNeedsNoSecrets: with --replay no secret is required up front;
// a step that lists a missing secret in its own secrets: fails with
// E_SECRET_MISSING; without --replay the run does not start.
func TestReplayNeedsNoSecrets(t *testing.T) {
	p := compileDoc(t, "w.yaml", `version: "1.0"
name: rp
strict_flow: false
secrets: [KEY]
steps:
  - {name: Ask, provider: claude, prompt: hi}
  - {name: Uses, command: ["true"], secrets: [KEY]}
`)
	r := run(t, p, &fake{}, nil)
	if codeOf(r.err) != "E_SECRET_MISSING" || r.st != nil {
		t.Fatalf("without replay: err %v state %v, want E_SECRET_MISSING before the run", r.err, r.st)
	}
	f := &fake{}
	r = run(t, p, f, func(c *vm.Config) { c.Replaying = true })
	if !slices.Contains(f.calls, "Ask") || slices.Contains(f.calls, "Uses") {
		t.Errorf("calls %v, want Ask run and Uses failed before running", f.calls)
	}
	if r.st == nil || r.st.Steps["Uses"] == nil || r.st.Steps["Uses"].Status != vm.StepFailed {
		t.Fatalf("state %+v, want Uses failed", r.st)
	}
	if !strings.Contains(strings.Join(r.console, "\n"), "secret 'KEY' is not set") {
		t.Errorf("console %q does not say which secret is missing", r.console)
	}
}
