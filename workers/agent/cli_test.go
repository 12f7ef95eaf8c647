package agent_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"smith/internal/stepfake"
	"smith/isa"
	"smith/lang"
	"smith/source"
	"smith/workers/proc"
	"smith/workers/provider"
	"smith/workers/step"
	"smith/workers/text"
)

func TestProviderTransport(t *testing.T) {
	t.Parallel()
	hasCat := exec.Command("/bin/sh", "-c", "command -v cat").Run() == nil
	tests := []struct {
		name   string
		setup  func(f *fixture, r *step.Request)
		output string // want Output; "@tmp" = a prompt file under RUN_ROOT/tmp
		cat    bool   // needs the system's cat
	}{
		{"argv from ${PROMPT}", func(f *fixture, r *step.Request) {
			r.ProviderDefs = []provider.Def{fake(f.t, "echo", "print", "<${PROMPT}>")}
		}, "<Say hi>", false},
		{"stdin by default", func(f *fixture, r *step.Request) {
			r.ProviderDefs = []provider.Def{fake(f.t, "echo", "cat")}
		}, "Say hi", false},
		{"temp_file from ${PROMPT_FILE}", func(f *fixture, r *step.Request) {
			r.ProviderDefs = []provider.Def{fake(f.t, "echo", "print", "${PROMPT_FILE}")}
		}, "@tmp", false},
		{"temp_file content", func(f *fixture, r *step.Request) {
			r.ProviderDefs = []provider.Def{{Name: "echo", Command: []string{"cat", "${PROMPT_FILE}"}}}
		}, "Say hi", true},
		{"step transport argv appends the prompt", func(f *fixture, r *step.Request) {
			r.ProviderDefs = []provider.Def{fake(f.t, "echo", "print")}
			r.Transport = &provider.Transport{Mode: "argv"}
		}, "Say hi", false},
		{"argv_template", func(f *fixture, r *step.Request) {
			r.ProviderDefs = []provider.Def{fake(f.t, "echo", "print")}
			r.Transport = &provider.Transport{Mode: "argv", ArgvTemplate: []string{"[${PROMPT}|${model}]"}}
			r.ProviderParams = []provider.Param{{Key: "model", Value: "big"}}
		}, "[Say hi|big]", false},
		{"provider transport temp_file appends the path", func(f *fixture, r *step.Request) {
			r.ProviderDefs = []provider.Def{{Name: "echo", Command: stepfake.Exe(f.t, "print"), Transport: &provider.Transport{Mode: "temp_file"}}}
		}, "@tmp", false},
		{"step overrides provider transport", func(f *fixture, r *step.Request) {
			r.ProviderDefs = []provider.Def{{Name: "echo", Command: stepfake.Exe(f.t, "cat"), Transport: &provider.Transport{Mode: "argv"}}}
			r.Transport = &provider.Transport{Mode: "stdin"}
		}, "Say hi", false},
		{"params over defaults", func(f *fixture, r *step.Request) {
			d := fake(f.t, "echo", "print", "${model}:${max_tokens}")
			d.Defaults = []provider.Param{{Key: "model", Value: "small"}, {Key: "max_tokens", Value: "10"}}
			r.ProviderDefs = []provider.Def{d}
			r.ProviderParams = []provider.Param{{Key: "max_tokens", Value: "99"}}
		}, "small:99", false},
		{"command_override", func(f *fixture, r *step.Request) {
			r.ProviderDefs = []provider.Def{fake(f.t, "echo", "print", "template")}
			r.CommandOverride = stepfake.Exe(f.t, "print", "override ${PROMPT}")
		}, "override Say hi", false},
		{"input_file as prompt on stdin", func(f *fixture, r *step.Request) {
			f.Write("in.txt", "from file\n")
			r.Prompt, r.InputFile = "", "in.txt"
			r.ProviderDefs = []provider.Def{fake(f.t, "echo", "cat")}
		}, "from file", false},
		{"prompt and input_file both reach the model", func(f *fixture, r *step.Request) {
			f.Write("in.txt", "file data")
			r.InputFile = "in.txt"
			r.ProviderDefs = []provider.Def{fake(f.t, "echo", "cat")}
		}, "Say hi\n\nfile data", false},
		{"input_file is not on stdin beside an argv prompt", func(f *fixture, r *step.Request) {
			f.Write("in.txt", "file data")
			r.InputFile = "in.txt"
			r.ProviderDefs = []provider.Def{fake(f.t, "echo", "stdin")}
			r.Transport = &provider.Transport{Mode: "argv", ArgvTemplate: []string{"${PROMPT}"}}
		}, "devnull\n0", false},
		{"model: over provider_params and defaults", func(f *fixture, r *step.Request) {
			d := fake(f.t, "echo", "print", "${model}")
			d.Defaults = []provider.Param{{Key: "model", Value: "small"}}
			r.ProviderDefs = []provider.Def{d}
			r.ProviderParams = []provider.Param{{Key: "model", Value: "big"}}
			r.Model = "opus"
		}, "opus", false},
		{"prompt_file", func(f *fixture, r *step.Request) {
			f.Write("prompts/p.md", "from prompt file")
			r.Prompt, r.PromptFile = "", "prompts/p.md"
			r.ProviderDefs = []provider.Def{fake(f.t, "echo", "print", "${PROMPT}")}
		}, "from prompt file", false},
		{"${INPUT_FILE} and ${OUTPUT_FILE}", func(f *fixture, r *step.Request) {
			f.Write("in.txt", "x")
			r.InputFile = "in.txt"
			r.ProviderDefs = []provider.Def{fake(f.t, "echo", "print", "${INPUT_FILE} ${OUTPUT_FILE}")}
			r.OutputFile = "o.txt"
		}, "@paths", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.cat && !hasCat {
				t.Skip("no cat")
			}
			f := newFixture(t)
			r := f.Req(isa.KindProvider, "Ask")
			r.Providers = []string{"echo"}
			r.Prompt = "Say hi"
			tt.setup(f, r)
			got := f.run.Run(context.Background(), r)
			want := tt.output
			switch want {
			case "@tmp":
				tmp := filepath.Join(f.RunRoot, "tmp")
				if filepath.Dir(got.Output) != tmp || !strings.HasPrefix(filepath.Base(got.Output), "Ask-prompt-") {
					t.Errorf("Run(%s) output %q, want a file in %s", tt.name, got.Output, tmp)
				}
				if _, err := os.Stat(got.Output); err == nil {
					t.Errorf("Run(%s) left the prompt file %s", tt.name, got.Output)
				}
				want = got.Output
			case "@paths":
				want = filepath.Join(f.Dirs.Workspace, "in.txt") + " " + filepath.Join(f.Dirs.Workspace, "artifacts", "Ask", "o.txt")
			}
			wantOK(want).Check(t, tt.name, got)
		})
	}
}

