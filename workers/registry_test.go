package workers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"smith/internal/stepfake"
	"smith/internal/testchild"
	"smith/isa"
	"smith/lang"
	"smith/source"
	"smith/workers/agent"
	"smith/workers/builtin"
	"smith/workers/proc"
	"smith/workers/provider"
	"smith/workers/step"
	"smith/workers/text"
)

func TestMain(m *testing.M) {
	testchild.Main()
	os.Exit(m.Run())
}

// A fixture is one project (BASE, WORKSPACE, a RUN_ROOT) and a Registry with a
// fake clock and pause (internal/stepfake).
type fixture struct {
	*stepfake.Project
	stepfake.Clock
	t   *testing.T
	reg *Registry
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{Project: stepfake.NewProject(t), t: t}
	f.reg = &Registry{Runner: agent.Runner{Env: f.Env()}}
	return f
}

func TestRunCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(f *fixture, r *step.Request)
		want  stepfake.Want
	}{
		{
			name:  "success",
			setup: func(f *fixture, r *step.Request) { r.Argv = stepfake.Exe(f.t, "print", "hello\n\n", "warn") },
			want:  stepfake.Want{Signal: lang.SigSuccess, Exit: 0, Attempts: 1, Output: "hello", CheckOut: true},
		},
		{
			name:  "failure",
			setup: func(f *fixture, r *step.Request) { r.Argv = stepfake.Exe(f.t, "exit", "3") },
			want:  stepfake.Want{Signal: lang.SigFailure, Exit: 3, Attempts: 1},
		},
		{
			name:  "not found",
			setup: func(f *fixture, r *step.Request) { r.Argv = []string{"smith-no-such-command"} },
			want:  stepfake.Want{Signal: lang.SigFailure, Exit: 127, Attempts: 1, Code: source.EExec, ErrHas: "command 'smith-no-such-command' not found"},
		},
		{
			name:  "empty argv",
			setup: func(f *fixture, r *step.Request) { r.Argv = nil },
			want:  stepfake.Want{Signal: lang.SigFailure, Exit: -1, Code: source.EExec, ErrHas: "empty command"},
		},
		{
			name: "timeout",
			setup: func(f *fixture, r *step.Request) {
				r.Argv = stepfake.Exe(f.t, "sleep", "20s")
				r.Timeout = 100 * time.Millisecond
			},
			want: stepfake.Want{Signal: lang.SigTimeout, Exit: 124, Attempts: 1, Code: source.ETimeout, ErrHas: "timed out"},
		},
		{
			name: "stdin from input_file",
			setup: func(f *fixture, r *step.Request) {
				f.Write("in/data.txt", "line one\nline two\n")
				r.Argv = stepfake.Exe(f.t, "cat")
				r.InputFile = "in/data.txt"
			},
			want: stepfake.Want{Signal: lang.SigSuccess, Attempts: 1, Output: "line one\nline two", CheckOut: true},
		},
		{
			name:  "stdin is /dev/null",
			setup: func(f *fixture, r *step.Request) { r.Argv = stepfake.Exe(f.t, "stdin") },
			want:  stepfake.Want{Signal: lang.SigSuccess, Attempts: 1, Output: "devnull\n0", CheckOut: true},
		},
		{
			name: "missing input_file",
			setup: func(f *fixture, r *step.Request) {
				r.Argv = stepfake.Exe(f.t, "cat")
				r.InputFile = "nope.txt"
			},
			want: stepfake.Want{Signal: lang.SigFailure, Exit: -1, Code: source.EExec, ErrHas: "input_file 'nope.txt' cannot be read"},
		},
		{
			name: "secrets masked",
			setup: func(f *fixture, r *step.Request) {
				r.Argv = stepfake.Exe(f.t, "print", "token=hunter2\n")
				r.Mask = text.NewMasker([]string{"hunter2"})
			},
			want: stepfake.Want{Signal: lang.SigSuccess, Attempts: 1, Output: "token=***", CheckOut: true},
		},
		{
			name:  "internal worker not available",
			setup: func(f *fixture, r *step.Request) { r.Kind, r.Worker = isa.KindInternal, "Internal:TestRunner" },
			want:  stepfake.Want{Signal: lang.SigFailure, Exit: -1, Code: source.EExec, ErrHas: "internal worker 'Internal:TestRunner' is not available yet"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			r := f.Req(isa.KindCommand, "Step")
			tt.setup(f, r)
			tt.want.Check(t, tt.name, f.reg.Run(context.Background(), r))
		})
	}
}

