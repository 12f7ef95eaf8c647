package shellcomp

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"smith/source"
)

// Run runs the command args[0] names with the rest of args, run(i, rest)
// running p.Commands[i]: the one dispatcher of every program, so that the
// command table that feeds the completion scripts also feeds dispatch and
// the did-you-mean of an unknown command. No arguments print usage on
// stderr (exit 2); -h, --help and help print it on stdout, help COMMAND
// runs COMMAND --help; --version and
// version print the program's name and version; an unknown command is
// refused (Refuse), with the nearest known one, above usage (exit 2).
func (p Program) Run(args []string, usage, version string, stdout, stderr io.Writer, run func(i int, rest []string) int) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return source.ExitConfig
	}
	cmd, rest := args[0], args[1:]
	if cmd == "help" && len(rest) > 0 {
		// help COMMAND is COMMAND --help.
		cmd, rest = rest[0], []string{"--help"}
	}
	switch cmd {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	case "--version", "version":
		fmt.Fprintf(stdout, "%s %s\n", p.Name, version)
		return 0
	}
	for i, c := range p.Commands {
		if c.Name == cmd {
			return run(i, rest)
		}
	}
	Refuse(stderr, p.Name, "unknown command %q%s", cmd, source.DidYouMean(cmd, p.Names()))
	fmt.Fprintf(stderr, "\n%s", usage)
	return source.ExitConfig
}

// Fail prints a refusal on w in the one form of every program's
// refusals, "NAME: CODE: message" (NAME: the program and its command,
// "smithvm run", or the program alone before a command is known), and
// returns code's exit status.
func Fail(w io.Writer, name string, code source.Code, format string, args ...any) int {
	fmt.Fprintf(w, "%s: %s: %s\n", name, code, fmt.Sprintf(format, args...))
	return code.ExitStatus()
}

// Refuse is Fail with E_USAGE: a bad flag or argument, or a request the
// command cannot do as given (exit 2).
func Refuse(w io.Writer, name, format string, args ...any) int {
	return Fail(w, name, source.EUsage, format, args...)
}

// Names are the names of p's commands, in order.
func (p Program) Names() []string {
	names := make([]string, len(p.Commands))
	for i, c := range p.Commands {
		names[i] = c.Name
	}
	return names
}

// Row is one row of a program's command table (smithc and
// smith-temporal): Flags makes its flag set (named "PROGRAM NAME"), bound
// to the program's flag values V, and Run runs it. Building a flag set
// runs nothing.
type Row[V any] struct {
	Flags func(v *V, stderr io.Writer) *pflag.FlagSet
	Run   func(args []string, stdout, stderr io.Writer) int
}
