package compiler

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"smith/compiler/ir"
	"smith/internal/goldenfile"
	"smith/isa"
	"smith/manifest"
	"smith/source"
)

var update = flag.Bool("update", false, "rewrite .golden files in testdata")

// golden compares got with the golden file at path, or rewrites the file
// with -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	goldenfile.Check(t, path, []byte(got), *update, goldenfile.Regen(t, "compiler"))
}

// goldenInputs returns the NAME.yaml and NAME.json files of a testdata
// directory, sorted.
func goldenInputs(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	for _, pat := range []string{"*.yaml", "*.json"} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	sort.Strings(files)
	return files
}

// compileFile loads, lowers and generates the document at path; any error
// diagnostic fails the test. Warnings are allowed.
func compileFile(t *testing.T, path string) (*ir.Program, *isa.Program) {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.ToSlash(path)
	wf, mf, ds := manifest.Load(name, src)
	var p *ir.Program
	var more source.Diagnostics
	switch {
	case wf != nil:
		p, more = LowerWorkflow(wf, Options{})
	case mf != nil:
		p, more = LowerManifest(mf, Options{})
	}
	ds.Append(more...)
	if p != nil {
		ds.Append(CheckGraph(p)...)
	}
	if p == nil || ds.HasErrors() {
		t.Fatalf("compile %s: %v", name, ds)
	}
	prog, err := Generate(p)
	if err != nil {
		t.Fatalf("Generate(%s) error: %v", name, err)
	}
	if err := prog.Verify(); err != nil {
		t.Fatalf("Generate(%s) does not verify: %v", name, err)
	}
	return p, prog
}

// TestCodegenGolden compiles testdata/codegen/NAME.yaml|json and compares
// the disassembly with NAME.dis.golden.
func TestCodegenGolden(t *testing.T) {
	t.Parallel()
	for _, path := range goldenInputs(t, "testdata/codegen") {
		stem := strings.TrimSuffix(path, filepath.Ext(path))
		t.Run(filepath.Base(stem), func(t *testing.T) {
			t.Parallel()
			_, prog := compileFile(t, path)
			var b bytes.Buffer
			if err := prog.Disassemble(&b); err != nil {
				t.Fatalf("Disassemble(%s) error: %v", path, err)
			}
			golden(t, stem+".dis.golden", b.String())
		})
	}
}

// TestDOTGolden compiles testdata/graph/NAME.yaml|json and compares its DOT
// with NAME.dot.golden.
func TestDOTGolden(t *testing.T) {
	t.Parallel()
	for _, path := range goldenInputs(t, "testdata/graph") {
		stem := strings.TrimSuffix(path, filepath.Ext(path))
		t.Run(filepath.Base(stem), func(t *testing.T) {
			t.Parallel()
			_, prog := compileFile(t, path)
			var b bytes.Buffer
			if err := DOT(prog, &b, DOTOptions{}); err != nil {
				t.Fatalf("DOT(%s) error: %v", path, err)
			}
			golden(t, stem+".dot.golden", b.String())
		})
	}
}
