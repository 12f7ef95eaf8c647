// Command smithc checks, compiles, disassembles and draws Smith workflows
// (YAML step workflows and workflows.json manifests).
package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/spf13/pflag"

	"smith/compiler"
	"smith/internal/buildversion"
	"smith/internal/hugeheap"
	"smith/internal/shellcomp"
	"smith/isa"
	"smith/manifest"
	"smith/source"
	"smith/workers/confine"
)

func main() {
	// smithc is short-lived: collecting garbage half as often saves about a
	// tenth of a large compile, and peak memory stays far under 200 MB on a
	// 10,000-block manifest (bench/README.md). A GOGC set by the user wins.
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(200)
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = `smithc: check, compile, disassemble and draw Smith workflows

Usage:
  smithc check FILE... [--format text|json|sarif] [--context K=V]... [--context-file F]
                                  lint: schema, references, paths, graph
                                  (reachability, fallback coverage, loops with no exit)
  smithc build FILE [-o OUT]      compile to a bytecode program (default: FILE with .smbc)
  smithc disasm FILE              print the compiled program as text (FILE: a source or a .smbc)
  smithc dot FILE [-o OUT]        Graphviz DOT of the control-flow graph
  smithc schema workflow|manifest print the JSON Schema of a source format
  smithc fmt FILE... [-w|--check] print YAML workflows in canonical form (comments kept)
  smithc completion bash|zsh|fish print a shell completion script
  smithc --version                print the version (module version or commit)

FILE is a YAML workflow (.yaml, .yml) or a workflows.json manifest (.json).
Run 'smithc COMMAND --help' for a command's flags.

Exit status: 0 no errors (warnings allowed), 2 any error (E_PATH_ESCAPE included).
`

// run is the whole program; main only passes it os values.
func run(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	cmds := commands()
	return program().Run(args, usage, buildversion.Get(), stdout, stderr, func(i int, rest []string) int {
		return cmds[i].Run(rest, stdout, stderr)
	})
}

// newFlags makes a command's flag set; parse reports whether to go on.
func newFlags(name, synopsis, help string, stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet("smithc "+name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: smithc %s %s\n\n%s\nFlags:\n%s", name, synopsis, help, fs.FlagUsages())
	}
	return fs
}

// parse parses args; it returns (exit status, done): done is true when the
// command must stop (help shown, or a flag error).
func parse(fs *pflag.FlagSet, args []string, stdout io.Writer) (int, bool) {
	// pflag prints the usage itself on --help and on errors: silence it and
	// print the help once, to stdout, or the error to stderr.
	stderr := fs.Output()
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	if err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return 0, true
		}
		return shellcomp.Refuse(stderr, fs.Name(), "%v (see --help)", err), true
	}
	return 0, false
}

type contextFlags struct {
	kv   []string
	file string
}

func (c *contextFlags) add(fs *pflag.FlagSet) {
	fs.StringArrayVar(&c.kv, "context", nil, "`KEY=VALUE` context variable known to the checks (repeatable)")
	fs.StringVar(&c.file, "context-file", "", "JSON object `FILE` whose keys are known context keys")
}

// keys returns the context keys the flags name.
func (c *contextFlags) keys() ([]string, error) {
	var keys []string
	for _, kv := range c.kv {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--context %q: want KEY=VALUE", kv)
		}
		// A dotted key (a.b=v) makes the context key a known.
		k, _, _ = strings.Cut(k, ".")
		keys = append(keys, k)
	}
	if c.file != "" {
		ks, err := contextFileKeys(c.file)
		if err != nil {
			return nil, err
		}
		keys = append(keys, ks...)
	}
	return keys, nil
}

// flagVals holds the values of every command's flags.
type flagVals struct {
	json   bool
	format string
	cf     contextFlags
	output string
	write  bool
	check  bool
}

// A command is one row of the command table.
type command = shellcomp.Row[flagVals]

// commands are smithc's commands in the usage's order: the one table that
// dispatch, the did-you-mean of an unknown command, the completion scripts
// and docs/cli.md (TestCLIDocs) read. Building a flag set runs nothing.
// (A function, not a variable: completion's run reads the table.)
func commands() []command {
	return []command{
		{Flags: checkFlags, Run: cmdCheck},
		{Flags: buildFlags, Run: cmdBuild},
		{Flags: disasmFlags, Run: cmdDisasm},
		{Flags: dotFlags, Run: cmdDot},
		{Flags: schemaFlags, Run: cmdSchema},
		{Flags: fmtFlags, Run: cmdFmt},
		{Flags: completionFlags, Run: cmdCompletion},
	}
}

