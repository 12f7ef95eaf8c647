package steprun_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"smith/internal/stepfake"
	"smith/internal/testchild"
	"smith/isa"
	"smith/workers/proc"
	"smith/workers/provider"
	"smith/workers/step"
	"smith/workers/steprun"
	"smith/workers/text"
)

func TestCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		edit       func(t *testing.T, r *step.Request)
		cancelled  bool
		want       string // outcome, or a prefix of it
		wantOutput string
		wantStderr string
	}{
		{"success", func(t *testing.T, r *step.Request) { r.Argv = stepfake.Exe(t, "print", "hello\n\n", "warn\n") },
			false, "SIGNAL:SUCCESS exit=0 attempts=1", "hello", "warn"},
		{"failure keeps the exit code", func(t *testing.T, r *step.Request) { r.Argv = stepfake.Exe(t, "exit", "3") },
			false, "SIGNAL:FAILURE exit=3 attempts=1", "", ""},
		{"exit 124 of the command is a timeout signal", func(t *testing.T, r *step.Request) { r.Argv = stepfake.Exe(t, "exit", "124") },
			false, "SIGNAL:TIMEOUT exit=124 attempts=1", "", ""},
		{"not found", func(t *testing.T, r *step.Request) { r.Argv = []string{"smith-no-such-command"} },
			false, "SIGNAL:FAILURE exit=127 attempts=1 E_EXEC: command 'smith-no-such-command' not found: it is not on PATH", "", ""},
		{"empty argv", func(t *testing.T, r *step.Request) { r.Argv = nil },
			false, "SIGNAL:FAILURE exit=-1 attempts=0 E_EXEC: step 'Cmd' has an empty command", "", ""},
		{"path violation before anything runs", func(t *testing.T, r *step.Request) {
			r.Argv, r.OutputFile = stepfake.Exe(t, "print", "ran"), "../../../x"
		}, false, "SIGNAL:FAILURE exit=-1 attempts=0 E_PATH_ESCAPE: output_file: path '../../../x' resolves outside the workspace", "", ""},
		{"timeout", func(t *testing.T, r *step.Request) {
			r.Argv, r.Timeout = stepfake.Exe(t, "sleep", "20s"), 100*time.Millisecond
		}, false, "SIGNAL:TIMEOUT exit=124 attempts=1 E_TIMEOUT: step 'Cmd' timed out after 100ms", "", ""},
		{"cancelled", func(t *testing.T, r *step.Request) { r.Argv, r.Attempts = stepfake.Exe(t, "exit", "1"), 3 },
			true, "SIGNAL:FAILURE exit=-1 attempts=1 E_INTERRUPTED: step 'Cmd' was interrupted", "", ""},
		{"stdin from input_file", func(t *testing.T, r *step.Request) {
			write(t, r, "in.txt", "line one\nline two\n")
			r.Argv, r.InputFile = stepfake.Exe(t, "cat"), "in.txt"
		}, false, "SIGNAL:SUCCESS exit=0 attempts=1", "line one\nline two", ""},
		{"stdin is /dev/null", func(t *testing.T, r *step.Request) { r.Argv = stepfake.Exe(t, "stdin") },
			false, "SIGNAL:SUCCESS exit=0 attempts=1", "devnull\n0", ""},
		{"secrets masked", func(t *testing.T, r *step.Request) {
			r.Argv, r.Mask = stepfake.Exe(t, "print", "token=hunter2\n", "hunter2"), text.NewMasker([]string{"hunter2"})
		}, false, "SIGNAL:SUCCESS exit=0 attempts=1", "token=***", "***"},
		{"the payload on stdin", func(t *testing.T, r *step.Request) {
			r.Argv, r.PayloadStdin = stepfake.Exe(t, "cat"), true
			r.Payload = []step.Segment{{ID: "1", Type: step.SegCodeOutput, Content: "key hunter2", Timestamp: "t"}}
			r.Mask = text.NewMasker([]string{"hunter2"})
		}, false, "SIGNAL:SUCCESS exit=0 attempts=1", `[{"id":"1","type":"CODE_OUTPUT","content":"key ***","timestamp":"t"}]`, ""},
		{"an empty payload on stdin", func(t *testing.T, r *step.Request) { r.Argv, r.PayloadStdin = stepfake.Exe(t, "cat"), true },
			false, "SIGNAL:SUCCESS exit=0 attempts=1", `[]`, ""},
		// While the command runs, its payload has no name under RUN_ROOT/tmp
		// (a smithvm killed then leaves nothing of it behind).
		{"the payload on stdin has no name", func(t *testing.T, r *step.Request) {
			ls, err := exec.LookPath("ls")
			if err != nil {
				t.Skip("no ls")
			}
			tmp := filepath.Join(r.RunRoot, "tmp")
			if err := os.MkdirAll(tmp, 0o755); err != nil {
				t.Fatal(err)
			}
			r.Argv, r.PayloadStdin = []string{ls, "-A", tmp}, true
		}, false, "SIGNAL:SUCCESS exit=0 attempts=1", "", ""},
		{"json capture of a command", func(t *testing.T, r *step.Request) {
			r.Argv, r.OutputCapture = stepfake.Exe(t, "print", "not json"), "json"
		}, false, "SIGNAL:FAILURE exit=0 attempts=1 E_JSON_PARSE: output of step 'Cmd' is not JSON", "not json", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newReq(t, "Cmd")
			tt.edit(t, r)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancelled {
				cancel()
			}
			fe := &fakeEnv{}
			got := fe.Env().Command(ctx, r)
			if !strings.HasPrefix(outcome(got), tt.want) || got.Output != tt.wantOutput || got.Stderr != tt.wantStderr {
				t.Errorf("Command(%s) = %s, output %q, stderr %q; want %s, %q, %q",
					tt.name, outcome(got), got.Output, got.Stderr, tt.want, tt.wantOutput, tt.wantStderr)
			}
			if got.Err == nil && strings.Contains(tt.want, " E_") {
				t.Errorf("Command(%s) has no error, want %s", tt.name, tt.want)
			}
			// The payload's temporary file is gone.
			if ents, _ := os.ReadDir(filepath.Join(r.RunRoot, "tmp")); len(ents) != 0 {
				t.Errorf("Command(%s) left %d files in RUN_ROOT/tmp", tt.name, len(ents))
			}
			if strings.Contains(tt.name, "violation") {
				if _, err := os.Stat(r.Dirs.Workspace); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("Command(%s) created WORKSPACE", tt.name)
				}
			}
		})
	}
}