// wantOK is a successful single try with this output.
func wantOK(output string) stepfake.Want {
	return stepfake.Want{Signal: lang.SigSuccess, Attempts: 1, Output: output, CheckOut: true}
}

func TestProviderErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(f *fixture, r *step.Request)
		want  stepfake.Want
	}{
		{"unknown template key", func(f *fixture, r *step.Request) {
			r.ProviderDefs = []provider.Def{fake(f.t, "echo", "print", "${modle}")}
		}, stepfake.Want{Signal: lang.SigFailure, Exit: -1, Code: source.ETemplateKey,
			ErrHas: "provider 'echo' uses template key 'modle' that neither its defaults nor provider_params define (did you mean 'model'?)"}},
		{"unknown provider", func(f *fixture, r *step.Request) {
			r.Providers = []string{"cluade"}
		}, stepfake.Want{Signal: lang.SigFailure, Exit: -1, Code: source.EUnknownProv, ErrHas: "provider 'cluade' is neither a built-in preset nor a key of providers (did you mean 'claude'?)"}},
		{"bad transport", func(f *fixture, r *step.Request) {
			r.ProviderDefs = []provider.Def{fake(f.t, "echo", "cat")}
			r.Transport = &provider.Transport{Mode: "pipe"}
		}, stepfake.Want{Signal: lang.SigFailure, Exit: -1, Code: source.EExec, ErrHas: "prompt_transport mode 'pipe'"}},
		{"cli not found", func(f *fixture, r *step.Request) {
			r.ProviderDefs = []provider.Def{{Name: "echo", Command: []string{"smith-no-such-cli"}}}
		}, stepfake.Want{Signal: lang.SigFailure, Exit: 127, Code: source.EExec, ErrHas: "command 'smith-no-such-cli' not found"}},
		{"exit 2 not retried", func(f *fixture, r *step.Request) {
			r.ProviderDefs = []provider.Def{fake(f.t, "echo", "exit", "2")}
		}, stepfake.Want{Signal: lang.SigFailure, Exit: 2, Attempts: 1}},
		{"exit 1 retried", func(f *fixture, r *step.Request) {
			r.ProviderDefs = []provider.Def{fake(f.t, "echo", "exit", "1")}
		}, stepfake.Want{Signal: lang.SigFailure, Exit: 1, Attempts: 3}},
		{"timeout", func(f *fixture, r *step.Request) {
			r.ProviderDefs = []provider.Def{fake(f.t, "echo", "sleep", "20s")}
			r.Timeout = 50 * time.Millisecond
			r.Attempts = 1
		}, stepfake.Want{Signal: lang.SigTimeout, Exit: 124, Attempts: 1, Code: source.ETimeout, ErrHas: "provider 'echo' of step 'Ask' timed out"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			r := f.Req(isa.KindProvider, "Ask")
			r.Providers = []string{"echo"}
			r.Prompt = "Say hi"
			r.Attempts = 3
			tt.setup(f, r)
			tt.want.Check(t, tt.name, f.run.Run(context.Background(), r))
		})
	}
}