func checkFlags(v *flagVals, stderr io.Writer) *pflag.FlagSet {
	fs := newFlags("check", "FILE... [flags]", "Checks each FILE and prints one diagnostic per line on stdout:\n  FILE:LINE:COL: error|warning: CODE: message\nthen one summary line on stderr: ok: 2 files, 0 errors, 1 warning\n(or: failed: ...). A compiled .smbc FILE is verified as smithvm run loads it.\n", stderr)
	fs.BoolVar(&v.json, "json", false, "print a JSON array of {file, line, col, severity, code, message} (same as --format json)")
	fs.StringVar(&v.format, "format", "text", "output `FORMAT`: text, json, or sarif (SARIF 2.1.0, for code-scanning tools)")
	v.cf.add(fs)
	return fs
}

func cmdCheck(args []string, stdout, stderr io.Writer) int {
	var v flagVals
	fs := checkFlags(&v, stderr)
	cf := &v.cf
	if st, done := parse(fs, args, stdout); done {
		return st
	}
	if fs.NArg() == 0 {
		return shellcomp.Refuse(stderr, fs.Name(), "no FILE given")
	}
	keys, err := cf.keys()
	if err != nil {
		shellcomp.Fail(stderr, fs.Name(), source.CodeOf(err, source.EUsage), "%v", err)
		return source.ExitConfig
	}
	format := v.format
	if v.json {
		format = "json"
	}
	if format != "text" && format != "json" && format != "sarif" {
		return shellcomp.Refuse(stderr, fs.Name(), "--format %q: want text, json or sarif%s", format, source.DidYouMean(format, []string{"text", "json", "sarif"}))
	}
	var all source.Diagnostics
	for _, f := range fs.Args() {
		growHeapFor(f)
		if compiler.IsBytecode(f) {
			// A program file: decoded and verified as smithvm run loads
			// it (its source was checked when it was built).
			_, ds := compiler.LoadProgram(f, compiler.Options{})
			all.Append(ds...)
			continue
		}
		_, ds := compiler.CompileFile(f, compiler.Options{ContextKeys: keys, ChecksOnly: true})
		all.Append(ds...)
	}
	relativize(all)
	all.Sort()
	switch format {
	case "json":
		if err := all.WriteJSON(stdout); err != nil {
			return source.ExitConfig
		}
	case "sarif":
		if err := writeSARIF(stdout, all); err != nil {
			return source.ExitConfig
		}
	default:
		all.WriteText(stdout)
	}
	fmt.Fprintln(stderr, summary(len(fs.Args()), all))
	return checkStatus(all)
}

func buildFlags(v *flagVals, stderr io.Writer) *pflag.FlagSet {
	fs := newFlags("build", "FILE [-o OUT]", "Compiles FILE to a versioned bytecode program that 'smithvm run' accepts.\n", stderr)
	fs.StringVarP(&v.output, "output", "o", "", "write the program to `OUT` (default: FILE with extension .smbc)")
	return fs
}

func cmdBuild(args []string, stdout, stderr io.Writer) int {
	var v flagVals
	fs := buildFlags(&v, stderr)
	out := &v.output
	if st, done := parse(fs, args, stdout); done {
		return st
	}
	file, st := oneFile(fs, stderr)
	if st != 0 {
		return st
	}
	if compiler.IsBytecode(file) {
		return shellcomp.Refuse(stderr, fs.Name(), "%s: this is a compiled program already: smithc build reads a workflow (.yaml, .yml) or a manifest (.json)", file)
	}
	growHeapFor(file)
	res, ds := compiler.CompileFile(file, compiler.Options{})
	if st := report(ds, stderr); st != 0 || res.Prog == nil {
		return max(st, source.ExitConfig)
	}
	data, err := res.Prog.MarshalBinary()
	if err != nil {
		fmt.Fprintf(stderr, "smithc build: %v\n", err)
		return source.ExitExec
	}
	dst := *out
	if dst == "" {
		dst = strings.TrimSuffix(file, filepath.Ext(file)) + ".smbc"
	}
	if err := confine.WriteFileAtomic(dst, data, 0o644); err != nil {
		fmt.Fprintf(stderr, "smithc build: %v\n", err)
		return source.ExitExec
	}
	return 0
}

func disasmFlags(_ *flagVals, stderr io.Writer) *pflag.FlagSet {
	return newFlags("disasm", "FILE", "Prints the compiled program as text, one instruction per line with its\nsource position. FILE is a source document or a .smbc program.\n", stderr)
}

func cmdDisasm(args []string, stdout, stderr io.Writer) int {
	fs := disasmFlags(nil, stderr)
	if st, done := parse(fs, args, stdout); done {
		return st
	}
	p, st := loadOne(fs, stderr)
	if p == nil {
		return st
	}
	var b bytes.Buffer
	if err := p.Disassemble(&b); err != nil {
		fmt.Fprintf(stderr, "smithc disasm: %v\n", err)
		return source.ExitExec
	}
	stdout.Write(b.Bytes())
	return 0
}

