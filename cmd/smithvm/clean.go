package main

import (
	"fmt"

	"smith/manifest/source"
	"smith/workers"
)

func (e *env) cmdClean(args []string) int {
	var c common
	fs := e.newFlags("clean", "RUN_ID [flags]", "Removes the git worktree of a run made with config.isolation: git-worktree\n(BASE/.orchestrator/worktrees/<run_id>) and deletes its branch smith/<run_id>.\nThe run's state and logs are kept.\n")
	c.addBase(fs)
	keep := fs.Bool("keep-branch", false, "remove the worktree but keep the branch smith/<run_id>")
	if st, done := e.parse(fs, args, 1); done {
		return st
	}
	proj, err := e.project(c.base)
	if err != nil {
		fmt.Fprintf(e.stderr, "smithvm: %v\n", err)
		return source.ExitConfig
	}
	if err := workers.RemoveWorktree(proj.dirs, fs.Arg(0), !*keep, e.lookup); err != nil {
		fmt.Fprintf(e.stderr, "smithvm clean: %v\n", err)
		return source.ExitExec
	}
	fmt.Fprintf(e.stderr, "INFO: Removed the worktree of run %s.\n", fs.Arg(0))
	return 0
}
