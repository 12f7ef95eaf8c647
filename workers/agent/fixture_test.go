package agent_test

import (
	"os"
	"testing"

	"smith/internal/stepfake"
	"smith/internal/testchild"
	"smith/workers/agent"
	"smith/workers/provider"
)

func TestMain(m *testing.M) {
	if os.Getenv(testchild.Var) == "1" && len(os.Args) > 1 && os.Args[1] == "bigstream" {
		os.Exit(bigStream(os.Args[2:]))
	}
	if os.Getenv(testchild.Var) == "1" && len(os.Args) > 1 && os.Args[1] == "bigreply" {
		os.Exit(bigReply(os.Args[2:]))
	}
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

// fake returns a provider.Def named name whose command runs the test binary in
// a helper mode.
func fake(t *testing.T, name string, args ...string) provider.Def {
	return provider.Def{Name: name, Command: stepfake.Exe(t, args...)}
}
