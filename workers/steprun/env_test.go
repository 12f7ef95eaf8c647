package steprun_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"smith/lang"
	"smith/source"
	"smith/workers/confine"
	"smith/workers/step"
	"smith/workers/steprun"
)

func TestRetry(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		attempts  int
		first     int
		noWait    bool
		cancelled bool
		waitErr   error
		exits     []int  // what each try returns
		want      string // exit code and Attempts of the result
		wantTries string // the try numbers, as the try func and AttemptID saw them
		wantRetry string // the OnRetry calls (attempt:exit:wait)
		wantPause string
	}{
		{name: "exit 1 retried", attempts: 3, exits: []int{1, 1, 1},
			want: "exit=1 attempts=3", wantTries: "[1 2 3]", wantRetry: "[1:1:2s 2:1:2s]", wantPause: "[2s 2s]"},
		{name: "exit 124 retried", attempts: 3, exits: []int{124, 0},
			want: "exit=0 attempts=2", wantTries: "[1 2]", wantRetry: "[1:124:2s]", wantPause: "[2s]"},
		{name: "exit 2 not retried", attempts: 3, exits: []int{2},
			want: "exit=2 attempts=1", wantTries: "[1]", wantRetry: "[]", wantPause: "[]"},
		{name: "exit 127 not retried", attempts: 3, exits: []int{127},
			want: "exit=127 attempts=1", wantTries: "[1]", wantRetry: "[]", wantPause: "[]"},
		{name: "success not retried", attempts: 3, exits: []int{0},
			want: "exit=0 attempts=1", wantTries: "[1]", wantRetry: "[]", wantPause: "[]"},
		{name: "zero attempts is one", attempts: 0, exits: []int{1},
			want: "exit=1 attempts=1", wantTries: "[1]", wantRetry: "[]", wantPause: "[]"},
		{name: "first continues the count", attempts: 2, first: 2, exits: []int{1, 1},
			want: "exit=1 attempts=4", wantTries: "[3 4]", wantRetry: "[3:1:2s]", wantPause: "[2s]"},
		{name: "noWait skips the backoff", attempts: 2, noWait: true, exits: []int{1, 0},
			want: "exit=0 attempts=2", wantTries: "[1 2]", wantRetry: "[1:1:2s]", wantPause: "[]"},
		{name: "cancelled stops", attempts: 3, cancelled: true, exits: []int{1},
			want: "exit=1 attempts=1", wantTries: "[1]", wantRetry: "[]", wantPause: "[]"},
		{name: "a failed pause stops", attempts: 3, waitErr: errors.New("stop"), exits: []int{1},
			want: "exit=1 attempts=1", wantTries: "[1]", wantRetry: "[1:1:2s]", wantPause: "[2s]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fe := &fakeEnv{Err: tt.waitErr}
			e := fe.Env()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancelled {
				cancel()
			}
			req := &step.Request{Step: "S", Attempts: tt.attempts, Backoff: 2 * time.Second}
			var retries, ids, tries []int
			var retryText []string
			req.OnRetry = func(attempt, exit int, wait time.Duration) {
				retries = append(retries, attempt)
				retryText = append(retryText, fmt.Sprintf("%d:%d:%s", attempt, exit, wait))
			}
			req.AttemptID = func(n int) string { ids = append(ids, n); return fmt.Sprint(n) }
			got := e.Retry(ctx, req, tt.first, tt.noWait, func(n int) step.Result {
				if req.Attempt != n {
					t.Errorf("try %d: req.Attempt = %d, want %d", n, req.Attempt, n)
				}
				tries = append(tries, n)
				return step.Result{ExitCode: tt.exits[len(tries)-1]}
			})
			if s := fmt.Sprintf("exit=%d attempts=%d", got.ExitCode, got.Attempts); s != tt.want {
				t.Errorf("Retry(%v) = %s, want %s", tt.exits, s, tt.want)
			}
			if fmt.Sprint(tries) != tt.wantTries || fmt.Sprint(ids) != tt.wantTries {
				t.Errorf("Retry(%v) tried %v with attempt ids %v, want %s", tt.exits, tries, ids, tt.wantTries)
			}
			if fmt.Sprint(retryText) != tt.wantRetry || fmt.Sprint(fe.Pauses) != tt.wantPause {
				t.Errorf("Retry(%v) retries %v pauses %v, want %s %s", tt.exits, retryText, fe.Pauses, tt.wantRetry, tt.wantPause)
			}
		})
	}
}

