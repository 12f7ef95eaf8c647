// Command smithvm runs Smith workflows (YAML step workflows, workflows.json
// manifests and compiled .smbc programs) with durable, resumable state.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/pflag"

	"smith/compiler/cache"
	"smith/internal/buildversion"
	"smith/internal/shellcomp"
	"smith/source"
	"smith/vm"
	"smith/workers/proc"
)

func main() {
	proc.KeepInheritedFiles() // a step's process gets no file smithvm was given
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = `smithvm: run Smith workflows with durable, resumable state

Usage:
  smithvm run FILE [flags]        run a workflow (.yaml/.yml), a manifest (.json) or a compiled .smbc
  smithvm resume RUN_ID [flags]   continue a failed, interrupted or halted run
  smithvm stop RUN_ID             stop a running run (it ends interrupted, resumable)
  smithvm retry RUN_ID [flags]    run a failed or interrupted run again from where it stopped
  smithvm run-step FILE STEP      run one step alone, in a fresh ephemeral run
  smithvm watch FILE              re-run the whole workflow whenever its inputs change
  smithvm list                    the runs under BASE, newest first
  smithvm status RUN_ID           one run: status, current step, step results
  smithvm logs RUN_ID [STEP]      what the steps write and the agents do, live (-f follows)
  smithvm graph RUN_ID            DOT of the run's program coloured by the run's state
  smithvm clean RUN_ID            remove a run's git worktree and branch (refuses unmerged work)
  smithvm diff RUN_ID             the run's code changes against its starting commit
  smithvm merge RUN_ID            merge the run's branch into the repository's checked-out branch
  smithvm clean-processed         delete the processed inbox messages of every agent
  smithvm serve                   the run viewer in a browser (loopback; --token for other addresses)
  smithvm doctor [FILE...]        are the agent CLIs installed and logged in? (--ping: one real request)
  smithvm completion bash|zsh|fish  print a shell completion script
  smithvm --version               print the version (module version or commit)

Directories: BASE is --base or the current directory; every step runs in
BASE/workspace; run state lives in BASE/.orchestrator/runs/<run_id>/.
Run 'smithvm COMMAND --help' for a command's flags.

Exit status: 0 success, 1 a step failed, 2 configuration error, 3 a path
escapes the project, 4 halted awaiting resume, 124 a step timed out,
130 interrupted (state saved; resume continues).
`

// env is what cmd reads from the process and hands down: nothing below cmd
// reads os.Args, the environment or the working directory.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	lookup         func(string) (string, bool)
	getwd          func() (string, error)
	// arg0 is how smithvm was started (os.Args[0]): hints name a command
	// that works after this one (self).
	arg0 string
	// stopCaught: the stop signal is caught (catchStop).
	stopCaught bool
	// name is the running command as refusals name it: "smithvm run"
	// ("smithvm" before dispatch).
	name string
	// programs opens the cache of compiled programs once (programCache;
	// copies of the env share it, and the viewer's requests ask for it
	// concurrently).
	programs func() *cache.Cache
}

// programCache returns the cache of compiled programs that the
// environment names (nil: off), opened at its first use.
func (e *env) programCache() *cache.Cache {
	if e.programs == nil { // an env made by a test
		return cache.Open(e.lookup)
	}
	return e.programs()
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, lookup: os.LookupEnv, getwd: os.Getwd, arg0: os.Args[0]}
	e.programs = sync.OnceValue(func() *cache.Cache { return cache.Open(e.lookup) })
	cmds := commands()
	p := e.program()
	return p.Run(args, usage, buildversion.Get(), stdout, stderr, func(i int, rest []string) int {
		e.name = p.Name + " " + p.Commands[i].Name
		return cmds[i].run(e, rest)
	})
}

// fail prints a refusal of the running command in the one form of every
// refusal, "smithvm COMMAND: CODE: message" (shellcomp.Fail), and returns
// code's exit status.
func (e *env) fail(code source.Code, format string, args ...any) int {
	name := e.name
	if name == "" {
		name = "smithvm"
	}
	// A refusal may quote a name a model chose (merge's untracked files in
	// the way): its control characters go out as escapes.
	return shellcomp.Fail(visibleWriter{e.stderr}, name, code, format, args...)
}

// refuse is fail with E_USAGE: a bad flag or argument, or a request the
// command cannot do as given (exit 2).
func (e *env) refuse(format string, args ...any) int {
	return e.fail(source.EUsage, format, args...)
}

// failErr is fail with err's code (fallback when it has none), err and
// hint (a sentence after it, or ""); it returns err's exit status.
func (e *env) failErr(err error, fallback source.Code, hint string) int {
	e.fail(source.CodeOf(err, fallback), "%v%s", err, hint)
	return vm.ExitStatus(err)
}

func (e *env) newFlags(name, synopsis, help string) *pflag.FlagSet {
	fs := pflag.NewFlagSet("smithvm "+name, pflag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.SortFlags = false
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: smithvm %s %s\n\n%s\nFlags:\n%s", name, synopsis, help, fs.FlagUsages())
	}
	return fs
}

