package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"smith/cmd/smithvm/serve"
	"smith/compiler"
	"smith/isa"
	"smith/source"
	"smith/vm"
	"smith/vm/store"
	"smith/workers"
	"smith/workers/step"
	"smith/workers/text"
)

func (e *env) cmdList(args []string) int {
	var c flagVals
	fs := e.listFlags(&c)
	if st, done := e.parse(fs, args, 0); done {
		return st
	}
	if c.limit < 0 || c.offset < 0 {
		return e.refuse("--limit and --offset must not be negative")
	}
	if err := serve.CheckStatus(c.status); err != nil {
		return e.refuse("%v", err)
	}
	proj, err := e.project(c.base)
	if err != nil {
		e.failErr(err, source.EUsage, "")
		return source.ExitConfig
	}
	page, err := proj.store.ListPage(store.ListOptions{Status: c.status, Workflow: c.workflow, Offset: c.offset, Limit: c.limit})
	if err != nil {
		fmt.Fprintf(e.stderr, "smithvm: %v\n", err)
		return source.ExitConfig
	}
	runs := page.Runs
	if c.json {
		out := make([]map[string]string, 0, len(runs))
		for _, r := range runs {
			m := map[string]string{"run_id": r.RunID, "workflow_name": r.WorkflowName, "status": r.Status,
				"started_at": r.StartedAt, "ended_at": r.EndedAt, "current_step": r.CurrentStep}
			if r.StepStartedAt != "" {
				m["step_started_at"] = r.StepStartedAt
			}
			out = append(out, m)
		}
		return writeJSON(e, out)
	}
	if len(runs) == 0 {
		if page.Total > 0 {
			fmt.Fprintf(e.stdout, "no runs past the first %d (of %d)\n", c.offset, page.Total)
		} else {
			fmt.Fprintf(e.stdout, "no runs under %s\n", proj.base)
		}
		return 0
	}
	now := time.Now()
	out := bufio.NewWriter(e.stdout) // one write, not one a run
	defer out.Flush()
	fmt.Fprintf(out, "%-36s  %-11s  %-20s  %-20s  %s\n", "RUN_ID", "STATUS", "STARTED", "WORKFLOW", "CURRENT STEP")
	for _, r := range runs {
		cur := r.CurrentStep
		if proj.store.CutOff(r.RunID, r.Status) {
			cur += " (" + store.CutOffNote + ")"
		} else if t, err := time.Parse(time.RFC3339Nano, r.StepStartedAt); err == nil && r.Status == vm.StatusRunning {
			cur += fmt.Sprintf(" (running for %s)", now.Sub(t).Round(100*time.Millisecond))
		}
		fmt.Fprintf(out, "%-36s  %-11s  %-20s  %-20s  %s\n", r.RunID, r.Status, r.StartedAt, r.WorkflowName, cur)
	}
	out.Flush()
	if rest := page.Total - c.offset - len(runs); rest > 0 {
		fmt.Fprintf(e.stderr, "INFO: %d more runs (--offset %d, or --limit 0 for all).\n", rest, c.offset+len(runs))
	}
	return 0
}

// readRun loads a run's state without locking it. Without --base, the run
// is looked for in the current directory, then in the recent bases.
func (e *env) readRun(base, id string) (*project, *vm.State, int) {
	base, code, ok := e.locateBase(base, id)
	if !ok {
		return nil, nil, code
	}
	proj, err := e.project(base)
	if err != nil {
		e.failErr(err, source.EUsage, "")
		return nil, nil, source.ExitConfig
	}
	st, err := proj.store.ReadState(id)
	if err == nil {
		err = store.Problem(id, st)
	}
	if err != nil {
		return nil, nil, e.failErr(err, source.EInternal, notFoundHint(err, proj))
	}
	return proj, st, 0
}

func (e *env) cmdStatus(args []string) int {
	var c flagVals
	fs := e.statusFlags(&c)
	if st, done := e.parse(fs, args, 1); done {
		return st
	}
	proj, st, code := e.readRun(c.base, fs.Arg(0))
	if st == nil {
		return code
	}
	// The table and --json show the same step statuses: one cut off by a
	// stop or a crash reads interrupted (the viewer shows the same).
	cutOff := proj.store.CutOff(st.RunID, st.Status)
	st = st.Shown(cutOff)
	if c.json {
		return writeJSON(e, st)
	}
	if msg := workflowGone(st, "status lists the steps in the order they ran, not in the workflow's, and no signals for a halted step"); msg != "" {
		fmt.Fprintf(e.stderr, "WARNING: %s\n", msg)
	}
	// The workflow is compiled once for all the parts that read it (the
	// step order, the kept outputs, a halted step's signals, the masked
	// secrets): a large workflow's compile is most of a status.
	prog := loadProgram(e, st)
	e.printStatus(proj, st, prog, cutOff)
	if c.diff {
		e.printDiffs(proj, st, prog)
	}
	return 0
}

