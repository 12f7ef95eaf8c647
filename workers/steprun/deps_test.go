package steprun_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"smith/workers/step"
	"smith/workers/steprun"
)

// preconditions prepares req and checks its preconditions with env; it
// returns the files (relative to WORKSPACE), the outcome ("ok" when the step
// may run) and the matched files of wait_for (relative).
func preconditions(t *testing.T, ctx context.Context, e steprun.Env, req *step.Request) (files []string, out string, matched []string) {
	t.Helper()
	p, serr := steprun.Prepare(req)
	if serr != nil {
		t.Fatalf("Prepare = %v", serr)
	}
	abs, res, ok := e.Preconditions(ctx, req, p)
	out = "ok"
	if !ok {
		out = outcome(res)
	}
	rel := func(l []string) []string {
		var r []string
		for _, f := range l {
			s, err := filepath.Rel(req.Dirs.Workspace, f)
			if err != nil || !filepath.IsAbs(f) {
				t.Errorf("Preconditions: %q is not an absolute path under WORKSPACE", f)
			}
			r = append(r, s)
		}
		return r
	}
	return rel(abs), out, rel(req.WaitMatched)
}

func TestPreconditionsInputFile(t *testing.T) {
	t.Parallel()
	req := newReq(t, "In")
	req.InputFile = "nope.txt"
	if _, got, _ := preconditions(t, context.Background(), steprun.Env{}, req); got != "SIGNAL:FAILURE exit=-1 attempts=0 E_EXEC: input_file 'nope.txt' cannot be read: no such file or directory" {
		t.Errorf("Preconditions(missing input_file) = %s", got)
	}
	write(t, req, "nope.txt", "here now")
	if _, got, _ := preconditions(t, context.Background(), steprun.Env{}, req); got != "ok" {
		t.Errorf("Preconditions(input_file present) = %s, want ok", got)
	}
}

func TestWaitFor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		wait        step.WaitFor
		createOn    int // create the inbox files on this pause (-1 = before, 0 = never)
		count       int // how many
		want        string
		wantMatched string
		wantPauses  string
	}{
		{"already there", step.WaitFor{Glob: "inbox/*.msg"}, -1, 2, "ok", "[inbox/a.msg inbox/b.msg]", "[]"},
		{"appears after 3 polls", step.WaitFor{Glob: "inbox/*.msg", Poll: 100 * time.Millisecond, Timeout: time.Second}, 3, 1,
			"ok", "[inbox/a.msg]", "[100ms 100ms 100ms]"},
		{"min_count", step.WaitFor{Glob: "inbox/*.msg", MinCount: 2, Poll: time.Second, Timeout: 10 * time.Second}, 2, 2,
			"ok", "[inbox/a.msg inbox/b.msg]", "[1s 1s]"},
		{"too few before timeout", step.WaitFor{Glob: "inbox/*.msg", MinCount: 3, Poll: 2 * time.Second, Timeout: 5 * time.Second}, 1, 2,
			"SIGNAL:TIMEOUT exit=124 attempts=0 E_WAIT_TIMEOUT: wait_for 'inbox/*.msg' matched 2 of 3 files within 5s", "[]", "[2s 2s 2s]"},
		{"escaping glob", step.WaitFor{Glob: "../../*"}, 0, 0,
			"SIGNAL:FAILURE exit=-1 attempts=0 E_PATH_ESCAPE: glob: path '../../*' resolves outside the project", "[]", "[]"},
		{"malformed glob", step.WaitFor{Glob: "inbox/[a"}, 0, 0,
			"SIGNAL:FAILURE exit=-1 attempts=0 E_EXEC: glob 'inbox/[a' is malformed: syntax error in pattern", "[]", "[]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := newReq(t, "Wait")
			create := func() {
				for i := range tt.count {
					write(t, req, filepath.Join("inbox", string(rune('a'+i))+".msg"), "hi")
				}
			}
			if tt.createOn < 0 {
				create()
			}
			fe := &fakeEnv{OnPause: func(n int) {
				if n == tt.createOn {
					create()
				}
			}}
			req.WaitFor = &tt.wait
			_, got, matched := preconditions(t, context.Background(), fe.Env(), req)
			if got != tt.want || fmt.Sprint(matched) != tt.wantMatched || fmt.Sprint(fe.Pauses) != tt.wantPauses {
				t.Errorf("Preconditions(%s) = %s, matched %v, pauses %v; want %s, %s, %s",
					tt.name, got, matched, fe.Pauses, tt.want, tt.wantMatched, tt.wantPauses)
			}
		})
	}
}