const (
	claudeOK     = `{"type":"result","subtype":"success","is_error":false,"result":"The answer is 42.\n","usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":100}}`
	claude429    = `{"type":"result","subtype":"success","is_error":true,"result":"API Error: 429 {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\"}}"}`
	claude401    = `{"type":"result","subtype":"success","is_error":true,"result":"Invalid API key · Please run /login"}`
	geminiOK     = `{"response":"Paris.","stats":{"models":{"gemini-2.5-pro":{"tokens":{"prompt":20,"candidates":3,"total":23}},"gemini-2.5-flash":{"tokens":{"total":7}}}}}`
	gemini503    = `{"response":null,"error":{"type":"ApiError","message":"The model is overloaded","code":503}}`
	gemini400    = `{"error":{"type":"ApiError","message":"bad request","code":400}}`
	codexOK      = "{\"type\":\"thread.started\",\"thread_id\":\"t1\"}\n{\"type\":\"turn.started\"}\n{\"type\":\"item.completed\",\"item\":{\"id\":\"i0\",\"type\":\"reasoning\",\"text\":\"thinking\"}}\n{\"type\":\"item.completed\",\"item\":{\"id\":\"i1\",\"type\":\"agent_message\",\"text\":\"done: ok\"}}\n{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":30,\"cached_input_tokens\":20,\"output_tokens\":4}}\n"
	codexFailed  = "{\"type\":\"thread.started\",\"thread_id\":\"t1\"}\n{\"type\":\"turn.failed\",\"error\":{\"message\":\"stream disconnected: network error\"}}\n"
	claudeSecret = `{"type":"result","is_error":false,"result":"key \u0073ecret!","usage":{"input_tokens":1,"output_tokens":1}}`
)

