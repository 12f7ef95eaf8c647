package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestUsageErrorsOneForm: every usage refusal of every command has the one
// form "smithvm COMMAND: E_USAGE: message" (refuse, shellcomp.Refuse): an
// unknown flag and a wrong number of arguments of each command of the
// table, an unknown command, and, in the source, no message that names
// E_USAGE (or another code, through source.CodeOf) is printed by another
// function.
func TestUsageErrorsOneForm(t *testing.T) {
	base := t.TempDir()
	p := (&env{}).program()
	check := func(args []string, name string, mustRefuse bool) {
		t.Helper()
		var out, errb bytes.Buffer
		st := run(args, strings.NewReader(""), &out, &errb)
		form := regexp.MustCompile(`^` + regexp.QuoteMeta(name) + `: E_USAGE: \S`)
		seen := false
		for _, line := range strings.Split(errb.String(), "\n") {
			if strings.Contains(line, "E_USAGE") {
				seen = true
				if !form.MatchString(line) {
					t.Errorf("smithvm %s: usage refusal %q is not in the form %q", strings.Join(args, " "), line, name+": E_USAGE: ...")
				}
			}
		}
		if mustRefuse && (!seen || st != 2) {
			t.Errorf("smithvm %s = exit %d, stderr %q; want exit 2 and %q", strings.Join(args, " "), st, errb.String(), name+": E_USAGE: ...")
		}
	}
	for _, c := range p.Commands {
		name := "smithvm " + c.Name
		check([]string{c.Name, "--no-such-flag"}, name, true)
		check([]string{c.Name, "--base", base, "x1", "x2", "x3", "x4", "x5"}, name, c.Name != "doctor")
	}
	check([]string{"nosuchcommand"}, "smithvm", true)

	// The source: a message that names E_USAGE is printed by refuse.
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !strings.HasPrefix(sel.Sel.Name, "Fprint") && sel.Sel.Name != "Errorf" {
				return true
			}
			for _, a := range call.Args {
				if lit, ok := a.(*ast.BasicLit); ok && strings.Contains(lit.Value, "E_USAGE") {
					t.Errorf("%s: a usage refusal printed by %s, not by refuse", fset.Position(call.Pos()), sel.Sel.Name)
				}
				if s, ok := a.(*ast.SelectorExpr); ok && s.Sel.Name == "EUsage" {
					t.Errorf("%s: a usage refusal printed by %s, not by refuse", fset.Position(call.Pos()), sel.Sel.Name)
				}
				// Any other code too: a refusal names its code through
				// fail or failErr, so it has the same form.
				if c, ok := a.(*ast.CallExpr); ok {
					if f, ok := c.Fun.(*ast.SelectorExpr); ok && f.Sel.Name == "CodeOf" && strings.HasPrefix(sel.Sel.Name, "Fprint") {
						t.Errorf("%s: a code printed by %s, not by fail or failErr", fset.Position(call.Pos()), sel.Sel.Name)
					}
				}
			}
			return true
		})
	}
}
