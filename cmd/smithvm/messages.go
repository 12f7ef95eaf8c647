package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"smith/source"
	"smith/workers"
)

func (e *env) cmdCleanProcessed(args []string) int {
	var c flagVals
	fs := e.cleanProcessedFlags(&c)
	older := &c.olderThan
	if st, done := e.parse(fs, args, 0); done {
		return st
	}
	age, err := parseAge(*older)
	if err != nil {
		return e.refuse("--older-than %q: %v", *older, err)
	}
	proj, err := e.projectIn(c.base, c.wsDir)
	if err != nil {
		e.failErr(err, source.EUsage, "")
		return source.ExitConfig
	}
	n, err := workers.CleanProcessed(proj.dirs.Workspace, e.declaredProcessed(proj, c.wsDir == ""), age, time.Now())
	if err != nil {
		return e.fail(source.EExec, "%v (removed %d before that)", err, n)
	}
	fmt.Fprintf(e.stderr, "INFO: Removed %d processed message(s) under %s.\n", n, proj.dirs.Workspace)
	return 0
}

// declaredProcessed returns the processed folders (relative to WORKSPACE)
// of the agents the runs under BASE declare, each run's program recompiled
// from its workflow_path: a custom inbox: has its processed folder beside
// it, outside agents/*/. Only runs in this WORKSPACE count (the default one
// for a run that recorded none when defaultWS); a run whose workflow no
// longer compiles adds nothing (a warning says so when its workflow file
// is gone).
func (e *env) declaredProcessed(proj *project, defaultWS bool) []string {
	runs, err := proj.store.List()
	if err != nil {
		return nil
	}
	var out []string
	compiled := map[string]bool{}
	for _, r := range runs {
		st, err := proj.store.ReadState(r.RunID)
		if err != nil || st.WorktreePath != "" {
			continue // a worktree run's messages live in its worktree
		}
		if st.Workspace == "" && !defaultWS || st.Workspace != "" && filepath.Clean(st.Workspace) != filepath.Clean(proj.dirs.Workspace) {
			continue
		}
		if compiled[st.WorkflowPath] {
			continue
		}
		compiled[st.WorkflowPath] = true
		if msg := workflowGone(st, "clean-processed cleans agents/*/processed/ but not the processed folder of a custom inbox it declares"); msg != "" {
			fmt.Fprintf(e.stderr, "WARNING: %s\n", msg)
			continue
		}
		p := loadProgram(e, st)
		if p == nil {
			continue
		}
		for _, a := range p.Agents {
			if a.Processed != "" {
				out = append(out, a.Processed)
			}
		}
	}
	return out
}

// parseAge reads --older-than: a Go duration, or a whole number of days
// ("7d"); "" is 0 (every processed message).
func parseAge(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("want a duration such as 36h or a number of days such as 7d")
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("want a duration such as 36h or a number of days such as 7d")
	}
	return d, nil
}
