package main

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// allowed lists, for each package of the module, everything it may import
// besides the standard library (STYLE.md section 1). A module name ending in
// "/" allows its sub-packages too. New entries need a note in
// docs/dependencies.md.
var allowed = map[string][]string{
	"cmd/smithc":  {"lang", "compiler", "isa", "manifest", "source", "workers/confine", "internal/hugeheap", "internal/buildversion", "internal/shellcomp", "github.com/spf13/pflag"},
	"cmd/smithvm": {"lang", "cmd/smithvm/serve", "internal/buildversion", "internal/shellcomp", "compiler", "compiler/cache", "isa", "vm", "vm/store", "workers", "workers/confine", "workers/doctor", "workers/proc", "manifest", "source", "workers/step", "workers/steprun", "workers/text", "github.com/spf13/pflag", "github.com/fsnotify/fsnotify", "golang.org/x/term"},
	// The run viewer (smithvm serve): above the compiler, like cmd, since
	// it recompiles a run's workflow to draw its graph.
	"cmd/smithvm/serve": {"lang", "compiler", "isa", "vm", "vm/store", "workers/confine", "source"},
	"compiler":          {"lang", "manifest", "compiler/ir", "isa", "source", "workers/confine", "workers/reply", "gonum.org/v1/gonum/"},
	"compiler/ir":       {"lang", "isa", "source"},
	// The cache of compiled programs: above the compiler, below cmd.
	"compiler/cache":                   {"compiler", "isa", "source"},
	"manifest":                         {"lang", "source", "github.com/alecthomas/participle/v2/", "go.yaml.in/yaml/v3", "github.com/santhosh-tekuri/jsonschema/v6/"},
	"manifest/internal/decodegen":      {},
	"isa":                              {"lang", "source", "github.com/alecthomas/participle/v2/"},
	"vm":                               {"lang", "isa", "workers/confine", "workers/reply", "workers/step", "workers/text", "source", "github.com/tidwall/gjson"},
	"vm/store":                         {"vm", "source", "github.com/tidwall/gjson"},
	"workers":                          {"lang", "isa", "source", "workers/agent", "workers/builtin", "workers/confine", "workers/proc", "workers/provider", "workers/step", "workers/steprun", "workers/text"},
	"workers/confine":                  {"source", "golang.org/x/sys/unix"},
	"workers/proc":                     {"workers/text", "golang.org/x/sys/unix"},
	"workers/text":                     {},
	"workers/provider":                 {"lang", "source", "workers/step", "github.com/tidwall/gjson", "github.com/BurntSushi/toml"},
	"workers/step":                     {"lang", "isa", "source", "workers/confine", "workers/text"},
	"workers/builtin":                  {"lang", "source", "workers/confine", "workers/proc", "workers/reply", "workers/step", "workers/steprun", "workers/text", "github.com/tidwall/gjson"},
	"workers/doctor":                   {"isa", "workers/agent", "workers/confine", "workers/proc", "workers/provider", "workers/step", "workers/steprun", "workers/text"},
	"workers/agent":                    {"lang", "source", "workers/confine", "workers/proc", "workers/provider", "workers/step", "workers/steprun", "workers/text"},
	"workers/steprun":                  {"lang", "isa", "source", "workers/confine", "workers/proc", "workers/provider", "workers/reply", "workers/step", "workers/text"},
	"workers/reply":                    {"lang", "source", "github.com/santhosh-tekuri/jsonschema/v6/"},
	"source":                           {},
	"lang":                             {"source"},
	"internal/docgen":                  {},
	"internal/hugeheap":                {"golang.org/x/sys/unix"},
	"internal/buildversion":            {},
	"internal/shellcomp":               {"source", "github.com/spf13/pflag"},
	"internal/goldenfile":              {},
	"internal/refusalscan":             {},
	"internal/fakemodel":               {},
	"internal/testchild":               {},
	"internal/stepfake":                {"internal/testchild", "isa", "source", "workers/confine", "workers/proc", "workers/step", "workers/steprun"},
	"internal/fakemodel/cmd/fakemodel": {"internal/fakemodel"},
	"bench/floor":                      {},
	"bench/hello":                      {},
	"bench":                            {"lang", "compiler", "isa", "manifest", "source", "vm", "vm/store", "workers", "workers/confine", "workers/step"},
	"bench/failcost":                   {"internal/fakemodel"},
	"bench/sessioncost":                {"internal/fakemodel", "workers/provider"},
	// The nested module smith/cmd/smith-temporal (its own go.mod, so the
	// Temporal SDK stays out of the core module's build).
	"cmd/smith-temporal":        {"cmd/smith-temporal/engine", "internal/buildversion", "internal/shellcomp", "compiler", "vm", "vm/store", "workers/confine", "source", "github.com/spf13/pflag", "go.temporal.io/"},
	"cmd/smith-temporal/engine": {"lang", "isa", "vm", "workers", "workers/confine", "workers/provider", "workers/step", "workers/text", "source", "go.temporal.io/", "google.golang.org/protobuf/", "github.com/aws/"},
	// The nested module smith/cmd/smithvm/e2e: end-to-end tests only, no
	// package code (its tests run the built binaries).
	"cmd/smithvm/e2e": {},
}

const module = "smith"