// parse parses args; done is true when the command must stop now.
func (e *env) parse(fs *pflag.FlagSet, args []string, nargs int) (status int, done bool) {
	// pflag prints the usage itself on --help and on errors: silence it and
	// print the help once, to stdout, or the error to stderr.
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(e.stderr)
	if err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fs.SetOutput(e.stdout)
			fs.Usage()
			return 0, true
		}
		return e.refuse("%s (see --help)", flagError(err)), true
	}
	if nargs >= 0 && fs.NArg() != nargs {
		return e.refuse("want %d argument(s), got %d (see --help)", nargs, fs.NArg()), true
	}
	for _, l := range flagLimits {
		if f := fs.Lookup(l.name); f != nil && f.Changed {
			if n, err := strconv.Atoi(f.Value.String()); err == nil && n < l.min {
				return e.refuse("--%s %d: must be at least %d%s", l.name, n, l.min, l.hint), true
			}
		}
	}
	return 0, false
}

// flagLimits are the least values of the number flags: a value below is
// refused rather than read as the default.
var flagLimits = []struct {
	name string
	min  int
	hint string
}{
	{"max-steps", 1, fmt.Sprintf(" (the default is %d)", vm.DefaultMaxSteps)},
	{"max-parallel", 0, " (0, the default, caps nothing)"},
}

// flagError is pflag's error in words: a number flag given something else
// says so, not in strconv's terms.
func flagError(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, ": strconv.Parse"); i >= 0 {
		return msg[:i] + ": want a whole number"
	}
	return msg
}

// common holds the flags most commands share.
type common struct {
	base     string
	wsDir    string // --workspace
	context  []string
	ctxFile  string
	runID    string
	json     bool
	maxSteps int
	maxPar   int
	verbose  bool
	signal   string
	note     string
	record   string
	replay   string
	logLevel logLevel
}

// logLevel is --log-level: info (the default) or debug.
type logLevel string

func (l *logLevel) String() string {
	if *l == "" {
		return "info"
	}
	return string(*l)
}

func (l *logLevel) Set(s string) error {
	if s != "info" && s != "debug" {
		return fmt.Errorf("want info or debug, got %q", s)
	}
	*l = logLevel(s)
	return nil
}

func (l *logLevel) Type() string { return "LEVEL" }

// addLogLevel adds --log-level.
func (c *common) addLogLevel(fs *pflag.FlagSet) {
	fs.Var(&c.logLevel, "log-level", "info, or debug: also log variable substitutions, condition evaluations and transition lookups")
}

func (c *common) addBase(fs *pflag.FlagSet) {
	fs.StringVar(&c.base, "base", "", "project root `DIR` (BASE); default: the current directory")
}

// addMaxParallel adds --max-parallel (run, resume; CONTRACT 12.3).
func (c *common) addMaxParallel(fs *pflag.FlagSet) {
	fs.IntVar(&c.maxPar, "max-parallel", 0, "run at most `N` iterations or branches of a parallel step at once (default: no cap beyond each step's own parallel: or max:)")
}

// addLimits adds --max-steps and --max-parallel (run, resume).
func (c *common) addLimits(fs *pflag.FlagSet) {
	fs.IntVar(&c.maxSteps, "max-steps", vm.DefaultMaxSteps, "fail the run with E_STEP_BUDGET after `N` executed steps (every thread's steps count)")
	c.addMaxParallel(fs)
}

// addWorkspace adds --workspace (run, resume, run-step, watch; CONTRACT 2).
func (c *common) addWorkspace(fs *pflag.FlagSet) {
	fs.StringVar(&c.wsDir, "workspace", "", "run inside `DIR` (an existing repository) instead of BASE/workspace; BASE defaults to DIR")
}

func (c *common) addRun(fs *pflag.FlagSet, withRunID bool) {
	c.addBase(fs)
	c.addWorkspace(fs)
	c.addContext(fs)
	if withRunID {
		fs.StringVar(&c.runID, "run-id", "", "use `ID` as the run id ([A-Za-z0-9_.-]{1,64}, must not exist yet)")
	}
	c.addJSON(fs)
	c.addLimits(fs)
	c.addVerbose(fs)
	c.addRecording(fs)
	c.addLogLevel(fs)
}

// addContext adds --context and --context-file (run, run-step, watch).
func (c *common) addContext(fs *pflag.FlagSet) {
	fs.StringArrayVar(&c.context, "context", nil, "set a context variable, `KEY=VALUE` (repeatable; a string)")
	fs.StringVar(&c.ctxFile, "context-file", "", "JSON object `FILE` merged into the context (--context wins)")
}

// addJSON adds --json of the commands that run steps.
func (c *common) addJSON(fs *pflag.FlagSet) {
	fs.BoolVar(&c.json, "json", false, "print the final state as JSON on stdout")
}

// addVerbose adds -v of the commands that run steps.
func (c *common) addVerbose(fs *pflag.FlagSet) {
	fs.BoolVarP(&c.verbose, "verbose", "v", false, "stream each step's stdout/stderr live (secrets masked)")
}

// addRecording adds --record and --replay.
func (c *common) addRecording(fs *pflag.FlagSet) {
	fs.StringVar(&c.record, "record", "", "record every provider call to `DIR`")
	fs.StringVar(&c.replay, "replay", "", "answer provider calls from the recordings in `DIR`")
}