func TestProviderReplies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		provider string
		stdout   string
		want     stepfake.Want
		tokens   int
	}{
		{"claude", "claude", claudeOK, wantOK("The answer is 42."), 115},
		{"claude 429", "claude", claude429, stepfake.Want{Signal: lang.SigFailure, Exit: 1, Attempts: 2, Code: source.EExec, ErrHas: "provider 'claude' failed: rate limited by the model server (HTTP 429)"}, 0},
		{"claude 401", "claude", claude401, stepfake.Want{Signal: lang.SigFailure, Exit: 2, Attempts: 1, Code: source.EExec, ErrHas: "Invalid API key"}, 0},
		{"claude not json", "claude", "plain words\n", wantOK("plain words"), 0},
		{"claude masks decoded secrets", "claude", claudeSecret, wantOK("key ***!"), 2},
		{"gemini", "gemini", geminiOK, wantOK("Paris."), 30},
		{"gemini 503", "gemini", gemini503, stepfake.Want{Signal: lang.SigFailure, Exit: 1, Attempts: 2, Code: source.EExec, ErrHas: "overloaded"}, 0},
		{"gemini 400", "gemini", gemini400, stepfake.Want{Signal: lang.SigFailure, Exit: 2, Attempts: 1, Code: source.EExec, ErrHas: "bad request"}, 0},
		{"codex", "codex", codexOK, wantOK("done: ok"), 34},
		{"codex failed", "codex", codexFailed, stepfake.Want{Signal: lang.SigFailure, Exit: 1, Attempts: 2, Code: source.EExec, ErrHas: "network error"}, 0},
		{"own provider keeps raw json", "mine", claudeOK, wantOK(claudeOK), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			r := f.Req(isa.KindProvider, "Ask")
			r.Providers = []string{tt.provider}
			r.ProviderDefs = []provider.Def{fake(t, tt.provider, "print", tt.stdout)}
			r.Prompt = "question"
			r.Attempts = 2
			r.Mask = text.NewMasker([]string{"secret"})
			got := f.run.Run(context.Background(), r)
			tt.want.Check(t, tt.name, got)
			if got.Tokens != tt.tokens || got.Provider != tt.provider {
				t.Errorf("Run(%s) tokens %d provider %q, want %d %q", tt.name, got.Tokens, got.Provider, tt.tokens, tt.provider)
			}
		})
	}
}

func TestProviderFallback(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := f.Req(isa.KindProvider, "Ask")
	r.Providers = []string{"claude", "gemini"}
	r.ProviderDefs = []provider.Def{fake(t, "claude", "print", claude429), fake(t, "gemini", "print", geminiOK)}
	r.Prompt = "capital of France?"
	r.Attempts, r.Backoff = 2, time.Second
	r.OutputFile = "answer.txt"
	var retries []string
	r.OnRetry = func(attempt, exit int, wait time.Duration) {
		retries = append(retries, fmt.Sprintf("%d:%d:%s", attempt, exit, wait))
	}
	got := f.run.Run(context.Background(), r)
	if stepfake.Describe(got) != `signal=SIGNAL:SUCCESS exit=0 attempts=3 output="Paris." provider=gemini tokens=30` {
		t.Errorf("Run(claude 429, gemini) = %s, want success from gemini after 3 tries", stepfake.Describe(got))
	}
	if fmt.Sprint(retries) != "[1:1:1s]" || fmt.Sprint(f.Pauses) != "[1s]" {
		t.Errorf("Run(claude 429, gemini) retries %v pauses %v, want [1:1:1s] [1s]", retries, f.Pauses)
	}
	if c := f.Read("artifacts/Ask/answer.txt"); c != "Paris." {
		t.Errorf("Run(claude 429, gemini) output_file = %q, want %q", c, "Paris.")
	}
}

func TestProviderNoFallbackOnInvalid(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := f.Req(isa.KindProvider, "Ask")
	r.Providers = []string{"claude", "gemini"}
	r.ProviderDefs = []provider.Def{fake(t, "claude", "print", claude401), fake(t, "gemini", "print", geminiOK)}
	r.Prompt = "q"
	got := f.run.Run(context.Background(), r)
	if got.Provider != "claude" || got.ExitCode != 2 {
		t.Errorf("Run(claude 401, gemini) = %s, want exit 2 from claude", stepfake.Describe(got))
	}
}