// printStatus prints a run's summary and its step table. A model's or a
// CLI's text in it (a step's error) shows its control characters as
// escapes (visibleWriter). st is the state as shown (vm.State.Shown);
// prog, its workflow compiled (nil when it no longer loads); cutOff: its
// status says running but no process drives it.
func (e *env) printStatus(proj *project, st *vm.State, prog *isa.Program, cutOff bool) {
	w := visibleWriter{e.stdout}
	fmt.Fprintf(w, "run:          %s\n", st.RunID)
	fmt.Fprintf(w, "workflow:     %s (%s)\n", st.WorkflowName, st.WorkflowPath)
	switch {
	case cutOff:
		fmt.Fprintf(w, "status:       %s (%s; resume with '%s resume %s%s')\n", st.Status, store.CutOffNote, e.self(), st.RunID, baseFlagOf(e, proj.base))
	case st.Status == vm.StatusInterrupted:
		// Stopped (Ctrl-C, a hang-up, smithvm stop): nothing to fix first.
		fmt.Fprintf(w, "status:       %s (resume with '%s resume %s%s')\n", st.Status, e.self(), st.RunID, baseFlagOf(e, proj.base))
	default:
		fmt.Fprintf(w, "status:       %s\n", st.Status)
	}
	fmt.Fprintf(w, "started:      %s\n", st.StartedAt)
	if st.EndedAt != "" {
		fmt.Fprintf(w, "ended:        %s\n", st.EndedAt)
	}
	cur := st.CurrentStep
	if r := st.Steps[cur]; r != nil && r.Status == vm.StepRunning && st.Status == vm.StatusRunning && !cutOff {
		if t, err := time.Parse(time.RFC3339Nano, r.StartedAt); err == nil {
			cur += fmt.Sprintf(" (attempt %d, running for %s)", max(r.Attempts, 1), time.Since(t).Round(100*time.Millisecond))
		}
	}
	fmt.Fprintf(w, "current step: %s\n", cur)
	fmt.Fprintf(w, "run folder:   %s\n", filepath.Join(proj.store.RunsDir(), st.RunID))
	fmt.Fprintf(w, "artifacts:    %s\n", artifactsOf(proj, st))
	if outs := keptOutputs(st, prog); len(outs) > 0 {
		fmt.Fprintf(w, "outputs:      %s (this run's copies of its output files)\n", filepath.Join(proj.store.RunsDir(), st.RunID, "outputs"))
		for _, o := range outs {
			fmt.Fprintf(w, "  %s\n", o)
		}
	}
	if st.IsHalted {
		at := st.HaltedBlock
		if it := st.IterationRef(); it != "" {
			at += " [" + it + "]" // the iteration, as the console names it
		}
		fmt.Fprintf(w, "halted at:    %s (resume with: smithvm resume %s [--signal SIGNAL:X] [--note TEXT])\n", at, st.RunID)
		if prog != nil {
			if sigs := prog.Signals(st.HaltedBlock); len(sigs) > 0 {
				fmt.Fprintf(w, "signals:      %s\n", strings.Join(sigs, ", "))
			}
		}
	}
	usage, total := serve.StepUsage(filepath.Join(proj.store.RunsDir(), st.RunID, "logs", "events.jsonl"))
	if st.Stats.TotalTokensUsed > 0 || st.Stats.TotalLinesWritten > 0 || total.Cost > 0 {
		fmt.Fprintf(w, "stats:        %d tokens, cost %s, %d lines written\n", st.Stats.TotalTokensUsed, serve.FormatCost(total.Cost), st.Stats.TotalLinesWritten)
	}
	if st.WorktreePath != "" {
		if stat, err := workers.Diff(context.Background(), proj.dirs, st.RunID, true, e.maskerOf(prog), e.lookup); err == nil {
			if lines := strings.Split(strings.TrimSpace(stat), "\n"); lines[len(lines)-1] != "" {
				fmt.Fprintf(w, "changes:      %s (smithvm status %s --diff, or smithvm diff %s)\n", strings.TrimSpace(lines[len(lines)-1]), st.RunID, st.RunID)
			}
		}
	}
	names, depth := serve.StepOrder(st, prog)
	var table strings.Builder
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	if len(names) > 0 {
		fmt.Fprintln(w)
		// RUNS: how many times the step was entered (a goto back, a loop's
		// iterations); ATTEMPTS: the tries of its last run.
		// TOKENS and COST: summed over every run of the step.
		fmt.Fprintln(tw, "STEP\tSTATUS\tRUNS\tATTEMPTS\tDURATION\tEXIT\tPROVIDER\tTOKENS\tCOST\tCOMMIT\tDETAIL")
	}
	for _, n := range names {
		r := st.Steps[n]
		detail := r.Signal
		if detail == vm.SigSuccess {
			detail = ""
		}
		if r.Error != nil {
			detail = r.Error.Code + ": " + r.Error.Message
		}
		if r.IterationsTotal > 0 {
			detail = fmt.Sprintf("%d iterations", r.IterationsTotal)
		}
		name := strings.Repeat("  ", depth[n]) + n
		u := usage[n]
		if u.Tokens == 0 {
			u.Tokens = r.Tokens // a run from before events carried tokens
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.1fs\t%d\t%s\t%s\t%s\t%s\t%s\n", name, r.Status, dash(count(max(u.Runs, st.Visits[n], r.Visits))), r.Attempts, r.Duration, r.ExitCode,
			dash(r.Provider), dash(tokens(u.Tokens)), serve.FormatCost(u.Cost), dash(shortCommit(r.Commit)), strings.ReplaceAll(detail, "\n", " "))
	}
	tw.Flush()
	for _, l := range strings.SplitAfter(table.String(), "\n") {
		if l != "" {
			fmt.Fprintln(w, strings.TrimRight(l, " \n"))
		}
	}
	writeThreads(w, st)
	writeSessions(w, st)
}