func TestRunInternalTable(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.reg.Internal = map[string]builtin.Func{
		"Internal:Hello": func(ctx context.Context, _ builtin.Env, req *step.Request) step.Result {
			return step.Result{Signal: lang.SigSuccess, Output: "hello from " + req.Step}
		},
	}
	r := f.Req(isa.KindInternal, "Greet")
	r.Worker = "Internal:Hello"
	stepfake.Want{Signal: lang.SigSuccess, Attempts: 1, Output: "hello from Greet", CheckOut: true}.Check(t, "Internal:Hello", f.reg.Run(context.Background(), r))
}

func TestRunRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		argv      []string
		attempts  int
		wantTries int
		wantExit  int
		wantRetry string // the OnRetry calls
	}{
		{"exit 1 retried", []string{"exit", "1"}, 3, 3, 1, "[1:1:2s 2:1:2s]"},
		{"exit 124 retried", []string{"exit", "124"}, 2, 2, 124, "[1:124:2s]"},
		{"exit 2 not retried", []string{"exit", "2"}, 3, 1, 2, "[]"},
		{"success not retried", []string{"exit", "0"}, 3, 1, 0, "[]"},
		{"one attempt", []string{"exit", "1"}, 0, 1, 1, "[]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			r := f.Req(isa.KindCommand, "Retry")
			r.Argv = stepfake.Exe(t, tt.argv...)
			r.Attempts, r.Backoff = tt.attempts, 2*time.Second
			var retries []string
			r.OnRetry = func(attempt, exit int, wait time.Duration) {
				retries = append(retries, fmt.Sprintf("%d:%d:%s", attempt, exit, wait))
			}
			var ids []int
			r.AttemptID = func(n int) string { ids = append(ids, n); return fmt.Sprint(n) }
			got := f.reg.Run(context.Background(), r)
			if got.Attempts != tt.wantTries || got.ExitCode != tt.wantExit || fmt.Sprint(retries) != tt.wantRetry {
				t.Errorf("Run(%v) = %s, retries %v, want attempts=%d exit=%d retries %s", tt.argv, stepfake.Describe(got), retries, tt.wantTries, tt.wantExit, tt.wantRetry)
			}
			if len(ids) != tt.wantTries || len(f.Pauses) != tt.wantTries-1 {
				t.Errorf("Run(%v): attempt ids %v and pauses %v, want %d tries", tt.argv, ids, f.Pauses, tt.wantTries)
			}
		})
	}
}

func TestRunTimeoutRetried(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := f.Req(isa.KindCommand, "Slow")
	r.Argv = stepfake.Exe(t, "sleep", "20s")
	r.Timeout, r.Attempts = 50*time.Millisecond, 2
	stepfake.Want{Signal: lang.SigTimeout, Exit: 124, Attempts: 2, Code: source.ETimeout, ErrHas: "timed out"}.Check(t, "sleep 20s", f.reg.Run(context.Background(), r))
}

func TestRunOutputFile(t *testing.T) {
	t.Parallel()
	const big = 3 << 20
	tests := []struct {
		name      string
		argv      []string
		output    string
		mask      []string
		want      string // the file's content ("" = pattern(big))
		truncated bool
	}{
		{"whole stdout", []string{"print", "a\nb\n\n", ""}, "out/result.txt", nil, "a\nb\n\n", false},
		{"masked", []string{"print", "key=s3cret\n", ""}, "r.txt", []string{"s3cret"}, "key=***\n", false},
		{"3 MB with spill", []string{"out", fmt.Sprint(big)}, "big.txt", nil, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.Write("artifacts/Gen/"+tt.output, "old content that must be replaced")
			r := f.Req(isa.KindCommand, "Gen")
			r.Argv = stepfake.Exe(t, tt.argv...)
			r.OutputFile = tt.output
			r.Mask = text.NewMasker(tt.mask)
			got := f.reg.Run(context.Background(), r)
			content := f.Read("artifacts/Gen/" + tt.output)
			wantContent := tt.want
			if wantContent == "" {
				wantContent = string(testchild.Pattern(big))
			}
			if got.Signal != lang.SigSuccess || content != wantContent || got.Truncated != tt.truncated {
				t.Errorf("Run(%v) = %s truncated=%v, output_file %q, want success truncated=%v, file %q",
					tt.argv, stepfake.Describe(got), got.Truncated, stepfake.Short(content), tt.truncated, stepfake.Short(wantContent))
			}
			if tt.truncated {
				spill := filepath.Join(f.RunRoot, "logs", "Gen-stdout.log")
				b, _ := os.ReadFile(spill)
				if got.SpillStdout != spill || len(b) != big || len(got.Output) != proc.DefaultMemCap {
					t.Errorf("Run(%v): spill %q (%d bytes), output %d bytes, want %q with %d bytes and %d in memory",
						tt.argv, got.SpillStdout, len(b), len(got.Output), spill, big, proc.DefaultMemCap)
				}
			}
		})
	}
}

