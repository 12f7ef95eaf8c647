package main

import (
	"context"
	"fmt"
	"os"
	"slices"

	"smith/isa"
	"smith/lang"
	"smith/source"
	"smith/workers"
	"smith/workers/doctor"
)

// doctorHelpText is doctor's help; %s is the --ping prompt.
const doctorHelpText = `Checks that the agent CLIs are ready before a run spends time: for every
preset (claude, gemini, codex), or for the providers the given workflows use,
  installed  the CLI is on PATH, its version, and whether the presets were
             tested with that version;
  login      it has a login or a key, checked the CLI's own way (a key
             variable, its login status command or its login file), with
             no model request;
  ping       (with --ping) one tiny real request through the preset, as a
             step makes it, the prompt "%s"
             (a few tokens): its reply and tokens.
A preset runs the CLI with your own HOME and configuration (your login,
settings and model provider); a provider entry with home: isolated is
checked as it runs, with a fresh configuration home and a key only.
And git (without FILE, or for workflows with isolation: git-worktree): its
version, which must be 2.31 or newer for Smith's git commands to keep a
repository's hooks and drivers from running.
One line per check, with what to do when it fails.

Exit status: 0 when every check passes, 2 otherwise.
`

// doctorHelp is doctor's help, quoting the prompt of --ping.
func doctorHelp() string { return fmt.Sprintf(doctorHelpText, doctor.PingPrompt) }

// cmdDoctor is smithvm doctor [FILE...] [--ping].
func (e *env) cmdDoctor(args []string) int {
	var v flagVals
	fs := e.doctorFlags(&v)
	ping := &v.ping
	if st, done := e.parse(fs, args, -1); done {
		return st
	}
	targets := presetTargets()
	needGit := false // a workflow runs in a git worktree
	if fs.NArg() > 0 {
		targets = nil
		for _, file := range fs.Args() {
			p, st := e.load(file, nil)
			if st != 0 {
				return st
			}
			for _, t := range programTargets(p) {
				if !slices.Contains(targets, t) {
					targets = append(targets, t)
				}
			}
			needGit = needGit || p.Config.Isolation == lang.IsolationWorktree
		}
		if len(targets) == 0 && !needGit {
			fmt.Fprintln(e.stdout, "The workflows use no agent CLI preset (claude, gemini, codex): nothing to check.")
			return 0
		}
	}
	failed := false
	if fs.NArg() == 0 || needGit {
		l := e.gitLine(needGit)
		fmt.Fprintln(e.stdout, l)
		failed = !l.OK
	}
	if len(targets) == 0 {
		return doctorStatus(failed)
	}
	dir, err := os.MkdirTemp("", "smith-doctor-")
	if err != nil {
		fmt.Fprintf(e.stderr, "smithvm doctor: %v\n", err)
		return source.ExitConfig
	}
	defer os.RemoveAll(dir)
	ctx, stop := signalContext()
	defer stop()
	for _, t := range targets {
		for _, l := range doctor.Check(ctx, doctor.Env{Lookup: e.lookup, Dir: dir}, t, *ping) {
			fmt.Fprintln(e.stdout, l)
			failed = failed || !l.OK
		}
	}
	return doctorStatus(failed)
}

// doctorStatus is doctor's exit status: 2 when a check failed.
func doctorStatus(failed bool) int {
	if failed {
		return source.ExitConfig
	}
	return 0
}

// gitLine is doctor's check of git: where PATH finds it and its version,
// which fails below 2.31 (workers.MinGitVersion). A git missing fails only
// when a workflow given needs it (need): a run without isolation:
// git-worktree runs no git.
func (e *env) gitLine(need bool) doctor.Line {
	l := doctor.Line{Preset: "git", Check: "installed"}
	path, _ := e.lookup("PATH")
	exe := doctor.LookPath("git", path)
	version, ok, err := workers.GitVersion(context.Background(), e.lookup)
	switch {
	case err != nil && need:
		l.Text = "git is not on PATH, and isolation: git-worktree needs git " + workers.MinGitVersion + " or newer: install it (your system's package manager, or https://git-scm.com/downloads)"
	case err != nil:
		l.OK = true
		l.Text = "git is not on PATH (only isolation: git-worktree needs it, " + workers.MinGitVersion + " or newer)"
	case !ok:
		l.Text = fmt.Sprintf("%s, %s: %v", exe, version, workers.GitTooOld(version))
	default:
		l.OK = true
		l.Text = fmt.Sprintf("%s, %s (%s or newer is needed)", exe, version, workers.MinGitVersion)
	}
	return l
}

// presetTargets are the agent CLI presets, each in the user's own home.
func presetTargets() []doctor.Target {
	var out []doctor.Target
	for _, name := range lang.ProviderPresets {
		if name != lang.PresetMock {
			out = append(out, doctor.Target{Name: name})
		}
	}
	return out
}

// programTargets are the presets a program's steps, workers and agents
// use (a provider entry with a command of its own runs no preset), with
// the home its providers entry gives each.
func programTargets(p *isa.Program) []doctor.Target {
	isolated := map[string]bool{}
	own := map[string]bool{}
	for _, d := range p.Providers {
		isolated[d.Name] = d.Isolated
		own[d.Name] = len(d.Command) > 0
	}
	var names []string
	add := func(list []string) {
		for _, n := range list {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	for _, b := range p.Blocks {
		if b.Step != nil {
			add(b.Step.Providers)
		}
	}
	for _, a := range p.Agents {
		add(a.Providers)
	}
	var out []doctor.Target
	for _, n := range names {
		if n == lang.PresetMock || own[n] || !slices.Contains(lang.ProviderPresets[:], n) {
			continue
		}
		out = append(out, doctor.Target{Name: n, Isolated: isolated[n]})
	}
	return out
}
