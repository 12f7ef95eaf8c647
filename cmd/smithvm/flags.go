package main

import (
	"smith/vm"

	"github.com/spf13/pflag"
)

// flagVals holds the values of every command's flags: the shared ones and
// the few that one command has alone.
type flagVals struct {
	common
	start      string // run
	output     string
	keepBranch bool
	force      bool
	stat       bool
	diff       bool // status
	follow     bool // logs
	olderThan  string
	addr       string // serve
	token      string // serve
	ping       bool   // doctor
	limit      int    // list
	offset     int
	status     string
	workflow   string
}

// A flagBuilder makes one command's flag set, bound to v. Building a flag
// set runs nothing, so docs/cli.md is generated from these same builders
// (TestCLIDocs).
type flagBuilder func(e *env, v *flagVals) *pflag.FlagSet

// A command is one of smithvm's commands: flags makes its flag set (named
// "smithvm NAME") and run runs it.
type command struct {
	flags flagBuilder
	run   func(e *env, args []string) int
}

// commands are smithvm's commands in the usage's order: the one table that
// dispatch, the did-you-mean of an unknown command, the completion scripts
// and docs/cli.md (TestCLIDocs) read. (A function, not a variable:
// completion's run reads the table.)
func commands() []command {
	return []command{
		{(*env).runFlags, (*env).cmdRun},
		{(*env).resumeFlags, (*env).cmdResume},
		{(*env).stopFlags, (*env).cmdStop},
		{(*env).retryFlags, (*env).cmdRetry},
		{(*env).runStepFlags, (*env).cmdRunStep},
		{(*env).watchFlags, (*env).cmdWatch},
		{(*env).listFlags, (*env).cmdList},
		{(*env).statusFlags, (*env).cmdStatus},
		{(*env).logsFlags, (*env).cmdLogs},
		{(*env).graphFlags, (*env).cmdGraph},
		{(*env).cleanFlags, (*env).cmdClean},
		{(*env).diffFlags, (*env).cmdDiff},
		{(*env).mergeFlags, (*env).cmdMerge},
		{(*env).cleanProcessedFlags, (*env).cmdCleanProcessed},
		{(*env).serveFlags, (*env).cmdServe},
		{(*env).doctorFlags, (*env).cmdDoctor},
		{(*env).completionFlags, (*env).cmdCompletion},
	}
}

func (e *env) doctorFlags(v *flagVals) *pflag.FlagSet {
	fs := e.newFlags("doctor", "[FILE...] [flags]", doctorHelp())
	fs.BoolVar(&v.ping, "ping", false, "also send one tiny real request through each preset (costs a few tokens)")
	return fs
}

func (e *env) runFlags(v *flagVals) *pflag.FlagSet {
	fs := e.newFlags("run", "FILE [flags]", "Checks FILE (exit 2, or 3 for a path escape, on any error) and runs it from\nthe start in a new run under BASE/.orchestrator/runs/<run_id>/. At the end it\nprints the run folder, the artifacts folder and the command to go on with.\nThe compiled program is kept for the next run of the unchanged FILE, in\n~/.cache/smith/programs ($XDG_CACHE_HOME/smith/programs), or SMITH_CACHE=DIR;\nSMITH_CACHE=off compiles every time.\n")
	v.addRun(fs, true)
	fs.StringVar(&v.start, "start", "", "(manifests) start at the entry block of `NODE` instead of the manifest's entry")
	return fs
}

func (e *env) runStepFlags(v *flagVals) *pflag.FlagSet {
	fs := e.newFlags("run-step", "FILE STEP [flags]", "Runs only STEP of FILE, with the workflow's context and --context, in a\nnew ephemeral run. Its artifacts go to WORKSPACE/artifacts/STEP/; no other\nrun's state is touched.\n")
	v.addRun(fs, false)
	return fs
}

func (e *env) resumeFlags(v *flagVals) *pflag.FlagSet {
	c := &v.common
	fs := e.newFlags("resume", "RUN_ID [flags]", "Continues a failed, interrupted or halted run: recompiles the workflow from\nthe run's workflow_path (so a fixed workflow can be resumed), keeps the run's\ncontext, skips completed steps and re-enters at the step where it stopped.\nA completed run has nothing to do (exit 0). --signal and --note answer a\nhalted run only: on a failed or interrupted one they are refused (E_USAGE,\nexit 2). Without --base, the run is looked for in the current directory,\nthen among the recent bases (see docs/cli.md).\n")
	c.addContinue(fs, true)
	return fs
}

// addContinue adds the flags of the commands that continue a run
// (resume, retry); decisions adds --signal and --note, which answer a
// halted run.
func (c *common) addContinue(fs *pflag.FlagSet, decisions bool) {
	c.addBase(fs)
	c.addWorkspace(fs)
	c.addJSON(fs)
	c.addLimits(fs)
	c.addVerbose(fs)
	if decisions {
		fs.StringVar(&c.signal, "signal", "", "(halted runs) take the halted block's transition for `SIGNAL:X` instead of re-running it")
		fs.StringVar(&c.note, "note", "", "(halted runs) first append a USER_NOTE segment with `TEXT` to the payload")
	}
	c.addRecording(fs)
	c.addLogLevel(fs)
}

func (e *env) watchFlags(v *flagVals) *pflag.FlagSet {
	c := &v.common
	fs := e.newFlags("watch", "FILE [flags]", "Runs FILE from the start, then again after every change to FILE or to files\nunder WORKSPACE (except WORKSPACE/artifacts/, BASE/.orchestrator/ and files\nthe run itself wrote), folders created while it watches included. Changes are\ndebounced (500 ms). Ctrl-C stops it.\n")
	c.addBase(fs)
	c.addWorkspace(fs)
	c.addContext(fs)
	fs.IntVar(&c.maxSteps, "max-steps", vm.DefaultMaxSteps, "fail a run with E_STEP_BUDGET after `N` executed steps")
	c.addVerbose(fs)
	c.addLogLevel(fs)
	return fs
}

