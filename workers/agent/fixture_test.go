package agent_test

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
	"smith/source"
	"smith/workers/agent"
	"smith/workers/confine"
	"smith/workers/proc"
	"smith/workers/provider"
	"smith/workers/step"
	"smith/workers/steprun"
)

func TestMain(m *testing.M) {
	testchild.Main()
	os.Exit(m.Run())
}

// A fixture is one project (BASE, WORKSPACE, a RUN_ROOT) and a Runner with a
// fake clock and pause.
type fixture struct {
	t       *testing.T
	dirs    confine.Dir
	runRoot string
	run     *agent.Runner
	clock   time.Time
	sleeps  []time.Duration
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dirs, err := confine.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, dirs: dirs, runRoot: filepath.Join(dirs.Base, ".orchestrator", "runs", "r1")}
	f.clock = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	f.run = &agent.Runner{Env: steprun.Env{
		Lookup: func(k string) (string, bool) {
			if k == "PATH" {
				return "/usr/bin:/bin", true
			}
			return "", false
		},
		Clock: func() time.Time { return f.clock },
		Wait: func(ctx context.Context, d time.Duration) error {
			f.sleeps = append(f.sleeps, d)
			f.clock = f.clock.Add(d)
			return ctx.Err()
		},
	}}
	return f
}

// req returns a request for step in the fixture's project; children run in
// helper mode.
func (f *fixture) req(kind step.Kind, name string) *step.Request {
	return &step.Request{
		RunID:   "r1",
		Step:    name,
		Kind:    kind,
		Dirs:    f.dirs,
		RunRoot: f.runRoot,
		Env:     []proc.EnvVar{{Name: testchild.Var, Value: "1"}},
		Timeout: 30 * time.Second,
	}
}

// write creates a file under WORKSPACE.
func (f *fixture) write(rel, content string) {
	f.t.Helper()
	p := filepath.Join(f.dirs.Workspace, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// read returns a file under WORKSPACE, or "<missing>".
func (f *fixture) read(rel string) string {
	b, err := os.ReadFile(filepath.Join(f.dirs.Workspace, rel))
	if err != nil {
		return "<missing>"
	}
	return string(b)
}

// exe returns the argv that runs the test binary in a helper mode.
func exe(t *testing.T, args ...string) []string {
	argv, _ := testchild.Argv(t, args...)
	return argv
}

// fake returns a provider.Def named name whose command runs the test binary in
// a helper mode.
func fake(t *testing.T, name string, args ...string) provider.Def {
	return provider.Def{Name: name, Command: exe(t, args...)}
}

// describe prints the fields of a Result the tests compare.
func describe(r step.Result) string {
	s := fmt.Sprintf("signal=%s exit=%d attempts=%d output=%q", r.Signal, r.ExitCode, r.Attempts, short(r.Output))
	if r.Provider != "" {
		s += " provider=" + r.Provider
	}
	if r.Tokens != 0 {
		s += fmt.Sprintf(" tokens=%d", r.Tokens)
	}
	var c source.Coded
	if errors.As(r.Err, &c) {
		s += " err=" + string(c.ErrCode()) + ": " + c.Error()
	} else if r.Err != nil {
		s += " err=(uncoded) " + r.Err.Error()
	}
	return s
}

func short(s string) string {
	if len(s) > 80 {
		return s[:80] + fmt.Sprintf("...(%d bytes)", len(s))
	}
	return s
}

// A want is the expected outcome of a Run.
type want struct {
	signal   string
	exit     int
	attempts int    // 0 = not checked
	output   string // checked when checkOut
	checkOut bool
	code     source.Code // "" = no Err
	errHas   string
}

func (w want) check(t *testing.T, what string, got step.Result) {
	t.Helper()
	ok := got.Signal == w.signal && got.ExitCode == w.exit &&
		(w.attempts == 0 || got.Attempts == w.attempts) &&
		(!w.checkOut || got.Output == w.output)
	var c source.Coded
	switch {
	case w.code == "":
		ok = ok && got.Err == nil
	case errors.As(got.Err, &c):
		ok = ok && c.ErrCode() == w.code && strings.Contains(c.Error(), w.errHas)
	default:
		ok = false
	}
	if !ok {
		t.Errorf("Run(%s) = %s, want signal=%s exit=%d attempts=%d output=%q (checked %v) err=%s containing %q",
			what, describe(got), w.signal, w.exit, w.attempts, w.output, w.checkOut, w.code, w.errHas)
	}
}
