// Package refusalscan helps the commands' tests keep one form for every
// refusal ("PROGRAM COMMAND: CODE: message", printed by shellcomp.Fail and
// shellcomp.Refuse): it finds, in a command's source, a refusal printed by
// hand. Only tests import it.
package refusalscan

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
)

// Stray returns "FILE:LINE:COL: what" for each call in the Go files of
// dir (tests left out) that prints with fmt.Fprint* or builds with
// fmt.Errorf a usage refusal by hand: a literal naming E_USAGE, or
// source.EUsage. With codes set, a code printed by fmt.Fprint* through
// source.CodeOf counts too (a refusal names its code through the
// program's one refusal function).
func Stray(dir string, codes bool) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var out []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			return nil, err
		}
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			fprint := strings.HasPrefix(sel.Sel.Name, "Fprint")
			if !fprint && sel.Sel.Name != "Errorf" {
				return true
			}
			for _, a := range call.Args {
				switch a := a.(type) {
				case *ast.BasicLit:
					if strings.Contains(a.Value, "E_USAGE") {
						out = append(out, fset.Position(call.Pos()).String()+": a usage refusal printed by "+sel.Sel.Name)
					}
				case *ast.SelectorExpr:
					if a.Sel.Name == "EUsage" {
						out = append(out, fset.Position(call.Pos()).String()+": a usage refusal printed by "+sel.Sel.Name)
					}
				case *ast.CallExpr:
					if f, ok := a.Fun.(*ast.SelectorExpr); ok && codes && fprint && f.Sel.Name == "CodeOf" {
						out = append(out, fset.Position(call.Pos()).String()+": a code printed by "+sel.Sel.Name)
					}
				}
			}
			return true
		})
	}
	return out, nil
}
