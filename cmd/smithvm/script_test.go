package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
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
func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
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
				if neg != (code != 0) {
					ts.Fatalf("smithvm exited with status %d", code)
				}
			},
			"exit": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 1 || neg {
					ts.Fatalf("usage: exit N")
				}
				if got := ts.Getenv("SMITHVM_EXIT"); got != args[0] {
					ts.Fatalf("smithvm exited with status %s, want %s", got, args[0])
				}
			},
		},
	})
}