func TestRunStderrLog(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	want := filepath.Join(f.RunRoot, "logs", "Logged-stderr.log")
	// Two runs of the step (iterations 0 and 1 of a loop), the second
	// retried once: the log keeps every try that wrote stderr under its
	// header.
	for i, attempts := range []int{1, 2} {
		r := f.Req(isa.KindCommand, "Logged")
		r.Iteration = fmt.Sprint(i)
		r.Attempts = attempts
		r.Argv = stepfake.Exe(t, "print", "out", fmt.Sprintf("error %d\n", i))
		if attempts > 1 {
			r.Argv = stepfake.Exe(t, "exit", "1", "failed\n")
		}
		got := f.reg.Run(context.Background(), r)
		if got.StderrLog != want {
			t.Errorf("Run(print) stderr log %q, want %q", got.StderrLog, want)
		}
	}
	b, err := os.ReadFile(want)
	wantLog := "--- attempt 1, iteration 0 ---\nerror 0\n--- attempt 1, iteration 1 ---\nfailed\n--- attempt 2, iteration 1 ---\nfailed\n"
	if err != nil || string(b) != wantLog {
		t.Errorf("stderr log = %q (%v), want %q", b, err, wantLog)
	}
}

func TestRunCapture(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		out        string
		capture    string
		allowParse bool
		want       stepfake.Want
		wantLines  string
		wantJSON   string
	}{
		{name: "lines", out: "a\nb\nc\n\n", capture: "lines", want: stepfake.Want{Signal: lang.SigSuccess}, wantLines: `["a" "b" "c"]`},
		{name: "lines empty", out: "", capture: "lines", want: stepfake.Want{Signal: lang.SigSuccess}, wantLines: `[]`},
		{name: "json", out: `{"a": [1, 2.5, "x"], "b": {"c": true, "d": null}}` + "\n", capture: "json",
			want: stepfake.Want{Signal: lang.SigSuccess}, wantJSON: `map[a:[1 2.5 x] b:map[c:true d:<nil>]]`},
		{name: "json parse error", out: "not json\n", capture: "json",
			want: stepfake.Want{Signal: lang.SigFailure, Code: source.EJSONParse, ErrHas: "output of step 'Cap' is not JSON"}, wantJSON: "<nil>"},
		{name: "json trailing garbage", out: `{"a":1} x`, capture: "json",
			want: stepfake.Want{Signal: lang.SigFailure, Code: source.EJSONParse, ErrHas: "not JSON"}, wantJSON: "<nil>"},
		{name: "json empty", out: "", capture: "json",
			want: stepfake.Want{Signal: lang.SigFailure, Code: source.EJSONParse, ErrHas: "the output is empty"}, wantJSON: "<nil>"},
		{name: "allow_parse_error", out: "not json", capture: "json", allowParse: true,
			want: stepfake.Want{Signal: lang.SigSuccess}, wantJSON: "<nil>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			r := f.Req(isa.KindCommand, "Cap")
			r.Argv = stepfake.Exe(t, "print", tt.out, "")
			r.OutputCapture, r.AllowParseError = tt.capture, tt.allowParse
			got := f.reg.Run(context.Background(), r)
			tt.want.Attempts = 1
			tt.want.Check(t, tt.name, got)
			if tt.wantLines != "" && fmt.Sprintf("%q", got.Lines) != tt.wantLines {
				t.Errorf("Run(%q) lines = %q, want %s", tt.out, got.Lines, tt.wantLines)
			}
			if tt.wantJSON != "" && fmt.Sprint(got.JSON) != tt.wantJSON {
				t.Errorf("Run(%q) json = %v, want %s", tt.out, got.JSON, tt.wantJSON)
			}
			if tt.wantJSON != "" && got.HasJSON != (tt.wantJSON != "<nil>") {
				t.Errorf("Run(%q) HasJSON = %v, want %v", tt.out, got.HasJSON, tt.wantJSON != "<nil>")
			}
		})
	}
}