// TestCommandLogs: stdout over the in-memory cap spills to
// logs/<Step>-stdout.log (and output_file gets it whole), a lines capture
// splits the first 1 MiB only (here one line cut off: no line), and stderr
// goes to logs/<Step>-stderr.log under each try's header.
func TestCommandLogs(t *testing.T) {
	t.Parallel()
	const big = 3 << 20
	r := newReq(t, "Gen")
	r.Argv = stepfake.Exe(t, "out", fmt.Sprint(big))
	r.OutputCapture = "lines"
	r.OutputFile = "all.txt"
	got := (&fakeEnv{}).Env().Command(context.Background(), r)
	logs := filepath.Join(r.RunRoot, "logs")
	spill, _ := os.ReadFile(filepath.Join(logs, "Gen-stdout.log"))
	file, _ := os.ReadFile(filepath.Join(r.Dirs.Workspace, "artifacts", "Gen", "all.txt"))
	if !got.Truncated || got.SpillStdout != filepath.Join(logs, "Gen-stdout.log") || len(spill) != big ||
		len(got.Output) != proc.DefaultMemCap || len(file) != big {
		t.Errorf("Command(%d bytes) = %s truncated=%v spill %q (%d bytes) output %d bytes output_file %d bytes, want a %d-byte spill, %d in memory",
			big, outcome(got), got.Truncated, got.SpillStdout, len(spill), len(got.Output), len(file), big, proc.DefaultMemCap)
	}
	if got.Lines == nil || len(got.Lines) != 0 || !got.LinesTruncated {
		t.Errorf("Command(%d bytes in one line, lines) = %d lines, truncated %v, want none (the one line is cut), truncated", big, len(got.Lines), got.LinesTruncated)
	}

	r = newReq(t, "Logged")
	r.Argv, r.Attempts, r.Iteration = stepfake.Exe(t, "exit", "1", "failed\n"), 2, "4"
	got = (&fakeEnv{}).Env().Command(context.Background(), r)
	b, err := os.ReadFile(filepath.Join(r.RunRoot, "logs", "Logged-stderr.log"))
	const want = "--- attempt 1, iteration 4 ---\nfailed\n--- attempt 2, iteration 4 ---\nfailed\n"
	if string(b) != want || err != nil || got.StderrLog != filepath.Join(r.RunRoot, "logs", "Logged-stderr.log") {
		t.Errorf("Command(exit 1, 2 attempts) stderr log %q = %q (%v), want %q", got.StderrLog, b, err, want)
	}
}

