package steprun_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"smith/internal/stepfake"
	"smith/internal/testchild"
	"smith/isa"
	"smith/workers/step"
)

func TestMain(m *testing.M) {
	testchild.Main()
	os.Exit(m.Run())
}

// newReq returns a request for step name in a fresh project (WORKSPACE not
// created yet) with a RUN_ROOT; its children run in helper mode.
func newReq(t *testing.T, name string) *step.Request {
	t.Helper()
	return stepfake.NewProject(t).Req(isa.KindCommand, name)
}

// A fakeEnv is an Env whose clock only moves when it pauses
// (internal/stepfake): it records the pauses and calls OnPause after each.
type fakeEnv = stepfake.Clock

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
var errText = stepfake.ErrText

// outcome prints what a Result says happened: signal, exit code, tries and
// the coded error.
func outcome(r step.Result) string {
	s := fmt.Sprintf("%s exit=%d attempts=%d", r.Signal, r.ExitCode, r.Attempts)
	if r.Err != nil {
		s += " " + errText(r.Err)
	}
	return s
}
