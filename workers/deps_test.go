package workers

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"smith/internal/stepfake"
	"smith/isa"
	"smith/lang"
	"smith/source"
	"smith/workers/step"
)

func TestWaitFor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		wait       step.WaitFor
		createOn   int // create inbox files on this pause (0 = never)
		count      int // how many
		want       stepfake.Want
		wantPauses int
	}{
		{"already there", step.WaitFor{Glob: "inbox/*.msg"}, -1, 1,
			stepfake.Want{Signal: lang.SigSuccess, Attempts: 1, Output: "ran", CheckOut: true}, 0},
		{"appears after 3 polls", step.WaitFor{Glob: "inbox/*.msg", Poll: 100 * time.Millisecond, Timeout: time.Second}, 3, 1,
			stepfake.Want{Signal: lang.SigSuccess, Attempts: 1, Output: "ran", CheckOut: true}, 3},
		{"min_count", step.WaitFor{Glob: "inbox/*.msg", MinCount: 2, Poll: time.Second, Timeout: 10 * time.Second}, 2, 2,
			stepfake.Want{Signal: lang.SigSuccess, Attempts: 1}, 2},
		{"too few before timeout", step.WaitFor{Glob: "inbox/*.msg", MinCount: 3, Poll: time.Second, Timeout: 5 * time.Second}, 1, 2,
			stepfake.Want{Signal: lang.SigTimeout, Exit: 124, Code: source.EWaitTimeout, ErrHas: "wait_for 'inbox/*.msg' matched 2 of 3 files within 5s"}, 5},
		{"default poll and timeout", step.WaitFor{Glob: "never/*"}, 0, 0,
			stepfake.Want{Signal: lang.SigTimeout, Exit: 124, Code: source.EWaitTimeout, ErrHas: "matched 0 of 1 files within 5m0s"}, 600},
		{"escaping glob", step.WaitFor{Glob: "../../*"}, 0, 0,
			stepfake.Want{Signal: lang.SigFailure, Exit: -1, Code: source.EPathEscape, ErrHas: "resolves outside the project"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			create := func() {
				for i := range tt.count {
					f.Write(filepath.Join("inbox", string(rune('a'+i))+".msg"), "hi")
				}
			}
			if tt.createOn < 0 {
				create()
			}
			f.OnPause = func(n int) {
				if n == tt.createOn {
					create()
				}
			}
			r := f.Req(isa.KindCommand, "Wait")
			r.Argv = stepfake.Exe(t, "print", "ran", "")
			r.WaitFor = &tt.wait
			tt.want.Check(t, tt.name, f.reg.Run(context.Background(), r))
			if len(f.Pauses) != tt.wantPauses {
				t.Errorf("Run(%s) paused %d times, want %d", tt.name, len(f.Pauses), tt.wantPauses)
			}
		})
	}
}

// TestWaitForRealTime lets another goroutine create the file while the
// default pause (a real timer) runs.
func TestWaitForRealTime(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.reg.Clock, f.reg.Wait = nil, nil
	r := f.Req(isa.KindCommand, "Wait")
	r.Argv = stepfake.Exe(t, "print", "ran", "")
	r.WaitFor = &step.WaitFor{Glob: "inbox/*.msg", Poll: 10 * time.Millisecond, Timeout: time.Minute}
	var wg sync.WaitGroup
	wg.Go(func() {
		time.Sleep(50 * time.Millisecond)
		_ = os.MkdirAll(filepath.Join(f.Dirs.Workspace, "inbox"), 0o755)
		_ = os.WriteFile(filepath.Join(f.Dirs.Workspace, "inbox", "x.msg"), []byte("hi"), 0o644)
	})
	got := f.reg.Run(context.Background(), r)
	wg.Wait()
	stepfake.Want{Signal: lang.SigSuccess, Attempts: 1, Output: "ran", CheckOut: true}.Check(t, "wait_for inbox/*.msg", got)
}

