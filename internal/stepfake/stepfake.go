// Package stepfake is test support for the packages that run steps
// (workers, workers/steprun, workers/agent): a project in a temporary
// directory with requests whose children run the test binary in a helper
// mode (internal/testchild), and a steprun.Env whose clock moves only when
// the step pauses, so waits and retries are tested without waiting.
//
// It is test support only: no production package may import it.
package stepfake

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"smith/internal/testchild"
	"smith/isa"
	"smith/source"
	"smith/workers/confine"
	"smith/workers/step"
	"smith/workers/steprun"
)

// Epoch is the time a Clock starts at.
var Epoch = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// A Clock is the time of a fake steprun.Env: it moves only when the Env
// pauses, by the pause's length.
type Clock struct {
	Now     time.Time
	Pauses  []time.Duration // every pause, in order
	OnPause func(n int)     // called after each pause (1-based), e.g. to create files
	Err     error           // what each pause returns; nil means the context's error
}

// Env returns an Env on c, whose clock starts at Epoch: its parent
// environment is PATH=/usr/bin:/bin alone.
func (c *Clock) Env() steprun.Env {
	c.Now = Epoch
	return steprun.Env{
		Lookup: func(k string) (string, bool) {
			if k == "PATH" {
				return "/usr/bin:/bin", true
			}
			return "", false
		},
		Clock: func() time.Time { return c.Now },
		Wait: func(ctx context.Context, d time.Duration) error {
			c.Pauses = append(c.Pauses, d)
			c.Now = c.Now.Add(d)
			if c.OnPause != nil {
				c.OnPause(len(c.Pauses))
			}
			if c.Err != nil {
				return c.Err
			}
			return ctx.Err()
		},
	}
}

// A Project is a BASE in a temporary directory (its WORKSPACE is not
// created) with the RUN_ROOT of run r1.
type Project struct {
	T       testing.TB
	Dirs    confine.Dir
	RunRoot string
}

// NewProject returns a fresh Project.
func NewProject(t testing.TB) *Project {
	t.Helper()
	dirs, err := confine.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &Project{T: t, Dirs: dirs, RunRoot: filepath.Join(dirs.Base, ".orchestrator", "runs", "r1")}
}

// Req returns a request for step name of run r1 in p; its children run in
// helper mode.
func (p *Project) Req(kind isa.BlockKind, name string) *step.Request {
	return &step.Request{
		RunID:   "r1",
		Step:    name,
		Kind:    kind,
		Dirs:    p.Dirs,
		RunRoot: p.RunRoot,
		Env:     []step.EnvVar{{Name: testchild.Var, Value: "1"}},
		Timeout: 30 * time.Second,
	}
}

// Write creates a file under WORKSPACE.
func (p *Project) Write(rel, content string) {
	p.T.Helper()
	path := filepath.Join(p.Dirs.Workspace, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		p.T.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		p.T.Fatal(err)
	}
}

// Read returns a file under WORKSPACE, or "<missing>".
func (p *Project) Read(rel string) string {
	b, err := os.ReadFile(filepath.Join(p.Dirs.Workspace, rel))
	if err != nil {
		return "<missing>"
	}
	return string(b)
}

// ErrText prints an error with its code: "E_X: message".
func ErrText(err error) string {
	if err == nil {
		return ""
	}
	var c source.Coded
	if errors.As(err, &c) {
		return string(c.ErrCode()) + ": " + c.Error()
	}
	return "(uncoded) " + err.Error()
}

// Exe returns the argv that runs the test binary in a helper mode.
func Exe(t testing.TB, args ...string) []string {
	argv, _ := testchild.Argv(t, args...)
	return argv
}

// Describe prints the fields of a Result the tests compare.
func Describe(r step.Result) string {
	s := fmt.Sprintf("signal=%s exit=%d attempts=%d output=%q", r.Signal, r.ExitCode, r.Attempts, Short(r.Output))
	if r.Provider != "" {
		s += " provider=" + r.Provider
	}
	if r.Tokens != 0 {
		s += fmt.Sprintf(" tokens=%d", r.Tokens)
	}
	if r.Err != nil {
		s += " err=" + ErrText(r.Err)
	}
	return s
}

// Short returns s, cut to its first 80 bytes and its length when longer.
func Short(s string) string {
	if len(s) > 80 {
		return s[:80] + fmt.Sprintf("...(%d bytes)", len(s))
	}
	return s
}

// A Want is the expected outcome of a Run.
type Want struct {
	Signal   string
	Exit     int
	Attempts int    // 0 = not checked
	Output   string // checked when CheckOut
	CheckOut bool
	Code     source.Code // "" = no Err
	ErrHas   string
}

// Check reports an error on t when got is not w; what names the run.
func (w Want) Check(t testing.TB, what string, got step.Result) {
	t.Helper()
	ok := got.Signal == w.Signal && got.ExitCode == w.Exit &&
		(w.Attempts == 0 || got.Attempts == w.Attempts) &&
		(!w.CheckOut || got.Output == w.Output)
	var c source.Coded
	switch {
	case w.Code == "":
		ok = ok && got.Err == nil
	case errors.As(got.Err, &c):
		ok = ok && c.ErrCode() == w.Code && strings.Contains(c.Error(), w.ErrHas)
	default:
		ok = false
	}
	if !ok {
		t.Errorf("Run(%s) = %s, want signal=%s exit=%d attempts=%d output=%q (checked %v) err=%s containing %q",
			what, Describe(got), w.Signal, w.Exit, w.Attempts, w.Output, w.CheckOut, w.Code, w.ErrHas)
	}
}