func TestLayering(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			if mod, err := os.ReadFile(filepath.Join(path, "go.mod")); err == nil && path != root &&
				!strings.HasPrefix(modulePath(mod), module+"/") {
				return filepath.SkipDir // another module (an example project, a vendored library), not Smith's
			}
			dirs = append(dirs, path)
		}
		return nil
	})
	seen := 0
	for _, dir := range dirs {
		pkg, err := build.ImportDir(dir, 0)
		if err != nil {
			continue // no Go files
		}
		rel, _ := filepath.Rel(root, dir)
		rel = filepath.ToSlash(rel)
		seen++
		allow, ok := allowed[rel]
		if !ok {
			t.Errorf("package %s is not in the layering table (STYLE.md section 1)", rel)
			continue
		}
		for _, imp := range pkg.Imports {
			if !isAllowed(imp, allow) {
				t.Errorf("package %s imports %s, which STYLE.md section 1 does not allow", rel, imp)
			}
		}
	}
	if seen < 5 {
		t.Fatalf("found only %d packages under %s; the walk is broken", seen, root)
	}
}

// modulePath returns the module path a go.mod declares.
func modulePath(gomod []byte) string {
	for line := range strings.Lines(string(gomod)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

func isAllowed(imp string, allow []string) bool {
	first := strings.SplitN(imp, "/", 2)[0]
	if !strings.Contains(first, ".") && first != module {
		return true // standard library
	}
	imp = strings.TrimPrefix(imp, module+"/")
	for _, a := range allow {
		if imp == a || (strings.HasSuffix(a, "/") && (strings.HasPrefix(imp, a) || imp+"/" == a)) {
			return true
		}
	}
	return false
}

// TestProcIsStandalone: the process runner imports the standard library,
// golang.org/x/sys/unix and the pure string leaf workers/text only, none of
// Smith's other packages (tests may use internal/testchild), so it cannot
// learn about steps, providers or signals.
func TestProcIsStandalone(t *testing.T) {
	pkg, err := build.ImportDir("../../workers/proc", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkg.GoFiles) == 0 {
		t.Fatal("workers/proc has no Go files")
	}
	for _, imp := range pkg.Imports {
		first := strings.SplitN(imp, "/", 2)[0]
		if imp != "golang.org/x/sys/unix" && imp != module+"/workers/text" && (strings.Contains(first, ".") || first == module) {
			t.Errorf("workers/proc imports %s: it may import the standard library, golang.org/x/sys/unix and workers/text only", imp)
		}
	}
}

func TestMain(m *testing.M) {
	os.Exit(m.Run())
}

// TestVMDoesNoIO: the VM's only doors are its interfaces (vm.Host for
// effects and the clock, step.Runner for steps). No file of package vm
// imports a process, network or random package, calls a file function of
// package os or reads the wall clock (time.Now, time.Since, time.Until).
func TestVMDoesNoIO(t *testing.T) {
	forbiddenImports := map[string]bool{"os/exec": true, "net": true, "net/http": true, "io/ioutil": true, "syscall": true,
		"golang.org/x/sys/unix": true, "math/rand": true, "math/rand/v2": true, "crypto/rand": true}
	forbiddenCalls := map[string]map[string]bool{
		"os": {"Open": true, "OpenFile": true, "Create": true, "Stat": true, "Lstat": true, "ReadFile": true, "WriteFile": true,
			"ReadDir": true, "Remove": true, "RemoveAll": true, "Rename": true, "Mkdir": true, "MkdirAll": true, "CreateTemp": true,
			"StartProcess": true, "Chdir": true, "Chmod": true, "Symlink": true, "Link": true, "Truncate": true},
		"time": {"Now": true, "Since": true, "Until": true},
	}
	why := map[string]string{"os": "the VM does no file I/O of its own; add a vm.Host method",
		"time": "the VM reads no clock of its own; use vm.Host's Now"}
	files, err := filepath.Glob("../../vm/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no vm sources: %v", err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		local := map[string]string{} // the file's name of os or time -> its path
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if forbiddenImports[path] {
				t.Errorf("%s imports %s: effects go through vm.Host", fset.Position(imp.Pos()), path)
			}
			if forbiddenCalls[path] != nil {
				n := path
				if imp.Name != nil {
					n = imp.Name.Name
				}
				local[n] = path
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && forbiddenCalls[local[x.Name]][sel.Sel.Name] {
				t.Errorf("%s: %s.%s: %s", fset.Position(sel.Pos()), local[x.Name], sel.Sel.Name, why[local[x.Name]])
			}
			return true
		})
	}
}

// TestVMImportsNoWorker: the VM's only doors are interfaces, and its import
// graph says so. Nothing that package vm imports, directly or through
// another package, is a concrete worker or the process runner: the data it
// exchanges with them lives in workers/step, its string helpers in the leaf
// workers/text, and its Host is given by the caller (go list -deps ./vm).
func TestVMImportsNoWorker(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	forbidden := []string{"workers", "workers/agent", "workers/steprun", "workers/builtin", "workers/proc", "workers/doctor", "workers/provider"}
	seen := map[string]string{} // package -> the package that imported it first
	var walk func(rel, from string)
	walk = func(rel, from string) {
		if _, ok := seen[rel]; ok {
			return
		}
		seen[rel] = from
		pkg, err := build.ImportDir(filepath.Join(root, filepath.FromSlash(rel)), 0)
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		for _, imp := range pkg.Imports {
			if next, ok := strings.CutPrefix(imp, module+"/"); ok {
				walk(next, rel)
			}
		}
	}
	walk("vm", "")
	if len(seen) < 4 {
		t.Fatalf("found only %d of vm's packages; the walk is broken", len(seen))
	}
	for _, f := range forbidden {
		if from, ok := seen[f]; ok {
			t.Errorf("vm depends on %s (imported by %s): the VM must import no concrete worker", f, from)
		}
	}
}
