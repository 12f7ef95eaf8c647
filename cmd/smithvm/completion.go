package main

import (
	"io"
	"strings"

	"github.com/spf13/pflag"

	"smith/internal/shellcomp"
	"smith/source"
)

func (e *env) completionFlags(_ *flagVals) *pflag.FlagSet {
	return e.newFlags("completion", "bash|zsh|fish", "Prints a completion script for the shell, made from smithvm's own commands and\nflags. bash: source <(smithvm completion bash); zsh: smithvm completion zsh >\n\"${fpath[1]}/_smithvm\"; fish: smithvm completion fish >\n~/.config/fish/completions/smithvm.fish.\n")
}

func (e *env) cmdCompletion(args []string) int {
	fs := e.completionFlags(&flagVals{})
	if st, done := e.parse(fs, args, 1); done {
		return st
	}
	if err := shellcomp.Write(e.stdout, fs.Arg(0), e.program()); err != nil {
		return e.refuse("%v%s", err, source.DidYouMean(fs.Arg(0), shellcomp.Shells))
	}
	return 0
}

// program is smithvm as its dispatcher and completion scripts see it:
// every command of commands with its flags.
func (e *env) program() shellcomp.Program {
	quiet := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}
	p := shellcomp.Program{Name: "smithvm", Global: []string{"--help", "--version"}}
	for _, c := range commands() {
		fs := c.flags(quiet, &flagVals{})
		name := strings.TrimPrefix(fs.Name(), "smithvm ")
		var words []string
		if name == "completion" {
			words = shellcomp.Shells
		}
		p.Commands = append(p.Commands, shellcomp.Command{Name: name, Flags: fs, Words: words})
	}
	return p
}