// TestWaitForDefaults: with no poll and no timeout, wait_for polls every
// 500 ms for 300 s.
func TestWaitForDefaults(t *testing.T) {
	t.Parallel()
	req := newReq(t, "Wait")
	req.WaitFor = &step.WaitFor{Glob: "never/*"}
	fe := &fakeEnv{}
	_, got, _ := preconditions(t, context.Background(), fe.Env(), req)
	if got != "SIGNAL:TIMEOUT exit=124 attempts=0 E_WAIT_TIMEOUT: wait_for 'never/*' matched 0 of 1 files within 5m0s" ||
		len(fe.Pauses) != 600 || fe.Pauses[0] != 500*time.Millisecond {
		t.Errorf("Preconditions(wait_for defaults) = %s after %d pauses (first %v), want E_WAIT_TIMEOUT after 600 of 500ms",
			got, len(fe.Pauses), fe.Pauses[:min(len(fe.Pauses), 1)])
	}
}

func TestWaitForInterrupted(t *testing.T) {
	t.Parallel()
	req := newReq(t, "Wait")
	req.WaitFor = &step.WaitFor{Glob: "never/*", Poll: time.Second, Timeout: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	fe := &fakeEnv{OnPause: func(n int) {
		if n == 2 {
			cancel()
		}
	}}
	_, got, _ := preconditions(t, ctx, fe.Env(), req)
	if want := "SIGNAL:FAILURE exit=-1 attempts=0 E_INTERRUPTED: step 'Wait' was interrupted while waiting for 'never/*'"; got != want || len(fe.Pauses) != 2 {
		t.Errorf("Preconditions(wait_for, cancelled) = %s after %d pauses, want %s after 2", got, len(fe.Pauses), want)
	}
}

func TestDependsOn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		deps      step.DependsOn
		want      string
		wantFiles string
	}{
		{"required present", step.DependsOn{Required: []string{"src/*.go"}}, "ok", "[src/a.go src/b.go]"},
		{"required then optional without repeats", step.DependsOn{Required: []string{"src/b.go"}, Optional: []string{"src/*.go", "docs/*"}},
			"ok", "[src/b.go src/a.go]"},
		{"required missing", step.DependsOn{Required: []string{"src/*.go", "docs/*.md"}},
			"SIGNAL:FAILURE exit=-1 attempts=0 E_DEP_MISSING: depends_on: required 'docs/*.md' matches no file", "[]"},
		{"optional missing", step.DependsOn{Optional: []string{"docs/*.md"}}, "ok", "[]"},
		{"absolute", step.DependsOn{Required: []string{"/etc/*"}},
			"SIGNAL:FAILURE exit=-1 attempts=0 E_PATH_ESCAPE: glob: path '/etc/*' is absolute", "[]"},
		{"a match through a symlink", step.DependsOn{Optional: []string{"*/a.go"}},
			"SIGNAL:FAILURE exit=-1 attempts=0 E_PATH_ESCAPE: glob '*/a.go': path 'link/a.go' passes through the symlink 'link'", "[]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := newReq(t, "Dep")
			write(t, req, "src/a.go", "package a\n")
			write(t, req, "src/b.go", "package b\n")
			if strings.Contains(tt.name, "symlink") {
				if err := os.Symlink(filepath.Join(req.Dirs.Workspace, "src"), filepath.Join(req.Dirs.Workspace, "link")); err != nil {
					t.Fatal(err)
				}
			}
			req.DependsOn = &tt.deps
			files, got, _ := preconditions(t, context.Background(), steprun.Env{}, req)
			if !strings.HasPrefix(got, tt.want) || fmt.Sprint(files) != tt.wantFiles {
				t.Errorf("Preconditions(%s) = %s, files %v, want %s, %s", tt.name, got, files, tt.want, tt.wantFiles)
			}
		})
	}
}

