package main

import (
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// allowed lists, for each package of the module, everything it may import
// besides the standard library (STYLE.md section 1). A module name ending in
// "/" allows its sub-packages too. New entries need a note in
// docs/dependencies.md.
var allowed = map[string][]string{
	"cmd/smithc":  {"lang", "compiler", "isa", "manifest", "source", "workers/confine", "github.com/spf13/pflag"},
	"cmd/smithvm": {"lang", "cmd/smithvm/serve", "compiler", "isa", "vm", "vm/store", "workers", "workers/confine", "manifest", "source", "github.com/spf13/pflag", "github.com/fsnotify/fsnotify", "golang.org/x/term"},
	// The run viewer (smithvm serve): above the compiler, like cmd, since
	// it recompiles a run's workflow to draw its graph.
	"cmd/smithvm/serve":                {"lang", "compiler", "isa", "vm", "vm/store", "workers/confine", "source", "gonum.org/v1/gonum/"},
	"compiler":                         {"lang", "manifest", "compiler/ir", "isa", "source", "workers/confine", "gonum.org/v1/gonum/"},
	"compiler/ir":                      {"lang", "source"},
	"manifest":                         {"lang", "source", "github.com/alecthomas/participle/v2/", "github.com/invopop/jsonschema", "go.yaml.in/yaml/v3", "github.com/santhosh-tekuri/jsonschema/v6/"},
	"isa":                              {"lang", "source", "github.com/alecthomas/participle/v2/"},
	"vm":                               {"lang", "isa", "workers", "workers/confine", "source", "github.com/tidwall/gjson", "github.com/tidwall/sjson"},
	"vm/store":                         {"vm", "source", "github.com/tidwall/gjson"},
	"workers":                          {"lang", "workers/confine", "source", "golang.org/x/sys/unix", "github.com/tidwall/gjson", "github.com/tidwall/sjson", "github.com/santhosh-tekuri/jsonschema/v6/", "github.com/invopop/jsonschema"},
	"workers/confine":                  {"source", "golang.org/x/sys/unix"},
	"source":                           {},
	"lang":                             {"source"},
	"internal/docgen":                  {},
	"internal/fakemodel":               {},
	"internal/fakemodel/cmd/fakemodel": {"internal/fakemodel"},
	"bench":                            {"lang", "compiler", "isa", "manifest", "source", "vm", "vm/store", "workers", "workers/confine"},
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
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
				return filepath.SkipDir // another module (an example project), not Smith's
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

func TestMain(m *testing.M) {
	os.Exit(m.Run())
}