// TestCommandBigCaptures: past the in-memory 1 MiB, a lines capture holds
// the complete lines of the first 1 MiB and says so, and a json capture is
// parsed from the spill file up to steprun.JSONCap and refused past it
// (E_TOO_LARGE, or json nil with allow_parse_error), never read whole. The
// stream is an input_file piped through cat.
func TestCommandBigCaptures(t *testing.T) {
	t.Parallel()
	line := strings.Repeat("y", 99) + "\n"              // 100 bytes
	item := `"` + strings.Repeat("z", 96) + `",` + "\n" // 100 bytes
	array := func(size int) string { return "[\n" + strings.Repeat(item, size/100) + `"end"]` + "\n" }
	tests := []struct {
		name      string
		capture   string
		allow     bool
		input     string
		want      string // outcome, or a prefix of it
		wantLines int    // -1: nil
		wantCut   bool
		wantJSON  string // the last item, or "<nil>"
		noRoot    bool   // no RUN_ROOT, so no spill file
	}{
		{"lines of 3 MiB keep the first MiB's whole lines", "lines", false, strings.Repeat(line, 3<<20/100),
			"SIGNAL:SUCCESS exit=0 attempts=1", steprun.LinesCap / 100, true, "<nil>", false},
		{"lines within 1 MiB are whole", "lines", false, strings.Repeat(line, 10000),
			"SIGNAL:SUCCESS exit=0 attempts=1", 10000, false, "<nil>", false},
		{"json of 2 MiB is parsed from the spill", "json", false, array(2 << 20),
			"SIGNAL:SUCCESS exit=0 attempts=1", -1, false, "end", false},
		{"json of 2 MiB that is not JSON", "json", false, array(2<<20) + "x",
			"SIGNAL:FAILURE exit=0 attempts=1 E_JSON_PARSE: output of step 'Cmd' is not JSON", -1, false, "<nil>", false},
		{"json past 8 MiB is refused", "json", false, array(9 << 20),
			"SIGNAL:FAILURE exit=0 attempts=1 E_TOO_LARGE: output of step 'Cmd' is 9437109 bytes, more than the 8388608 (8 MiB) a json capture parses (the whole output is in ", -1, false, "<nil>", false},
		{"json past 8 MiB with allow_parse_error", "json", true, array(9 << 20),
			"SIGNAL:SUCCESS exit=0 attempts=1", -1, false, "<nil>", false},
		{"json past 1 MiB with no spill file", "json", false, array(2 << 20),
			"SIGNAL:FAILURE exit=0 attempts=1 E_TOO_LARGE: output of step 'Cmd' is more than the 1 MiB kept in memory, and no spill file holds the rest", -1, false, "<nil>", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newReq(t, "Cmd")
			write(t, r, "in.txt", tt.input)
			r.Argv, r.InputFile, r.OutputCapture, r.AllowParseError = stepfake.Exe(t, "cat"), "in.txt", tt.capture, tt.allow
			if tt.noRoot {
				r.RunRoot = ""
			}
			got := (&fakeEnv{}).Env().Command(context.Background(), r)
			if o := outcome(got); o != tt.want && (!strings.Contains(tt.want, " E_") || !strings.HasPrefix(o, tt.want)) {
				t.Errorf("Command(%s, %d bytes) = %s, want %s", tt.capture, len(tt.input), o, tt.want)
			}
			n := len(got.Lines)
			if got.Lines == nil {
				n = -1
			}
			if n != tt.wantLines || got.LinesTruncated != tt.wantCut {
				t.Errorf("Command(%s, %d bytes) = %d lines, truncated %v, want %d, %v", tt.capture, len(tt.input), n, got.LinesTruncated, tt.wantLines, tt.wantCut)
			}
			last := "<nil>"
			if l, ok := got.JSON.([]any); ok && len(l) > 0 {
				last = fmt.Sprint(l[len(l)-1])
			}
			if last != tt.wantJSON {
				t.Errorf("Command(%s, %d bytes) json ends with %s, want %s", tt.capture, len(tt.input), last, tt.wantJSON)
			}
		})
	}
}