func TestProviderOutputFileByCLI(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := f.Req(isa.KindProvider, "Ask")
	r.Providers = []string{"echo"}
	// The CLI is told where the file is; Smith must not overwrite it with stdout.
	r.ProviderDefs = []provider.Def{fake(t, "echo", "print", "wrote ${OUTPUT_FILE}")}
	r.OutputFile = "o.txt"
	f.Write("artifacts/Ask/o.txt", "by the cli")
	got := f.run.Run(context.Background(), r)
	if got.Signal != lang.SigSuccess || f.Read("artifacts/Ask/o.txt") != "by the cli" {
		t.Errorf("Run(${OUTPUT_FILE}) = %s, file %q, want the CLI's file untouched", stepfake.Describe(got), f.Read("artifacts/Ask/o.txt"))
	}
}

func TestProviderJSONCapture(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := f.Req(isa.KindProvider, "Ask")
	r.Providers = []string{"claude"}
	r.ProviderDefs = []provider.Def{fake(t, "claude", "print", `{"type":"result","is_error":false,"result":"{\"files\":[\"a.go\"]}"}`)}
	r.OutputCapture = "json"
	got := f.run.Run(context.Background(), r)
	if !got.HasJSON || fmt.Sprint(got.JSON) != "map[files:[a.go]]" {
		t.Errorf("Run(claude json reply) json = %v (%v), want map[files:[a.go]]", got.JSON, got.HasJSON)
	}
}

// A reply that a preset's CLI writes to a file (gemini: StdoutFile) is
// treated as a command step's stdout: masked, cut to the in-memory cap in
// the result and, whole, spilled to RUN_ROOT/logs/<Step>-stdout.log.
func TestProviderStdoutFileSpill(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := f.Req(isa.KindProvider, "Ask")
	r.Providers = []string{"gemini"}
	r.ProviderDefs = []provider.Def{fake(t, "gemini", "cat")}
	r.Prompt = strings.Repeat("x", proc.DefaultMemCap+100) + " secret tail"
	r.Attempts = 1
	r.Mask = text.NewMasker([]string{"secret"})
	got := f.run.Run(context.Background(), r)
	if got.Signal != lang.SigSuccess {
		t.Fatalf("Run = %s, want success", stepfake.Describe(got))
	}
	want := filepath.Join(r.RunRoot, "logs", "Ask-stdout.log")
	if !got.Truncated || got.SpillStdout != want {
		t.Fatalf("Run: truncated %v spill %q, want true %q", got.Truncated, got.SpillStdout, want)
	}
	b, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	if masked := strings.Replace(r.Prompt, "secret", "***", 1); string(b) != masked {
		t.Errorf("spill holds %s, want the whole masked reply (%d bytes)", stepfake.Short(string(b)), len(masked))
	}
	if len(got.Output) > proc.DefaultMemCap {
		t.Errorf("output is %d bytes, want at most the in-memory cap %d", len(got.Output), proc.DefaultMemCap)
	}
	if ents, _ := os.ReadDir(filepath.Join(r.RunRoot, "tmp")); len(ents) != 0 {
		t.Errorf("RUN_ROOT/tmp holds %v after the step, want nothing", ents)
	}
}

// The file a preset's CLI writes its raw, unmasked reply to (gemini:
// StdoutFile) has no name in the run folder while the CLI runs, so that a
// smithvm killed mid-step leaves no raw reply behind.
func TestProviderStdoutFileUnnamed(t *testing.T) {
	t.Parallel()
	ls, err := exec.LookPath("ls")
	if err != nil {
		t.Skip("no ls")
	}
	f := newFixture(t)
	r := f.Req(isa.KindProvider, "Ask")
	tmp := filepath.Join(r.RunRoot, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	r.Providers = []string{"gemini"}
	r.ProviderDefs = []provider.Def{{Name: "gemini", Command: []string{ls, "-A", tmp}}}
	r.Prompt = "question"
	r.Attempts = 1
	got := f.run.Run(context.Background(), r)
	if got.Signal != lang.SigSuccess || strings.Contains(got.Output, "-stdout-") {
		t.Errorf("Run(ls RUN_ROOT/tmp) = %s, want success with no stdout file listed", stepfake.Describe(got))
	}
}
