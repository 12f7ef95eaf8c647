package steprun_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"smith/internal/testchild"
	"smith/source"
	"smith/workers/confine"
	"smith/workers/proc"
	"smith/workers/step"
	"smith/workers/steprun"
)

func TestMain(m *testing.M) {
	testchild.Main()
	os.Exit(m.Run())
}

// newReq returns a request for step name in a fresh project (WORKSPACE not
// created yet) with a RUN_ROOT; its children run in helper mode.
func newReq(t *testing.T, name string) *step.Request {
	t.Helper()
	dirs, err := confine.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &step.Request{
		RunID:   "r1",
		Step:    name,
		Kind:    step.KindCommand,
		Dirs:    dirs,
		RunRoot: filepath.Join(dirs.Base, ".orchestrator", "runs", "r1"),
		Env:     []proc.EnvVar{{Name: testchild.Var, Value: "1"}},
		Timeout: 30 * time.Second,
	}
}

// A fakeEnv is an Env whose clock only moves when it pauses; it records the
// pauses and calls onPause (1-based) after each.
type fakeEnv struct {
	clock   time.Time
	pauses  []time.Duration
	onPause func(n int)
	err     error // what each pause returns (nil = ctx.Err())
}

func (f *fakeEnv) env() steprun.Env {
	f.clock = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	return steprun.Env{
		Lookup: func(k string) (string, bool) {
			if k == "PATH" {
				return "/usr/bin:/bin", true
			}
			return "", false
		},
		Clock: func() time.Time { return f.clock },
		Wait: func(ctx context.Context, d time.Duration) error {
			f.pauses = append(f.pauses, d)
			f.clock = f.clock.Add(d)
			if f.onPause != nil {
				f.onPause(len(f.pauses))
			}
			if f.err != nil {
				return f.err
			}
			return ctx.Err()
		},
	}
}

// write creates a file under req's WORKSPACE.
func write(t *testing.T, req *step.Request, rel, content string) {
	t.Helper()
	p := filepath.Join(req.Dirs.Workspace, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// errText prints an error with its code: "E_X: message".
func errText(err error) string {
	if err == nil {
		return ""
	}
	var c source.Coded
	if errors.As(err, &c) {
		return string(c.ErrCode()) + ": " + c.Error()
	}
	return "(uncoded) " + err.Error()
}

// outcome prints what a Result says happened: signal, exit code, tries and
// the coded error.
func outcome(r step.Result) string {
	s := fmt.Sprintf("%s exit=%d attempts=%d", r.Signal, r.ExitCode, r.Attempts)
	if r.Err != nil {
		s += " " + errText(r.Err)
	}
	return s
}
