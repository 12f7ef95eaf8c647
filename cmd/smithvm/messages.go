package main

import (
	"fmt"
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
		fmt.Fprintf(e.stderr, "smithvm clean-processed: E_USAGE: --older-than %q: %v\n", *older, err)
		return source.ExitConfig
	}
	proj, err := e.projectIn(c.base, c.wsDir)
	if err != nil {
		fmt.Fprintf(e.stderr, "smithvm: %v\n", err)
		return source.ExitConfig
	}
	n, err := workers.CleanProcessed(proj.dirs.Workspace, nil, age, time.Now())
	if err != nil {
		fmt.Fprintf(e.stderr, "smithvm clean-processed: E_EXEC: %v (removed %d before that)\n", err, n)
		return source.ExitExec
	}
	fmt.Fprintf(e.stderr, "INFO: Removed %d processed message(s) under %s.\n", n, proj.dirs.Workspace)
	return 0
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
