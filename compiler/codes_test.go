package compiler

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"smith/isa"
	"smith/source"
)

// checkInputs returns every input of testdata/check, sorted.
func checkInputs(t *testing.T) []string {
	t.Helper()
	files := goldenInputs(t, "testdata/check")
	if len(files) == 0 {
		t.Fatal("no testdata/check inputs")
	}
	return files
}

// TestStaticCodesHaveCheckCase checks that every static code of the code
// table is produced by at least one input under testdata/check (whose
// diagnostics TestCheckYAML and TestCheckJSON pin down).
func TestStaticCodesHaveCheckCase(t *testing.T) {
	t.Parallel()
	produced := map[source.Code][]string{}
	for _, path := range checkInputs(t) {
		for _, d := range checkFile(t, path) {
			produced[d.Code] = append(produced[d.Code], filepath.Base(path))
		}
	}
	for _, ci := range source.Codes() {
		if !ci.Static {
			continue
		}
		if len(produced[ci.Code]) == 0 {
			t.Errorf("static code %s: no input under compiler/testdata/check produces it", ci.Code)
		}
	}
	for c := range produced {
		if ci, ok := c.Info(); ok && !ci.Static {
			t.Errorf("testdata/check produces %s, which codes.go marks as a runtime code (Static: false)", c)
		}
	}
}

// TestOpcodesHaveCodegenCase checks that the codegen goldens together use
// every opcode the compiler can emit: each mnemonic (OpInvalid aside)
// appears in the instruction column of some testdata/codegen/*.dis.golden.
func TestOpcodesHaveCodegenCase(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/codegen/*.dis.golden")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/codegen/*.dis.golden")
	}
	// An instruction line: "0004  CALL           0012    ; ...".
	instr := regexp.MustCompile(`(?m)^\d{4}\s+([A-Z_]+)\b`)
	used := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range instr.FindAllStringSubmatch(string(data), -1) {
			used[m[1]] = true
		}
	}
	for op := isa.OpInvalid + 1; int(op) < isa.NumOps; op++ {
		if op == isa.OpEndStep {
			continue // isa's Program.Only emits it, not the compiler (isa/testdata/only)
		}
		if !used[op.String()] {
			t.Errorf("opcode %s: no testdata/codegen/*.dis.golden uses it", op)
		}
	}
}