// writeSessions lists the agents' sessions (session: continue, CONTRACT
// 12.1), sorted by key: agent (and thread), provider, session id, calls.
func writeSessions(w io.Writer, st *vm.State) {
	if len(st.Sessions) == 0 {
		return
	}
	keys := slices.Sorted(maps.Keys(st.Sessions))
	fmt.Fprintln(w)
	fmt.Fprintln(w, "sessions:")
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, k := range keys {
		s := st.Sessions[k]
		calls := "calls"
		if s.Turns == 1 {
			calls = "call"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d %s\n", k, s.Provider, s.ID, s.Turns, calls)
	}
	tw.Flush()
	fmt.Fprint(w, b.String())
}

// shortCommit is a commit's first 10 characters.
func shortCommit(c string) string { return c[:min(len(c), 10)] }

// printDiffs prints, for status --diff, each step's commit (its patch) in
// step order and then the run's whole diff against its starting commit,
// through Smith's git (CONTRACT 13).
func (e *env) printDiffs(proj *project, st *vm.State, prog *isa.Program) {
	w := e.stdout
	mask := e.maskerOf(prog)
	names, _ := serve.StepOrder(st, prog)
	for _, n := range names {
		r := st.Steps[n]
		if r.Commit == "" {
			continue
		}
		out, err := workers.ShowCommit(context.Background(), proj.dirs, r.Commit, false, mask, e.lookup)
		if err != nil {
			fmt.Fprintf(w, "\n=== step %s: commit %s: %v\n", n, r.Commit, err)
			continue
		}
		fmt.Fprintf(w, "\n=== step %s (commit %s)\n%s", n, shortCommit(r.Commit), out)
	}
	if st.WorktreePath == "" {
		fmt.Fprintf(w, "\n(run %s has no worktree: it did not run with isolation: git-worktree)\n", st.RunID)
		return
	}
	out, err := workers.Diff(context.Background(), proj.dirs, st.RunID, false, mask, e.lookup)
	if err != nil {
		fmt.Fprintf(w, "\n=== run %s: %v\n", st.RunID, err)
		return
	}
	fmt.Fprintf(w, "\n=== run %s (%s against its starting commit)\n%s", st.RunID, step.WorktreeBranch(st.RunID), out)
}

// count is n in decimal, or "" for 0.
func count(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// dash is s, or "-" for nothing.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func tokens(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprint(n)
}

// writeThreads lists the threads of the parallel step a run is in: each
// iteration (by index) or branch (by name), its status and where it is.
func writeThreads(w io.Writer, st *vm.State) {
	if len(st.Threads) == 0 {
		return
	}
	keys := make([]string, 0, len(st.Threads))
	for k := range st.Threads {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, errA := strconv.Atoi(keys[i])
		b, errB := strconv.Atoi(keys[j])
		if errA == nil && errB == nil {
			return a < b
		}
		return keys[i] < keys[j]
	})
	fmt.Fprintf(w, "\nthreads of %s (started ones; finished ones are not run again on resume):\n", st.CurrentStep)
	for _, k := range keys {
		t := st.Threads[k]
		at := t.CurrentStep
		if t.Error != nil {
			at += " (" + t.Error.Message + ")"
		}
		fmt.Fprintf(w, "  [%s]  %-10s  %s\n", k, t.Status, at)
	}
}

