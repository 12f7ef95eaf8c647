package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"smith/internal/stepfake"
	"smith/isa"
	"smith/lang"
	"smith/source"
	"smith/workers/agent"
	"smith/workers/provider"
	"smith/workers/step"
	"smith/workers/steprun"
	"smith/workers/text"
)

// mockRun runs a mock provider step with prompt and returns its result.
func mockRun(f *fixture, name, script, prompt string, edit func(r *step.Request)) step.Result {
	r := f.Req(isa.KindProvider, name)
	r.Providers = []string{"mock"}
	if script != "" {
		r.ProviderParams = []provider.Param{{Key: "script", Value: script}}
	}
	r.Prompt = prompt
	if edit != nil {
		edit(r)
	}
	return f.run.Run(context.Background(), r)
}

func TestMockScript(t *testing.T) {
	t.Parallel()
	const yamlScript = `- reply: one
- match: "^review"
  reply: reviewed
- reply: |
    two
    lines
- reply: what do you mean?
  signal: NEEDS_CLARIFICATION
`
	const jsonScript = `[{"reply": "one"}, {"match": "^review", "reply": "reviewed"}, {"reply": "two\nlines\n"},
		{"reply": "what do you mean?", "signal": "SIGNAL:NEEDS_CLARIFICATION"}]`
	calls := []struct{ prompt, want string }{
		{"first prompt", `signal=SIGNAL:SUCCESS exit=0 attempts=1 output="one" provider=mock tokens=3`},
		{"second prompt", `signal=SIGNAL:SUCCESS exit=0 attempts=1 output="two\nlines" provider=mock tokens=4`},
		{"review this", `signal=SIGNAL:SUCCESS exit=0 attempts=1 output="reviewed" provider=mock tokens=3`},
		{"again", `signal=SIGNAL:NEEDS_CLARIFICATION exit=0 attempts=1 output="what do you mean?" provider=mock tokens=5`},
		{"echo me back", `signal=SIGNAL:SUCCESS exit=0 attempts=1 output="echo me back" provider=mock tokens=6`},
	}
	for _, script := range []struct{ name, file, content string }{
		{"yaml", "mock/replies.yaml", yamlScript},
		{"json", "mock/replies.json", jsonScript},
	} {
		t.Run(script.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.Write(script.file, script.content)
			for _, c := range calls {
				got := mockRun(f, "Ask", script.file, c.prompt, nil)
				if stepfake.Describe(got) != c.want {
					t.Errorf("Run(mock %q) = %s, want %s", c.prompt, stepfake.Describe(got), c.want)
				}
			}
			// Another step has its own cursor.
			if got := mockRun(f, "Other", script.file, "x", nil); got.Output != "one" {
				t.Errorf("Run(mock, step Other) = %s, want output \"one\"", stepfake.Describe(got))
			}
		})
	}
}

func TestMockCursorSurvivesResume(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.Write("s.yaml", "- reply: one\n- reply: two\n")
	first := mockRun(f, "Ask", "s.yaml", "p", nil)
	// A new Registry value, as after smithvm resume, on the same RUN_ROOT.
	f.run = &agent.Runner{}
	second := mockRun(f, "Ask", "s.yaml", "p", nil)
	if first.Output != "one" || second.Output != "two" {
		t.Errorf("Run(mock) twice across registries = %q, %q, want \"one\", \"two\"", first.Output, second.Output)
	}
	b, _ := os.ReadFile(filepath.Join(f.RunRoot, "mock-cursors.json"))
	if want := "{\n  \"s.yaml#Ask\": {\n    \"used\": [\n      0,\n      1\n    ]\n  }\n}\n"; string(b) != want {
		t.Errorf("mock-cursors.json = %q, want %q", b, want)
	}
}

func TestMockExitCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		script   string
		attempts int
		want     string
	}{
		{"retry then succeed", "- reply: busy\n  exit_code: 1\n- reply: ok\n", 2,
			`signal=SIGNAL:SUCCESS exit=0 attempts=2 output="ok" provider=mock tokens=2`},
		{"retries exhausted", "- reply: busy\n  exit_code: 1\n- reply: busy\n  exit_code: 1\n", 2,
			`signal=SIGNAL:FAILURE exit=1 attempts=2 output="busy" provider=mock tokens=2`},
		{"invalid not retried", "- reply: bad\n  exit_code: 2\n- reply: ok\n", 3,
			`signal=SIGNAL:FAILURE exit=2 attempts=1 output="bad" provider=mock tokens=2`},
		{"timeout", "- reply: slow\n  exit_code: 124\n", 1,
			`signal=SIGNAL:TIMEOUT exit=124 attempts=1 output="slow" provider=mock tokens=2`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.Write("s.yaml", tt.script)
			got := mockRun(f, "Ask", "s.yaml", "prompt", func(r *step.Request) { r.Attempts = tt.attempts })
			if stepfake.Describe(got) != tt.want {
				t.Errorf("Run(mock %s) = %s, want %s", tt.name, stepfake.Describe(got), tt.want)
			}
		})
	}
}

func TestMockErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		script string
		want   stepfake.Want
	}{
		{"escaping script", "../../s.yaml", stepfake.Want{Signal: lang.SigFailure, Exit: -1, Code: source.EPathEscape, ErrHas: "mock script: path '../../s.yaml' resolves outside the project"}},
		{"missing script", "nope.yaml", stepfake.Want{Signal: lang.SigFailure, Exit: -1, Code: source.EExec, ErrHas: "mock script 'nope.yaml' cannot be read"}},
		{"bad script", "bad.yaml", stepfake.Want{Signal: lang.SigFailure, Exit: -1, Code: source.EParse, ErrHas: "mock script 'bad.yaml': line 1: unknown key 'repyl' (did you mean 'reply'?)"}},
		{"huge script", "huge.yaml", stepfake.Want{Signal: lang.SigFailure, Exit: -1, Code: source.ETooLarge, ErrHas: "mock script 'huge.yaml' is 10485761 bytes, more than the 10485760 bytes (10 MiB) a script may hold"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.Write("bad.yaml", "- repyl: x\n")
			if tt.script == "huge.yaml" {
				f.Write("huge.yaml", "- reply: "+strings.Repeat("x", steprun.MaxPrompt+1-len("- reply: ")))
			}
			tt.want.Check(t, tt.name, mockRun(f, "Ask", tt.script, "p", nil))
		})
	}
}

func TestMockEcho(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	got := mockRun(f, "Ask", "", "say  the\nsecret words\n", func(r *step.Request) {
		r.OutputFile = "reply.md"
		r.Mask = text.NewMasker([]string{"secret"})
	})
	if stepfake.Describe(got) != `signal=SIGNAL:SUCCESS exit=0 attempts=1 output="say  the\n*** words" provider=mock tokens=8` {
		t.Errorf("Run(mock echo) = %s", stepfake.Describe(got))
	}
	if c := f.Read("artifacts/Ask/reply.md"); c != "say  the\n*** words\n" {
		t.Errorf("Run(mock echo) output_file = %q, want the masked prompt", c)
	}
}

func TestMockDefaultsFromProviderDef(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.Write("s.yaml", "- reply: from defaults\n")
	got := mockRun(f, "Ask", "", "p", func(r *step.Request) {
		r.ProviderDefs = []provider.Def{{Name: "mock", Defaults: []provider.Param{{Key: "script", Value: "s.yaml"}}}}
	})
	if got.Output != "from defaults" {
		t.Errorf("Run(mock with defaults.script) = %s, want output \"from defaults\"", stepfake.Describe(got))
	}
}

// TestMockRepeatsACrashedCall: a numbered execution repeated after a crash
// (same Request.Execution, same try) gets the reply it got before; the next
// execution gets the next reply. Without this a resumed run would diverge
// from an uninterrupted one.
func TestMockRepeatsACrashedCall(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.Write("s.yaml", "- reply: one\n- reply: two\n- reply: three\n")
	exec := func(n int) string {
		return mockRun(f, "Ask", "s.yaml", "p", func(r *step.Request) { r.Execution = n }).Output
	}
	got := []string{exec(1), exec(2)}
	f.run = &agent.Runner{} // smithvm resume, after a crash during execution 2
	got = append(got, exec(2), exec(3))
	if want := []string{"one", "two", "two", "three"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("mock replies for executions 1, 2, 2 (repeated), 3 = %v, want %v", got, want)
	}
}
