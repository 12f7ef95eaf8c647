package agent_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"smith/internal/stepfake"
	"smith/internal/testchild"
	"smith/source"
	"smith/workers/agent"
	"smith/workers/provider"
	"smith/workers/step"
)

func TestMain(m *testing.M) {
	testchild.Main()
	os.Exit(m.Run())
}

// A fixture is one project (BASE, WORKSPACE, a RUN_ROOT) and a Runner with a
// fake clock and pause (internal/stepfake).
type fixture struct {
	*stepfake.Project
	stepfake.Clock
	t   *testing.T
	run *agent.Runner
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{Project: stepfake.NewProject(t), t: t}
	f.run = &agent.Runner{Env: f.Env()}
	return f
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
