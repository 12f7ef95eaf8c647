package main

import (
	"io"
	"strings"

	"github.com/spf13/pflag"

	"smith/internal/shellcomp"
	"smith/source"
)

// schemaFormats are the arguments of smithc schema.
var schemaFormats = []string{"workflow", "manifest"}

// commandWords are the words a command's arguments may be (the others take
// files).
var commandWords = map[string][]string{"schema": schemaFormats, "completion": shellcomp.Shells}

func completionFlags(_ *flagVals, stderr io.Writer) *pflag.FlagSet {
	return newFlags("completion", "bash|zsh|fish", "Prints a completion script for the shell, made from smithc's own commands and\nflags. bash: source <(smithc completion bash); zsh: smithc completion zsh >\n\"${fpath[1]}/_smithc\"; fish: smithc completion fish >\n~/.config/fish/completions/smithc.fish.\n", stderr)
}

func cmdCompletion(args []string, stdout, stderr io.Writer) int {
	fs := completionFlags(nil, stderr)
	if st, done := parse(fs, args, stdout); done {
		return st
	}
	if fs.NArg() != 1 {
		return shellcomp.Refuse(stderr, fs.Name(), "want one of: %s", strings.Join(shellcomp.Shells, ", "))
	}
	if err := shellcomp.Write(stdout, fs.Arg(0), program()); err != nil {
		return shellcomp.Refuse(stderr, fs.Name(), "%v%s", err, source.DidYouMean(fs.Arg(0), shellcomp.Shells))
	}
	return 0
}

// program is smithc as its dispatcher and completion scripts see it:
// every command of commands with its flags.
func program() shellcomp.Program {
	p := shellcomp.Program{Name: "smithc", Global: []string{"--help", "--version"}}
	for _, c := range commands() {
		fs := c.Flags(&flagVals{}, io.Discard)
		name := strings.TrimPrefix(fs.Name(), "smithc ")
		p.Commands = append(p.Commands, shellcomp.Command{Name: name, Flags: fs, Words: commandWords[name]})
	}
	return p
}