// TestCommandEnv: a command gets exactly the environment of CONTRACT 3.5
// from the Env's parent environment, env_allow, the step's secrets and its
// env:, and nothing else of the parent's.
func TestCommandEnv(t *testing.T) {
	t.Parallel()
	parent := map[string]string{"PATH": "/usr/bin:/bin", "HOME": "/home/u", "FOO": "parent", "OTHER": "not passed"}
	e := steprun.Env{Lookup: func(k string) (string, bool) { v, ok := parent[k]; return v, ok }}
	r := newReq(t, "Env")
	r.Argv = stepfake.Exe(t, "env")
	r.EnvAllow = []string{"FOO", "UNSET"}
	r.Secrets = []step.EnvVar{{Name: "API_KEY", Value: "k1"}}
	r.Env = append(r.Env, step.EnvVar{Name: "FOO", Value: "step"})
	got := e.Command(context.Background(), r)
	const want = "PATH=/usr/bin:/bin\nHOME=/home/u\nFOO=step\nAPI_KEY=k1\n" + testchild.Var + "=1"
	if got.Output != want || got.ExitCode != 0 {
		t.Errorf("Command(env) = %s, environment\n%s\nwant\n%s", outcome(got), got.Output, want)
	}
}

// TestCommandInterrupted: a step whose context ends while its process runs
// fails with E_INTERRUPTED, whatever the killed process's exit code.
func TestCommandInterrupted(t *testing.T) {
	t.Parallel()
	r := newReq(t, "Cmd")
	r.Argv, r.Attempts = stepfake.Exe(t, "sleep", "20s"), 3
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Before or after the process starts, the outcome is the same.
	time.AfterFunc(200*time.Millisecond, cancel)
	got := (&fakeEnv{}).Env().Command(ctx, r)
	if !strings.HasPrefix(outcome(got), "SIGNAL:FAILURE") || !strings.HasSuffix(outcome(got), "attempts=1 E_INTERRUPTED: step 'Cmd' was interrupted") {
		t.Errorf("Command(cancelled while running) = %s, want SIGNAL:FAILURE after one try, E_INTERRUPTED", outcome(got))
	}
}

func TestSpec(t *testing.T) {
	t.Parallel()
	r := newReq(t, "Sp")
	r.InputFile, r.Attempt, r.Timeout = "in.txt", 2, 0
	write(t, r, "in.txt", "data")
	p, serr := steprun.Prepare(r)
	if serr != nil {
		t.Fatal(serr)
	}
	spec, closeStdin, err := steprun.Spec(r, p, []string{"x"}, []string{"A=1"}, p.Input)
	if err != nil || spec.Stdin == nil {
		t.Fatalf("Spec(input_file) = stdin %v, %v, want the input_file opened", spec.Stdin, err)
	}
	closeStdin()
	if spec.Dir != r.Dirs.Workspace || spec.Timeout != 300*time.Second || spec.StderrHeader != "--- attempt 2 ---\n" ||
		spec.StdoutSpill != p.Spill || spec.StderrLog != p.StderrLog || spec.RunRoot != r.RunRoot ||
		fmt.Sprint(spec.Argv, spec.Env) != "[x] [A=1]" || spec.StdinPath != p.Input {
		t.Errorf("Spec = %+v", spec)
	}

	// Another stdin path (a prompt file) is left to proc.Run.
	spec, closeStdin, err = steprun.Spec(r, p, []string{"x"}, nil, filepath.Join(p.TmpDir, "prompt"))
	closeStdin()
	if err != nil || spec.Stdin != nil {
		t.Errorf("Spec(prompt file) = stdin %v, %v, want only StdinPath", spec.Stdin, err)
	}

	// An input_file swapped for a link after the checks is refused.
	in := filepath.Join(r.Dirs.Workspace, "in.txt")
	if err := os.Remove(in); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(t.TempDir(), "secret"), in); err != nil {
		t.Fatal(err)
	}
	_, closeStdin, err = steprun.Spec(r, p, []string{"x"}, nil, p.Input)
	closeStdin()
	if err == nil {
		t.Errorf("Spec(input_file now a symlink) = nil error, want it refused")
	}
}

func TestWriteTemp(t *testing.T) {
	t.Parallel()
	p := steprun.Paths{TmpDir: filepath.Join(t.TempDir(), "run", "tmp")}
	f, err := steprun.WriteTemp(p, "S-prompt-*.txt", []byte("hello"))
	b, _ := os.ReadFile(f)
	if err != nil || filepath.Dir(f) != p.TmpDir || !strings.HasPrefix(filepath.Base(f), "S-prompt-") || string(b) != "hello" {
		t.Errorf("WriteTemp = %q (%q), %v, want a file S-prompt-*.txt in %s holding %q", f, b, err, p.TmpDir, "hello")
	}
	// A TmpDir that cannot be made fails.
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if f, err := steprun.WriteTemp(steprun.Paths{TmpDir: filepath.Join(blocker, "tmp")}, "x-*", nil); err == nil {
		t.Errorf("WriteTemp(under a file) = %q, nil, want an error", f)
	}
}