func (e *env) listFlags(v *flagVals) *pflag.FlagSet {
	fs := e.newFlags("list", "[flags]", "Lists the runs under BASE, newest first: status, start, workflow and the\ncurrent step (with how long it has run, for a running run; \"cut off\" when no\nsmithvm process drives a run whose state says running: resume it). It reads the\nindex of runs (BASE/.orchestrator/runs-index.jsonl, rebuilt when missing or\nstale), and a running run's state with its journal.\n")
	v.addBase(fs)
	fs.BoolVar(&v.json, "json", false, "print a JSON array of runs")
	fs.IntVar(&v.limit, "limit", 100, "print at most `N` runs, the newest (0: all)")
	fs.IntVar(&v.offset, "offset", 0, "skip the newest `N` runs (with --limit: the next page)")
	fs.StringVar(&v.status, "status", "", "only runs with this `STATUS` (running, halted, failed, interrupted, completed)")
	fs.StringVar(&v.workflow, "workflow", "", "only runs of the workflow named `NAME`")
	return fs
}

func (e *env) statusFlags(v *flagVals) *pflag.FlagSet {
	fs := e.newFlags("status", "RUN_ID [flags]", "Shows one run: status, current step, where its files are, and a table of its\nsteps (status, attempts, duration, exit code, provider, tokens and cost summed\nover all its runs, commit). A halted run: the step it halted at (with its\niteration inside a loop, as the console names it: Gate [1]) and the signals\nit accepts. A step that a stop, an interrupt or a crash cut off reads\ninterrupted (in --json too; it runs again on resume). Without --base, the\nrun is looked for in the current directory, then among the recent bases\n(see docs/cli.md).\n")
	v.addBase(fs)
	fs.BoolVar(&v.json, "json", false, "print the run's whole state as JSON")
	fs.BoolVar(&v.diff, "diff", false, "(isolation: git-worktree) also print each step's commit and the run's whole diff")
	return fs
}

func (e *env) graphFlags(v *flagVals) *pflag.FlagSet {
	fs := e.newFlags("graph", "RUN_ID [flags]", "Prints the DOT graph of the run's program (recompiled from its\nworkflow_path), each block coloured by its status in the run; when that file\nis gone it says so and fails (exit 2).\n")
	v.addBase(fs)
	fs.StringVarP(&v.output, "output", "o", "", "write the DOT text to `OUT` instead of stdout")
	return fs
}

func (e *env) cleanFlags(v *flagVals) *pflag.FlagSet {
	fs := e.newFlags("clean", "RUN_ID [flags]", "Removes the git worktree of a run made with isolation: git-worktree\n(BASE/.orchestrator/worktrees/<run_id>) and deletes its branch smith/<run_id>.\nIt refuses (E_UNMERGED, exit 2) when the branch has commits that are not\nmerged into the checked-out branch, or the worktree has uncommitted changes,\nunless --force; a run that a smithvm still drives is never cleaned\n(E_RUN_LOCKED). The run's state and logs are kept. Without --base, the run is\nlooked for in the current directory, then among the recent bases.\n")
	v.addBase(fs)
	fs.BoolVar(&v.keepBranch, "keep-branch", false, "remove the worktree but keep the branch smith/<run_id>")
	fs.BoolVar(&v.force, "force", false, "delete unmerged commits and uncommitted changes too")
	return fs
}

func (e *env) diffFlags(v *flagVals) *pflag.FlagSet {
	fs := e.newFlags("diff", "RUN_ID [flags]", "Prints the code changes of a run made with isolation: git-worktree: its branch\nsmith/<run_id> against the commit the run started from, as a unified diff.\nWithout --base, the run is looked for in the current directory, then among\nthe recent bases.\n")
	v.addBase(fs)
	fs.BoolVar(&v.stat, "stat", false, "print the summary (files changed, insertions, deletions) instead")
	return fs
}

func (e *env) mergeFlags(v *flagVals) *pflag.FlagSet {
	fs := e.newFlags("merge", "RUN_ID [flags]", "Merges the branch smith/<run_id> of a run made with isolation: git-worktree\ninto the branch checked out in the repository: a fast-forward where possible,\nelse a merge commit. A conflict exits 1 with E_MERGE_CONFLICT naming the files\nand leaves the repository as it was. A run that is not completed (halted for\napproval, failed, running) is refused with E_RUN_NOT_DONE (exit 2) unless --force.\nWithout --base, the run is looked for in the current directory, then among\nthe recent bases.\n")
	v.addBase(fs)
	fs.BoolVar(&v.force, "force", false, "merge the branch of a run that is not completed, as it is")
	return fs
}

func (e *env) cleanProcessedFlags(v *flagVals) *pflag.FlagSet {
	fs := e.newFlags("clean-processed", "[flags]", "Deletes the messages that agents have consumed: the files in\nWORKSPACE/agents/*/processed/ and in the processed folder beside every custom\ninbox: the runs' workflows declare (wait_for with consume: true moves each\nmessage there once its step completes). Nothing outside those folders is\ntouched.\n")
	v.addBase(fs)
	fs.StringVar(&v.wsDir, "workspace", "", "the WORKSPACE is `DIR` (the runs' --workspace) instead of BASE/workspace; BASE defaults to DIR")
	fs.StringVar(&v.olderThan, "older-than", "", "delete only messages older than this (a Go duration such as 36h, or days such as 7d); without it, every consumed message")
	return fs
}