func TestWaitForCancelled(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.reg.Clock, f.reg.Wait = nil, nil
	ctx, cancel := context.WithCancel(context.Background())
	r := f.Req(isa.KindCommand, "Wait")
	r.Argv = stepfake.Exe(t, "print", "ran", "")
	r.WaitFor = &step.WaitFor{Glob: "never/*", Poll: 10 * time.Millisecond, Timeout: time.Hour}
	time.AfterFunc(30*time.Millisecond, cancel)
	stepfake.Want{Signal: lang.SigFailure, Exit: -1, Code: source.EInterrupted, ErrHas: "interrupted"}.Check(t, "wait_for never/*", f.reg.Run(ctx, r))
}

func TestDependsOn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		deps step.DependsOn
		want stepfake.Want
	}{
		{"required present", step.DependsOn{Required: []string{"src/*.go"}},
			stepfake.Want{Signal: lang.SigSuccess, Attempts: 1, Output: "ran", CheckOut: true}},
		{"required missing", step.DependsOn{Required: []string{"src/*.go", "docs/*.md"}},
			stepfake.Want{Signal: lang.SigFailure, Exit: -1, Code: source.EDepMissing, ErrHas: "depends_on: required 'docs/*.md' matches no file"}},
		{"optional missing", step.DependsOn{Required: []string{"src/a.go"}, Optional: []string{"docs/*.md"}},
			stepfake.Want{Signal: lang.SigSuccess, Attempts: 1}},
		{"escaping", step.DependsOn{Required: []string{"/etc/*"}},
			stepfake.Want{Signal: lang.SigFailure, Exit: -1, Code: source.EPathEscape, ErrHas: "is absolute"}},
		{"through a symlink", step.DependsOn{Required: []string{"*/a.go"}},
			stepfake.Want{Signal: lang.SigFailure, Exit: -1, Code: source.EPathEscape, ErrHas: "passes through the symlink 'link'"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.Write("src/a.go", "package a\n")
			f.Write("src/b.go", "package b\n")
			if tt.name == "through a symlink" {
				if err := os.Symlink(filepath.Join(f.Dirs.Workspace, "src"), filepath.Join(f.Dirs.Workspace, "link")); err != nil {
					t.Fatal(err)
				}
			}
			r := f.Req(isa.KindCommand, "Dep")
			r.Argv = stepfake.Exe(t, "print", "ran", "")
			r.DependsOn = &tt.deps
			tt.want.Check(t, tt.name, f.reg.Run(context.Background(), r))
		})
	}
}

func TestDependsOnInject(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		deps step.DependsOn
		want string
	}{
		{"list prepend", step.DependsOn{Required: []string{"src/*.go"}, Inject: "list", Instruction: "Files:"},
			"Files:\nsrc/a.go\nsrc/b.go\n\nReview them."},
		{"list append", step.DependsOn{Required: []string{"src/b.go"}, Optional: []string{"src/*.go"}, Inject: "list", Position: "append"},
			"Review them.\n\nsrc/b.go\nsrc/a.go"},
		{"content", step.DependsOn{Required: []string{"src/*.go"}, Inject: "content", Instruction: "Context:"},
			"Context:\n--- src/a.go ---\npackage a\n--- src/b.go ---\npackage b\n\nReview them."},
		{"content append", step.DependsOn{Required: []string{"src/a.go"}, Inject: "content", Position: "append"},
			"Review them.\n\n--- src/a.go ---\npackage a"},
		{"none", step.DependsOn{Required: []string{"src/*.go"}, Inject: "none"}, "Review them."},
		{"not set", step.DependsOn{Required: []string{"src/*.go"}}, "Review them."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.Write("src/a.go", "package a\n")
			f.Write("src/b.go", "package b")
			r := f.Req(isa.KindProvider, "Inj")
			r.Providers = []string{"mock"}
			r.Prompt = "Review them."
			r.DependsOn = &tt.deps
			stepfake.Want{Signal: lang.SigSuccess, Attempts: 1, Output: tt.want, CheckOut: true}.Check(t, tt.name, f.reg.Run(context.Background(), r))
		})
	}
}