func dotFlags(v *flagVals, stderr io.Writer) *pflag.FlagSet {
	fs := newFlags("dot", "FILE [-o OUT]", "Prints the control-flow graph in Graphviz DOT: Nodes as clusters, blocks as\nboxes, edges labelled with signals, CALLs dashed, HALT as an octagon.\nRender it with: dot -Tsvg OUT > graph.svg\n", stderr)
	fs.StringVarP(&v.output, "output", "o", "", "write the DOT text to `OUT` instead of stdout")
	return fs
}

func cmdDot(args []string, stdout, stderr io.Writer) int {
	var v flagVals
	fs := dotFlags(&v, stderr)
	out := &v.output
	if st, done := parse(fs, args, stdout); done {
		return st
	}
	p, st := loadOne(fs, stderr)
	if p == nil {
		return st
	}
	var b bytes.Buffer
	if err := compiler.DOT(p, &b, compiler.DOTOptions{}); err != nil {
		fmt.Fprintf(stderr, "smithc dot: %v\n", err)
		return source.ExitExec
	}
	if *out == "" {
		stdout.Write(b.Bytes())
		return 0
	}
	if err := confine.WriteFileAtomic(*out, b.Bytes(), 0o644); err != nil {
		fmt.Fprintf(stderr, "smithc dot: %v\n", err)
		return source.ExitExec
	}
	return 0
}

func schemaFlags(_ *flagVals, stderr io.Writer) *pflag.FlagSet {
	return newFlags("schema", "workflow|manifest", "Prints the JSON Schema (draft 2020-12) of a source format, generated from\nthe Go types, with a description for every key. The checker validates\ndocuments against this same schema. For editors: smithc schema workflow >\nsmith.schema.json, then # yaml-language-server: $schema=./smith.schema.json\nas the first line of a workflow.\n", stderr)
}

func cmdSchema(args []string, stdout, stderr io.Writer) int {
	fs := schemaFlags(nil, stderr)
	if st, done := parse(fs, args, stdout); done {
		return st
	}
	if fs.NArg() != 1 {
		return shellcomp.Refuse(stderr, fs.Name(), "want exactly one of: workflow, manifest")
	}
	switch fs.Arg(0) {
	case "workflow":
		stdout.Write(manifest.WorkflowSchema())
	case "manifest":
		stdout.Write(manifest.ManifestSchema())
	default:
		return shellcomp.Refuse(stderr, fs.Name(), "unknown format %q%s: want workflow or manifest", fs.Arg(0), source.DidYouMean(fs.Arg(0), schemaFormats))
	}
	return 0
}

// loadOne compiles (or decodes) the command's one FILE argument, printing
// its diagnostics; a nil program comes with the exit status.
func loadOne(fs *pflag.FlagSet, stderr io.Writer) (*isa.Program, int) {
	file, st := oneFile(fs, stderr)
	if st != 0 {
		return nil, st
	}
	growHeapFor(file)
	p, ds := compiler.LoadProgram(file, compiler.Options{})
	if st := report(ds, stderr); st != 0 || p == nil {
		return nil, max(st, source.ExitConfig)
	}
	return p, 0
}

// growHeapFor readies the heap for compiling the document at path when it
// is large (1 MiB or more): its source, tree and IR are fresh heap, every
// new page of which costs a page fault, so the heap grows at once, in huge
// pages where the kernel gives them on request (internal/hugeheap). At the
// peak a manifest takes about four bytes of heap per byte of source; eight
// leave the collector its headroom. smithc exits after its documents, so
// the advice cannot bloat a long-lived process.
func growHeapFor(path string) {
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && fi.Size() >= 1<<20 {
		hugeheap.Grow(int(min(fi.Size(), 1<<27)) * 8)
	}
}

func oneFile(fs *pflag.FlagSet, stderr io.Writer) (string, int) {
	if fs.NArg() != 1 {
		return "", shellcomp.Refuse(stderr, fs.Name(), "want exactly one FILE, got %d", fs.NArg())
	}
	return fs.Arg(0), 0
}

// report prints diagnostics (warnings included) to stderr and returns the
// exit status they call for.
func report(ds source.Diagnostics, stderr io.Writer) int {
	relativize(ds)
	ds.Sort()
	ds.WriteText(stderr)
	return checkStatus(ds)
}

// checkStatus is smithc's exit status for a list of diagnostics: 2 with
// any error, E_PATH_ESCAPE included (CONTRACT 10; only smithvm exits 3).
func checkStatus(ds source.Diagnostics) int {
	if ds.HasErrors() {
		return source.ExitConfig
	}
	return 0
}

func relativize(ds source.Diagnostics) {
	if wd, err := os.Getwd(); err == nil {
		ds.RelTo(wd)
	}
}