// TestRetryZeroEnv: the zero Env waits with a real timer, and a zero
// backoff does not wait at all.
func TestRetryZeroEnv(t *testing.T) {
	t.Parallel()
	req := &step.Request{Step: "S", Attempts: 3}
	n := 0
	got := steprun.Env{}.Retry(context.Background(), req, 0, false, func(int) step.Result {
		n++
		return step.Result{ExitCode: 1}
	})
	if got.Attempts != 3 || n != 3 {
		t.Errorf("Env{}.Retry(exit 1, 3 attempts) = %d attempts (%d tries), want 3", got.Attempts, n)
	}
	if now := (steprun.Env{}).Now(); time.Since(now) > time.Minute || time.Until(now) > time.Minute {
		t.Errorf("Env{}.Now() = %v, want the real time", now)
	}
}

func TestExitFacts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		exit      int
		signal    string
		retryable bool
	}{
		{0, lang.SigSuccess, false},
		{1, lang.SigFailure, true},
		{2, lang.SigFailure, false},
		{124, lang.SigTimeout, true},
		{127, lang.SigFailure, false},
		{-1, lang.SigFailure, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.exit), func(t *testing.T) {
			t.Parallel()
			if got := steprun.SignalFor(tt.exit); got != tt.signal {
				t.Errorf("SignalFor(%d) = %q, want %q", tt.exit, got, tt.signal)
			}
			if got := steprun.Retryable(tt.exit); got != tt.retryable {
				t.Errorf("Retryable(%d) = %v, want %v", tt.exit, got, tt.retryable)
			}
		})
	}
}

func TestTimeoutOf(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want time.Duration }{
		{0, lang.DefaultTimeout},
		{-time.Second, lang.DefaultTimeout},
		{time.Second, time.Second},
	} {
		if got := steprun.TimeoutOf(&step.Request{Timeout: tt.in}); got != tt.want {
			t.Errorf("TimeoutOf(timeout %v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestStderrHeader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		attempt   int
		iteration string
		want      string
	}{
		{0, "", "--- attempt 1 ---\n"},
		{1, "", "--- attempt 1 ---\n"},
		{3, "", "--- attempt 3 ---\n"},
		{2, "0", "--- attempt 2, iteration 0 ---\n"},
		{1, "docs", "--- attempt 1, iteration docs ---\n"},
	}
	for _, tt := range tests {
		req := &step.Request{Attempt: tt.attempt, Iteration: tt.iteration}
		if got := steprun.StderrHeader(req); got != tt.want {
			t.Errorf("StderrHeader(attempt %d, iteration %q) = %q, want %q", tt.attempt, tt.iteration, got, tt.want)
		}
	}
}

func TestPrepareRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		edit func(r *step.Request)
		want string
	}{
		{"empty step name", func(r *step.Request) { r.Step = "" }, "E_PATH_ESCAPE: step name '' cannot name a directory"},
		{"dot step name", func(r *step.Request) { r.Step = "." }, "E_PATH_ESCAPE: step name '.' cannot name a directory"},
		{"dotdot step name", func(r *step.Request) { r.Step = ".." }, "E_PATH_ESCAPE: step name '..' cannot name a directory"},
		{"slash in step name", func(r *step.Request) { r.Step = "a/b" }, "E_PATH_ESCAPE: step name 'a/b' cannot name a directory"},
		{"backslash in step name", func(r *step.Request) { r.Step = `a\b` }, `E_PATH_ESCAPE: step name 'a\b' cannot name a directory`},
		{"no workspace", func(r *step.Request) { r.Dirs = confine.Dir{} }, "E_INTERNAL: internal error: step 'Gen' has no workspace"},
		{"input_file dotdot", func(r *step.Request) { r.InputFile = "../../x" }, "E_PATH_ESCAPE: input_file: path '../../x' resolves outside the project"},
		{"prompt_file absolute", func(r *step.Request) { r.PromptFile = "/etc/passwd" }, "E_PATH_ESCAPE: prompt_file: path '/etc/passwd' is absolute"},
		{"output_file dotdot", func(r *step.Request) { r.OutputFile = "../../../../x" }, "E_PATH_ESCAPE: output_file: path '../../../../x' resolves outside the project"},
		{"output_file dot", func(r *step.Request) { r.OutputFile = "." }, "E_PATH_ESCAPE: output_file: path '.' names no file"},
		{"output_file a/..", func(r *step.Request) { r.OutputFile = "a/.." }, "E_PATH_ESCAPE: output_file: path 'a/..' names no file"},
		{"output_file directory", func(r *step.Request) { r.OutputFile = "out/" }, "E_PATH_ESCAPE: output_file: path 'out/' names no file"},
		{"last path checked before anything is created", func(r *step.Request) {
			r.InputFile, r.PromptFile, r.OutputFile = "in.txt", "p.md", "/x"
		}, "E_PATH_ESCAPE: output_file: path '/x' is absolute"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newReq(t, "Gen")
			ws := r.Dirs.Workspace
			tt.edit(r)
			_, err := steprun.Prepare(r)
			if got := errText(err); !strings.HasPrefix(got, tt.want) {
				t.Errorf("Prepare(%s) = %s, want %s", tt.name, got, tt.want)
			}
			for _, d := range []string{ws, filepath.Join(r.RunRoot, "logs")} {
				if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("Prepare(%s) created %s (%v), want nothing created", tt.name, d, err)
				}
			}
		})
	}
}