func TestInjectDeps(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		deps   *step.DependsOn
		prompt string
		want   string
	}{
		{"no depends_on", nil, "Review them.", "Review them."},
		{"list prepend", &step.DependsOn{Inject: "list", Instruction: "Files:"}, "Review them.",
			"Files:\nsrc/a.go\nsrc/b.go\nsrc/sub\n\nReview them."},
		{"inject: true is list", &step.DependsOn{Inject: "true"}, "Review them.", "src/a.go\nsrc/b.go\nsrc/sub\n\nReview them."},
		{"list append", &step.DependsOn{Inject: "list", Position: "append"}, "Review them.",
			"Review them.\n\nsrc/a.go\nsrc/b.go\nsrc/sub"},
		{"content skips directories", &step.DependsOn{Inject: "content", Instruction: "Context:"}, "Review them.",
			"Context:\n--- src/a.go ---\npackage a\n--- src/b.go ---\npackage b\n\nReview them."},
		{"content append", &step.DependsOn{Inject: "content", Position: "append"}, "Review them.",
			"Review them.\n\n--- src/a.go ---\npackage a\n--- src/b.go ---\npackage b"},
		{"no prompt", &step.DependsOn{Inject: "list"}, "", "src/a.go\nsrc/b.go\nsrc/sub"},
		{"none", &step.DependsOn{Inject: "none", Instruction: "Files:"}, "Review them.", "Review them."},
		{"not set", &step.DependsOn{Instruction: "Files:"}, "Review them.", "Review them."},
		{"bad mode", &step.DependsOn{Inject: "paths"}, "Review them.",
			"E_EXEC: depends_on inject mode 'paths' is not list, content or none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := newReq(t, "Inj")
			write(t, req, "src/a.go", "package a\n")
			write(t, req, "src/b.go", "package b")
			write(t, req, "src/sub/c.go", "package c")
			req.DependsOn = tt.deps
			var files []string
			for _, f := range []string{"src/a.go", "src/b.go", "src/sub"} {
				files = append(files, filepath.Join(req.Dirs.Workspace, f))
			}
			got, serr := steprun.InjectDeps(req, files, tt.prompt)
			if serr != nil {
				got = errText(serr)
			}
			if got != tt.want {
				t.Errorf("InjectDeps(%s, %q) = %q, want %q", tt.name, tt.prompt, got, tt.want)
			}
		})
	}
}

// TestInjectDepsNoFiles: an optional glob that matched nothing leaves the
// prompt alone, but for the instruction.
func TestInjectDepsNoFiles(t *testing.T) {
	t.Parallel()
	req := newReq(t, "Inj")
	req.DependsOn = &step.DependsOn{Inject: "list"}
	if got, serr := steprun.InjectDeps(req, nil, "P"); got != "P" || serr != nil {
		t.Errorf("InjectDeps(list, no files) = %q, %v, want %q", got, serr, "P")
	}
	req.DependsOn.Instruction = "Files:"
	if got, serr := steprun.InjectDeps(req, nil, "P"); got != "Files:\n\nP" || serr != nil {
		t.Errorf("InjectDeps(list, no files, instruction) = %q, %v, want %q", got, serr, "Files:\n\nP")
	}
}

// TestReadIntoPrompt: a file is read into a prompt only while the prompt
// stays within MaxPrompt; past it, E_TOO_LARGE names the file, its size,
// the prompt's other bytes and the limit, and the file is not read.
func TestReadIntoPrompt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		size int
		used int
		want string // the error, or "" when read whole
	}{
		{"small", 10, 0, ""},
		{"exactly the limit", steprun.MaxPrompt, 0, ""},
		{"the limit with the rest", steprun.MaxPrompt - 100, 100, ""},
		{"one byte over", steprun.MaxPrompt + 1, 0,
			"E_TOO_LARGE: prompt_file 'p.md' is 10485761 bytes: the prompt of step 'Ask' would pass the 10485760 bytes (10 MiB) a prompt may hold; give the model a smaller file, or the file's path to read itself (for depends_on: inject mode list)"},
		{"over with the rest", steprun.MaxPrompt - 99, 100,
			"E_TOO_LARGE: prompt_file 'p.md' is 10485661 bytes: with the prompt's other 100 bytes, the prompt of step 'Ask' would pass the 10485760 bytes (10 MiB) a prompt may hold"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newReq(t, "Ask")
			write(t, r, "p.md", strings.Repeat("p", tt.size))
			got, serr := steprun.ReadIntoPrompt(r, filepath.Join(r.Dirs.Workspace, "p.md"), "prompt_file", "p.md", tt.used)
			switch {
			case tt.want == "" && (serr != nil || len(got) != tt.size):
				t.Errorf("ReadIntoPrompt(%d bytes, %d used) = %d bytes, %v; want it whole", tt.size, tt.used, len(got), serr)
			case tt.want != "" && (serr == nil || !strings.HasPrefix(errText(serr), tt.want) || got != ""):
				t.Errorf("ReadIntoPrompt(%d bytes, %d used) = %d bytes, %v; want %s", tt.size, tt.used, len(got), serr, tt.want)
			}
		})
	}
}