// stepOrder lists the run's step results in the workflow's order (its
// blocks as compiled from workflow_path), then any others sorted, with
// their depth in loop bodies (serve.StepOrder, which the viewer uses too).
func (e *env) stepOrder(st *vm.State) (names []string, depth map[string]int) {
	return serve.StepOrder(st, loadProgram(e, st))
}

// loadProgram compiles run st's workflow from its file (or takes the
// program kept for it: compiler/cache), as the commands that show a run
// read it; nil when it no longer loads (a variable: a test counts the
// compiles).
var loadProgram = func(e *env, st *vm.State) *isa.Program {
	p, _ := e.programCache().LoadProgram(st.WorkflowPath, compiler.Options{ContextKeys: keysOf(st.Context)})
	return p
}

func (e *env) cmdGraph(args []string) int {
	var c flagVals
	fs := e.graphFlags(&c)
	out := &c.output
	if st, done := e.parse(fs, args, 1); done {
		return st
	}
	proj, st, code := e.readRun(c.base, fs.Arg(0))
	if st == nil {
		return code
	}
	st = st.Shown(proj.store.CutOff(st.RunID, st.Status)) // as status shows it
	if msg := workflowGone(st, "the graph is drawn from its steps: restore it there to draw the run's graph"); msg != "" {
		return e.fail(source.EParse, "%s", msg)
	}
	prog, code := e.load(st.WorkflowPath, keysOf(st.Context))
	if prog == nil {
		return code
	}
	w := e.stdout
	var f *os.File
	if *out != "" {
		var err error
		if f, err = os.Create(*out); err != nil {
			fmt.Fprintf(e.stderr, "smithvm graph: %v\n", err)
			return source.ExitExec
		}
		defer f.Close()
		w = f
	}
	if err := serve.WriteDOT(prog, st, w); err != nil {
		fmt.Fprintf(e.stderr, "smithvm graph: %v\n", err)
		return source.ExitExec
	}
	return 0
}

func writeJSON(e *env, v any) int {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(e.stderr, "smithvm: %v\n", err)
		return source.ExitExec
	}
	return 0
}

// artifactsOf is WORKSPACE/artifacts of the run st: its git worktree's for
// an isolated run, the --workspace folder it recorded, else BASE's
// workspace. The printed path is the one the steps wrote to.
func artifactsOf(proj *project, st *vm.State) string {
	switch {
	case st.WorktreePath != "":
		return filepath.Join(st.WorktreePath, "artifacts")
	case st.Workspace != "":
		return filepath.Join(st.Workspace, "artifacts")
	}
	return filepath.Join(proj.dirs.Workspace, "artifacts")
}

// keptOutputs lists the run's copies of its steps' output files
// (RUN_ROOT/outputs/...), in step order, "STEP: PATH" each.
func keptOutputs(st *vm.State, prog *isa.Program) []string {
	names, _ := serve.StepOrder(st, prog)
	var out []string
	for _, n := range names {
		if r := st.Steps[n]; r != nil && r.OutputFile != "" {
			out = append(out, n+": "+r.OutputFile)
		}
	}
	return out
}

// visibleWriter writes what it is given with its control characters other
// than line breaks and tabs written out as escapes (text.Visible): each
// write is a whole piece of text (printStatus writes lines).
type visibleWriter struct{ w io.Writer }

func (v visibleWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(v.w, text.Visible(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
