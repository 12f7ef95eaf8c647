package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"smith/compiler"
	"smith/internal/shellcomp"
	"smith/manifest"
	"smith/source"
	"smith/workers/confine"
)

func fmtFlags(v *flagVals, stderr io.Writer) *pflag.FlagSet {
	fs := newFlags("fmt", "FILE... [-w | --check]", "Prints each YAML workflow in its canonical form: two-space indentation, one\nspace before a line comment, one blank line where the file had blank lines;\ncomments, quoting and flow/block styles are kept, and the meaning never\nchanges. Manifests (.json) are not formatted.\n", stderr)
	fs.BoolVarP(&v.write, "write", "w", false, "rewrite each FILE in place instead of printing it")
	fs.BoolVar(&v.check, "check", false, "print the names of the files that are not formatted, and exit 1 if there are any")
	return fs
}

func cmdFmt(args []string, stdout, stderr io.Writer) int {
	var v flagVals
	fs := fmtFlags(&v, stderr)
	if st, done := parse(fs, args, stdout); done {
		return st
	}
	if fs.NArg() == 0 {
		return shellcomp.Refuse(stderr, fs.Name(), "no FILE given")
	}
	if v.write && v.check {
		return shellcomp.Refuse(stderr, fs.Name(), "--write and --check exclude each other")
	}
	status, unformatted := 0, 0
	for _, f := range fs.Args() {
		if strings.EqualFold(filepath.Ext(f), ".json") {
			status = shellcomp.Refuse(stderr, fs.Name(), "%s: smithc fmt formats YAML workflows; a manifest is JSON", f)
			continue
		}
		if compiler.IsBytecode(f) {
			status = shellcomp.Refuse(stderr, fs.Name(), "%s: smithc fmt formats YAML workflows; a .smbc is a compiled program", f)
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintf(stderr, "%s: error: %s: cannot read file: %v\n", f, source.EParse, unwrapErr(err))
			status = source.ExitConfig
			continue
		}
		out, err := manifest.FormatYAML(src)
		if err != nil {
			// The syntax error as check reports it: where the mistake is,
			// in words.
			if _, ds := manifest.ParseYAML(f, src); ds.HasErrors() {
				relativize(ds)
				ds.WriteText(stderr)
			} else {
				fmt.Fprintf(stderr, "%s: error: %s: %v (smithc check %s says more)\n", f, source.EParse, err, f)
			}
			status = source.ExitConfig
			continue
		}
		switch {
		case v.check:
			if !bytes.Equal(out, src) {
				fmt.Fprintln(stdout, f)
				unformatted++
			}
		case v.write:
			if !bytes.Equal(out, src) {
				if err := confine.WriteFileAtomic(f, out, 0o644); err != nil {
					fmt.Fprintf(stderr, "smithc fmt: %v\n", err)
					status = source.ExitExec
				}
			}
		default:
			stdout.Write(out)
		}
	}
	if status == 0 && unformatted > 0 {
		return source.ExitExec
	}
	return status
}

// unwrapErr is err without the path that the caller prints itself.
func unwrapErr(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
