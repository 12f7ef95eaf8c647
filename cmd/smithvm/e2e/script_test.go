package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"smith/isa"
	"smith/source"
)

// TestScripts runs every testdata/script/NAME.txtar: one end-to-end case
// per file, as docs/testing.md describes. $WORK is BASE (the txtar's
// files are written there, workspace/ included); the binaries TestMain
// built are on PATH as smithvm, smithc and helper.
//
// Commands besides testscript's own:
//
//	smithvm ARGS...   run smithvm ARGS... --base $WORK; its stdout and
//	                  stderr are what stdout/stderr then check
//	exit N            the last smithvm exited with status N
//
// and the commands that read what a run left behind (readCmds).
//
// [tool:NAME] holds when NAME is on PATH (a missing tool fails with CI=true).
//
//	smbc nodefault IN OUT
//	                  write the program IN without its tables' defaults
//	                  (SIGNAL:FAIL_DEFAULT), which smithc never emits
//	smbc loopnext OUT write a program that passes verification but runs
//	                  LOOP_NEXT with no loop frame (an internal error)
func TestScripts(t *testing.T) {
	t.Parallel()
	params := testscript.Params{
		Dir:       "testdata/script",
		Condition: toolCondition,
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", filepath.Dir(built.smithvm)+string(os.PathListSeparator)+os.Getenv("PATH"))
			env.Setenv("XDG_CACHE_HOME", filepath.Join(env.WorkDir, ".cache"))
			return os.MkdirAll(filepath.Join(env.WorkDir, "workspace"), 0o755)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"smithvm": func(ts *testscript.TestScript, neg bool, args []string) {
				err := ts.Exec(built.smithvm, append(args, "--base", ts.Getenv("WORK"))...)
				code := 0
				var ee *exec.ExitError
				switch {
				case errors.As(err, &ee):
					code = ee.ExitCode()
				case err != nil:
					ts.Fatalf("smithvm: %v", err)
				}
				ts.Setenv("SMITHVM_EXIT", strconv.Itoa(code))
				setRunID(ts)
				if neg != (code != 0) {
					ts.Fatalf("smithvm exited with status %d", code)
				}
			},
			"smbc": cmdSmbc,
			"exit": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 1 || neg {
					ts.Fatalf("usage: exit N")
				}
				if got := ts.Getenv("SMITHVM_EXIT"); got != args[0] {
					ts.Fatalf("smithvm exited with status %s, want %s", got, args[0])
				}
			},
		},
	}
	for name, cmd := range readCmds {
		params.Cmds[name] = cmd
	}
	testscript.Run(t, params)
}

// toolCondition is the script condition [tool:NAME]: NAME is on PATH. A
// missing tool is an error with CI=true, so that [!tool:git] skip never
// skips in CI.
func toolCondition(cond string) (bool, error) {
	name, ok := strings.CutPrefix(cond, "tool:")
	if !ok {
		return false, fmt.Errorf("unknown condition %q", cond)
	}
	if _, err := exec.LookPath(name); err != nil {
		if inCI() {
			return false, fmt.Errorf("%s is not installed (with CI=true a missing tool fails)", name)
		}
		return false, nil
	}
	return true, nil
}

// cmdSmbc is the script command smbc: it writes hand-cut programs that no
// workflow compiles to, for the runtime errors the static checks rule out.
func cmdSmbc(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: smbc nodefault IN OUT | smbc loopnext OUT")
	}
	var p *isa.Program
	switch {
	case args[0] == "nodefault" && len(args) == 3:
		var err error
		p, err = isa.Decode([]byte(ts.ReadFile(args[1])))
		ts.Check(err)
		for i := range p.Tables {
			p.Tables[i].HasDefault, p.Tables[i].Default = false, 0
		}
	case args[0] == "loopnext" && len(args) == 2:
		p = &isa.Program{
			Name:   "bad",
			Nodes:  []isa.Node{{ID: "main"}},
			Blocks: []isa.Block{{ID: "L", Kind: isa.KindLoop, Start: 0, Dispatch: 1, Loop: &isa.Loop{Items: isa.TValue{Kind: isa.TList}, Body: 0}}},
			Tables: []isa.Table{{Block: 0}},
			Code:   []isa.Instr{{Op: isa.OpLoopNext, A: 0, B: 0}, {Op: isa.OpDispatch}},
			Pos:    []source.Pos{{File: "f.yaml", Line: 3, Col: 5}, {}},
		}
	default:
		ts.Fatalf("usage: smbc nodefault IN OUT | smbc loopnext OUT")
	}
	data, err := p.MarshalBinary()
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[len(args)-1]), data, 0o644))
}