func TestRunPathEscape(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(f *fixture, r *step.Request)
		has   string
	}{
		{"input_file absolute", func(f *fixture, r *step.Request) { r.InputFile = "/etc/passwd" }, "input_file: path '/etc/passwd' is absolute"},
		{"input_file dotdot", func(f *fixture, r *step.Request) { r.InputFile = "../../x" }, "resolves outside the project"},
		{"input_file symlink", func(f *fixture, r *step.Request) {
			f.Write("real/x.txt", "x")
			if err := os.Symlink(filepath.Join(f.Dirs.Workspace, "real"), filepath.Join(f.Dirs.Workspace, "link")); err != nil {
				f.t.Fatal(err)
			}
			r.InputFile = "link/x.txt"
		}, "passes through the symlink 'link'"},
		{"output_file absolute", func(f *fixture, r *step.Request) { r.OutputFile = filepath.Join(f.Dirs.Base, "x.txt") }, "output_file: path"},
		{"output_file dotdot", func(f *fixture, r *step.Request) { r.OutputFile = "../../../../x.txt" }, "resolves outside the project"},
		{"output_file symlink", func(f *fixture, r *step.Request) {
			if err := os.MkdirAll(filepath.Join(f.Dirs.Workspace, "artifacts", "Esc"), 0o755); err != nil {
				f.t.Fatal(err)
			}
			if err := os.Symlink(f.Dirs.Base, filepath.Join(f.Dirs.Workspace, "artifacts", "Esc", "out")); err != nil {
				f.t.Fatal(err)
			}
			r.OutputFile = "out/x.txt"
		}, "passes through the symlink 'out'"},
		{"prompt_file dotdot", func(f *fixture, r *step.Request) { r.PromptFile = "../../p.txt" }, "prompt_file: path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			marker := filepath.Join(f.Dirs.Workspace, "ran")
			r := f.Req(isa.KindCommand, "Esc")
			// If the command ran, it would write stdout to the output file.
			r.Argv = stepfake.Exe(t, "print", "ran", "")
			tt.setup(f, r)
			got := f.reg.Run(context.Background(), r)
			stepfake.Want{Signal: lang.SigFailure, Exit: -1, Code: source.EPathEscape, ErrHas: tt.has}.Check(t, tt.name, got)
			if _, err := os.Stat(filepath.Join(f.Dirs.Base, "x.txt")); err == nil {
				t.Errorf("Run(%s) wrote %s", tt.name, filepath.Join(f.Dirs.Base, "x.txt"))
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("Run(%s) wrote %s", tt.name, marker)
			}
			if _, err := os.Stat(filepath.Join(f.RunRoot, "logs", "Esc-stderr.log")); err == nil {
				t.Errorf("Run(%s) ran the command", tt.name)
			}
		})
	}
}

func TestRunCancelled(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := f.Req(isa.KindCommand, "Gone")
	r.Argv = stepfake.Exe(t, "print", "ran", "")
	r.Attempts = 3
	stepfake.Want{Signal: lang.SigFailure, Exit: -1, Attempts: 1, Code: source.EInterrupted, ErrHas: "interrupted"}.Check(t, "cancelled", f.reg.Run(ctx, r))
}

func TestNewRegistryKnowsInternalWorkers(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(nil)
	for _, name := range lang.InternalNames() {
		if reg.Internal[name] == nil {
			t.Errorf("NewRegistry(nil).Internal[%q] = nil, want the worker", name)
		}
	}
}

// TestMockDuration: the Registry times every step, provider steps too, with
// the injected clock.
func TestMockDuration(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.Write("s.yaml", "- reply: busy\n  exit_code: 1\n- reply: ok\n")
	r := f.Req(isa.KindProvider, "Ask")
	r.Providers = []string{"mock"}
	r.ProviderParams = []provider.Param{{Key: "script", Value: "s.yaml"}}
	r.Prompt = "p"
	r.Attempts, r.Backoff = 2, 5*time.Second
	// The fixture's pause advances its clock: the duration is the backoff.
	got := f.reg.Run(context.Background(), r)
	if got.Duration != 5*time.Second || got.Output != "ok" {
		t.Errorf("Run(mock).Duration = %v (%s), want %v from the injected clock", got.Duration, stepfake.Describe(got), 5*time.Second)
	}
}

// TestEveryExecKindDispatched: every kind that isa's kind table runs with
// EXEC reaches a worker (a bare request fails in that worker, not with the
// Registry's "runs no worker"), and a kind that holds blocks does not.
func TestEveryExecKindDispatched(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, name := range isa.KindNames() {
		k, _ := isa.KindByName(name)
		res := f.reg.Run(context.Background(), f.Req(k, "K"))
		undispatched := res.Err != nil && strings.Contains(res.Err.Error(), "runs no worker")
		if undispatched == k.Exec() {
			t.Errorf("kind %s (Exec %v): Run gave %v", name, k.Exec(), res.Err)
		}
	}
}

// TestDurationCountsRetryWaits pins what a step's duration is: its wall
// time from start to end, its retry waits (backoff_sec) included, so that
// ended_at - started_at = duration (the clock moves only in the waits
// here).
func TestDurationCountsRetryWaits(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := f.Req(isa.KindCommand, "Flaky")
	r.Argv = stepfake.Exe(t, "exit", "1")
	r.Attempts, r.Backoff = 3, 2*time.Second
	res := f.reg.Run(context.Background(), r)
	if res.Attempts != 3 || len(f.Pauses) != 2 {
		t.Fatalf("Run: %d attempts, %d waits; want 3, 2", res.Attempts, len(f.Pauses))
	}
	if res.Duration != 4*time.Second {
		t.Errorf("Run: duration %v, want 4s (the two 2 s retry waits)", res.Duration)
	}
}
