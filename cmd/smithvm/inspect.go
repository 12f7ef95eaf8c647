package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"smith/compiler"
	"smith/manifest/source"
	"smith/vm"
)

func (e *env) cmdList(args []string) int {
	var c common
	fs := e.newFlags("list", "[flags]", "Lists the runs under BASE, newest first.\n")
	c.addBase(fs)
	fs.BoolVar(&c.json, "json", false, "print a JSON array of runs")
	if st, done := e.parse(fs, args, 0); done {
		return st
	}
	proj, err := e.project(c.base)
	if err != nil {
		fmt.Fprintf(e.stderr, "smithvm: %v\n", err)
		return source.ExitConfig
	}
	runs, err := proj.store.List()
	if err != nil {
		fmt.Fprintf(e.stderr, "smithvm: %v\n", err)
		return source.ExitConfig
	}
	if c.json {
		out := make([]map[string]string, 0, len(runs))
		for _, r := range runs {
			out = append(out, map[string]string{"run_id": r.RunID, "workflow_name": r.WorkflowName, "status": r.Status,
				"started_at": r.StartedAt, "ended_at": r.EndedAt, "current_step": r.CurrentStep})
		}
		return writeJSON(e, out)
	}
	if len(runs) == 0 {
		fmt.Fprintf(e.stdout, "no runs under %s\n", proj.base)
		return 0
	}
	fmt.Fprintf(e.stdout, "%-36s  %-11s  %-20s  %-20s  %s\n", "RUN_ID", "STATUS", "STARTED", "WORKFLOW", "CURRENT STEP")
	for _, r := range runs {
		fmt.Fprintf(e.stdout, "%-36s  %-11s  %-20s  %-20s  %s\n", r.RunID, r.Status, r.StartedAt, r.WorkflowName, r.CurrentStep)
	}
	return 0
}

// readRun loads a run's state without locking it.
func (e *env) readRun(base, id string) (*project, *vm.State, int) {
	proj, err := e.project(base)
	if err != nil {
		fmt.Fprintf(e.stderr, "smithvm: %v\n", err)
		return nil, nil, source.ExitConfig
	}
	var st vm.State
	err = proj.store.Read(id, &st, func(line []byte) error {
		var d vm.Delta
		if err := json.Unmarshal(line, &d); err != nil {
			return err
		}
		st.Apply(&d)
		return nil
	})
	if err == nil {
		err = stateProblem(id, &st)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "smithvm: %s: %v\n", codeOf(err), err)
		return nil, nil, exitStatus(err)
	}
	return proj, &st, 0
}

func (e *env) cmdStatus(args []string) int {
	var c common
	fs := e.newFlags("status", "RUN_ID [flags]", "Shows one run: status, current step and every step's result.\n")
	c.addBase(fs)
	fs.BoolVar(&c.json, "json", false, "print the run's whole state as JSON")
	if st, done := e.parse(fs, args, 1); done {
		return st
	}
	_, st, code := e.readRun(c.base, fs.Arg(0))
	if st == nil {
		return code
	}
	if c.json {
		return writeJSON(e, st)
	}
	w := e.stdout
	fmt.Fprintf(w, "run:          %s\n", st.RunID)
	fmt.Fprintf(w, "workflow:     %s (%s)\n", st.WorkflowName, st.WorkflowPath)
	fmt.Fprintf(w, "status:       %s\n", st.Status)
	fmt.Fprintf(w, "started:      %s\n", st.StartedAt)
	if st.EndedAt != "" {
		fmt.Fprintf(w, "ended:        %s\n", st.EndedAt)
	}
	fmt.Fprintf(w, "current step: %s\n", st.CurrentStep)
	if st.IsHalted {
		fmt.Fprintf(w, "halted at:    %s (resume with: smithvm resume %s [--signal SIGNAL:X] [--note TEXT])\n", st.HaltedBlock, st.RunID)
	}
	if st.Stats.TotalTokensUsed > 0 || st.Stats.TotalLinesWritten > 0 {
		fmt.Fprintf(w, "stats:        %d tokens, %d lines written\n", st.Stats.TotalTokensUsed, st.Stats.TotalLinesWritten)
	}
	names, depth := stepOrder(st)
	if len(names) > 0 {
		fmt.Fprintf(w, "\n%-30s  %-10s  %5s  %8s  %s\n", "STEP", "STATUS", "EXIT", "SECONDS", "DETAIL")
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
		line := fmt.Sprintf("%-30s  %-10s  %5d  %8.1f  %s", name, r.Status, r.ExitCode, r.Duration, detail)
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	return 0
}

// stepOrder lists the run's step results in the workflow's order (its
// blocks as compiled from workflow_path), then any others sorted: a
// workflow changed or removed since the run still shows every result.
// depth maps a step to how deep in loop bodies it is.
func stepOrder(st *vm.State) (names []string, depth map[string]int) {
	seen := map[string]bool{}
	depth = map[string]int{}
	if p, _ := compiler.LoadProgram(st.WorkflowPath, compiler.Options{ContextKeys: keysOf(st.Context)}); p != nil {
		for _, b := range p.Blocks {
			if _, ok := st.Steps[b.ID]; ok && !seen[b.ID] {
				names = append(names, b.ID)
				seen[b.ID] = true
				for q := b; q.Parent != 0; q = p.Blocks[q.Parent-1] {
					depth[b.ID]++
				}
			}
		}
	}
	var rest []string
	for n := range st.Steps {
		if !seen[n] {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	return append(names, rest...), depth
}

func (e *env) cmdGraph(args []string) int {
	var c common
	fs := e.newFlags("graph", "RUN_ID [flags]", "Prints the DOT graph of the run's program (recompiled from its\nworkflow_path), each block coloured by its status in the run.\n")
	c.addBase(fs)
	out := fs.StringP("output", "o", "", "write the DOT text to `OUT` instead of stdout")
	if st, done := e.parse(fs, args, 1); done {
		return st
	}
	_, st, code := e.readRun(c.base, fs.Arg(0))
	if st == nil {
		return code
	}
	prog, code := e.load(st.WorkflowPath, keysOf(st.Context))
	if prog == nil {
		return code
	}
	status := map[string]string{}
	for n, r := range st.Steps {
		status[n] = r.Status
	}
	if st.IsHalted && st.HaltedBlock != "" {
		status[st.HaltedBlock] = "halted"
	} else if st.Status == "running" && st.CurrentStep != "" {
		status[st.CurrentStep] = "running"
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
	if err := compiler.DOT(prog, w, compiler.DOTOptions{Status: status}); err != nil {
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
