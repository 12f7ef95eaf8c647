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
// source.EUsage. With codes set, any code counts (a refusal names its
// code through the program's one refusal function): a code of the table
// (source.EStateNotFound, ...) printed or built by hand, or one printed by
// fmt.Fprint* through source.CodeOf.
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
			if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "fmt" {
				return true // source.Errorf builds a coded error: printed by the refusal function
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
					} else if x, ok := a.X.(*ast.Ident); ok && codes && x.Name == "source" && isCode(a.Sel.Name) {
						out = append(out, fset.Position(call.Pos()).String()+": code "+a.Sel.Name+" printed by "+sel.Sel.Name)
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

// isCode says whether name is the name of a code constant of package
// source: E and an upper-case letter (EUsage, ERunLocked, ...).
func isCode(name string) bool {
	return len(name) > 1 && name[0] == 'E' && name[1] >= 'A' && name[1] <= 'Z'
}