func TestStartErr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, prog string
		err        error
		want       string
	}{
		{"not on PATH", "mytool", exec.ErrNotFound, "E_EXEC: command 'mytool' not found" + provider.InstallHint("mytool")},
		{"a preset's CLI", "claude", &fs.PathError{Op: "fork/exec", Path: "/x/claude", Err: fs.ErrNotExist},
			"E_EXEC: command 'claude' not found" + provider.InstallHint("claude")},
		{"cannot start", "./tool", &fs.PathError{Op: "fork/exec", Path: "./tool", Err: fs.ErrPermission},
			"E_EXEC: command './tool' cannot be started: fork/exec ./tool: permission denied"},
	}
	for _, tt := range tests {
		if got := errText(steprun.StartErr(tt.prog, tt.err)); got != tt.want {
			t.Errorf("StartErr(%s) = %q, want %q", tt.name, got, tt.want)
		}
	}
	if provider.InstallHint("claude") == provider.InstallHint("mytool") {
		t.Errorf("InstallHint(claude) is the generic hint, want the CLI's own")
	}
}

func TestOSErrText(t *testing.T) {
	t.Parallel()
	if got := steprun.OSErrText(&fs.PathError{Op: "open", Path: "/secret/place", Err: fs.ErrNotExist}); got != "file does not exist" {
		t.Errorf("OSErrText(PathError) = %q, want the reason without the path", got)
	}
	if got := steprun.OSErrText(errors.New("plain")); got != "plain" {
		t.Errorf("OSErrText(plain) = %q, want %q", got, "plain")
	}
}

// TestParallelStderrLogWhole: the threads of a parallel step that run the
// same step at once, each starting after a random delay and writing its
// stderr in two parts with a pause between, leave logs/<Step>-stderr.log
// as whole parts, each under the header of the thread that wrote it
// (CONTRACT 12.3, 12.5): a thread's stderr never lands under another
// thread's header, whatever the timing.
func TestParallelStderrLogWhole(t *testing.T) {
	t.Parallel()
	const threads = 6
	for round := range 4 {
		p := stepfake.NewProject(t)
		rnd := rand.New(rand.NewSource(int64(round)))
		delays := make([]time.Duration, threads)
		for i := range delays {
			delays[i] = time.Duration(rnd.Intn(60)) * time.Millisecond
		}
		var wg sync.WaitGroup
		for i := range threads {
			r := p.Req(isa.KindCommand, "Work")
			key := fmt.Sprint(i)
			r.Thread, r.Iteration = key, key
			r.Argv = stepfake.Exe(t, "split", fmt.Sprintf("t%02d-stderr", i), "0")
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(delays[i])
				if got := (&fakeEnv{}).Env().Command(context.Background(), r); got.ExitCode != 0 {
					t.Errorf("round %d, thread %d: %s", round, i, outcome(got))
				}
			}()
		}
		wg.Wait()
		b, err := os.ReadFile(filepath.Join(p.RunRoot, "logs", "Work-stderr.log"))
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.SplitAfter(string(b), "\n")
		seen := map[string]bool{}
		for j := 0; j+1 < len(parts); j += 2 {
			var key string
			if _, err := fmt.Sscanf(parts[j], "--- attempt 1, iteration %s ---\n", &key); err != nil {
				t.Fatalf("round %d: line %d of the stderr log is %q, want a header:\n%s", round, j+1, parts[j], b)
			}
			n, _ := strconv.Atoi(key)
			if want := fmt.Sprintf("before t%02d-stderr after\n", n); parts[j+1] != want || seen[key] {
				t.Fatalf("round %d: under the header of thread %s: %q, want %q once:\n%s", round, key, parts[j+1], want, b)
			}
			seen[key] = true
		}
		if len(seen) != threads || parts[len(parts)-1] != "" {
			t.Fatalf("round %d: the stderr log holds %d threads' parts, want %d:\n%s", round, len(seen), threads, b)
		}
		if left, _ := filepath.Glob(filepath.Join(p.RunRoot, "logs", "*.part")); len(left) > 0 {
			t.Errorf("round %d: parts left: %v", round, left)
		}
	}
}
