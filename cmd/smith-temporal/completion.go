package main

import (
	"io"
	"strings"

	"github.com/spf13/pflag"

	"smith/internal/shellcomp"
)

func completionFlags(_ *flagVals, stderr io.Writer) *pflag.FlagSet {
	return newFlags("completion", "bash|zsh|fish", "Prints a completion script for the shell, made from smith-temporal's own\ncommands and flags. bash: source <(smith-temporal completion bash).\n", stderr)
}

func cmdCompletion(args []string, stdout, stderr io.Writer) int {
	fs := completionFlags(nil, stderr)
	if st, done := parse(fs, args, 1, stdout, stderr); done {
		return st
	}
	if err := shellcomp.Write(stdout, fs.Arg(0), program()); err != nil {
		return shellcomp.Refuse(stderr, "smith-temporal completion", "%v", err)
	}
	return 0
}

// program is smith-temporal as its dispatcher and completion scripts see
// it: every command of commands with its flags.
func program() shellcomp.Program {
	p := shellcomp.Program{Name: "smith-temporal", Global: []string{"--help", "--version"}}
	for _, c := range commands() {
		fs := c.Flags(&flagVals{}, io.Discard)
		name := strings.TrimPrefix(fs.Name(), "smith-temporal ")
		var words []string
		if name == "completion" {
			words = shellcomp.Shells
		}
		p.Commands = append(p.Commands, shellcomp.Command{Name: name, Flags: fs, Words: words})
	}
	return p
}