func TestPrepare(t *testing.T) {
	t.Parallel()
	r := newReq(t, "Gen")
	r.InputFile, r.PromptFile, r.OutputFile = "in/x.txt", "p.md", "out/o.txt"
	p, serr := steprun.Prepare(r)
	if serr != nil {
		t.Fatalf("Prepare = %v", serr)
	}
	ws, logs := r.Dirs.Workspace, filepath.Join(r.RunRoot, "logs")
	want := steprun.Paths{
		Input:     filepath.Join(ws, "in", "x.txt"),
		Prompt:    filepath.Join(ws, "p.md"),
		Output:    filepath.Join(ws, "artifacts", "Gen", "out", "o.txt"),
		Spill:     filepath.Join(logs, "Gen-stdout.log"),
		StderrLog: filepath.Join(logs, "Gen-stderr.log"),
		TmpDir:    filepath.Join(r.RunRoot, "tmp"),
	}
	if p != want {
		t.Errorf("Prepare = %+v, want %+v", p, want)
	}
	for _, d := range []string{ws, logs} {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			t.Errorf("Prepare did not create %s (%v)", d, err)
		}
	}

	// Without a RUN_ROOT: no logs, temporary files in the system's directory.
	r = newReq(t, "Gen")
	r.RunRoot = ""
	p, serr = steprun.Prepare(r)
	if serr != nil || p != (steprun.Paths{TmpDir: os.TempDir()}) {
		t.Errorf("Prepare(no RUN_ROOT) = %+v, %v, want only TmpDir %s", p, serr, os.TempDir())
	}
}

func TestFileErr(t *testing.T) {
	t.Parallel()
	escape := &confine.Error{Path: "../x", Reason: "resolves outside the project"}
	_, notExist := os.Open(filepath.Join(t.TempDir(), "nope"))
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"escape keeps its code", escape, "E_PATH_ESCAPE: prompt_file: " + escape.Error()},
		{"unreadable names the file, not the OS path", notExist, "E_EXEC: prompt_file 'p.md' cannot be read: no such file or directory"},
		{"plain error", errors.New("boom"), "E_EXEC: prompt_file 'p.md' cannot be read: boom"},
	}
	for _, tt := range tests {
		if got := errText(steprun.FileErr("prompt_file", "p.md", tt.err)); got != tt.want {
			t.Errorf("FileErr(%s) = %q, want %q", tt.name, got, tt.want)
		}
	}
	if !steprun.IsEscape(source.Wrap(source.EExec, "x", escape)) || steprun.IsEscape(notExist) || steprun.IsEscape(nil) {
		t.Errorf("IsEscape: want true for a wrapped confinement error only")
	}
}
