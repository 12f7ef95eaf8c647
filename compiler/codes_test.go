package compiler

import (
	"go/scanner"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
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

// runtimeTestDirs hold the tests of the run-time side, relative to this
// package.
var runtimeTestDirs = []string{"../cmd/smithvm", "../vm", "../vm/store", "../workers"}

// TestRuntimeCodesHaveTest checks that every runtime code (Static: false)
// is named in at least one *_test.go file (or testdata/script/*.txtar
// command) of cmd/smithvm, vm, vm/store or workers, by its Go constant (source.EWaitTimeout) or its literal
// (E_WAIT_TIMEOUT) in the test's code: a name that appears only in a
// comment does not count (codeTokens drops comments).
func TestRuntimeCodesHaveTest(t *testing.T) {
	t.Parallel()
	var texts []string
	for _, dir := range runtimeTestDirs {
		files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			texts = append(texts, codeTokens(data))
		}
		scripts, _ := filepath.Glob(filepath.Join(dir, "testdata", "script", "*.txtar"))
		for _, f := range scripts {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			texts = append(texts, scriptCommands(string(data)))
		}
	}
	if len(texts) == 0 {
		t.Fatalf("no *_test.go files under %s", strings.Join(runtimeTestDirs, ", "))
	}
	names := constNames(t)
	var missing []string
	for _, ci := range source.Codes() {
		if ci.Static {
			continue
		}
		name, ok := names[ci.Code]
		if !ok {
			t.Errorf("code %s has no Go constant in source/codes.go", ci.Code)
			continue
		}
		re := regexp.MustCompile(`\bsource\.` + name + `\b|\b` + string(ci.Code) + `\b`)
		found := false
		for _, text := range texts {
			if re.MatchString(text) {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, string(ci.Code)+" (source."+name+")")
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("runtime code %s: no test in %s names it", m, strings.Join(runtimeTestDirs, ", "))
	}
}

// scriptCommands returns the commands of a testscript file: its lines
// before the first file, without # comments.
func scriptCommands(txtar string) string {
	var b strings.Builder
	for _, line := range strings.Split(txtar, "\n") {
		if strings.HasPrefix(line, "-- ") && strings.HasSuffix(line, " --") {
			break
		}
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// codeTokens returns the Go source src without its comments: identifiers,
// selectors (source.EWaitTimeout) and string literals, so that a code named
// only in a comment is not taken for a test of it.
func codeTokens(src []byte) string {
	var s scanner.Scanner
	fset := token.NewFileSet()
	s.Init(fset.AddFile("", fset.Base(), len(src)), src, nil, 0) // mode 0: comments skipped
	var b strings.Builder
	afterPeriod := false
	for {
		_, tok, lit := s.Scan()
		if tok == token.EOF {
			return b.String()
		}
		switch tok {
		case token.PERIOD:
			b.WriteByte('.')
			afterPeriod = true
			continue
		case token.IDENT, token.STRING:
			if !afterPeriod {
				b.WriteByte(' ')
			}
			b.WriteString(lit)
		default:
			b.WriteByte(' ')
		}
		afterPeriod = false
	}
}

// constNames maps each code to the name of its Go constant, read from the
// source of codes.go (lines of the form `EName Code = "E_NAME"`).
func constNames(t *testing.T) map[source.Code]string {
	t.Helper()
	data, err := os.ReadFile("../source/codes.go")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^\s*([A-Z]\w*)\s+Code\s*=\s*"([EW]_[A-Z_]+)"`)
	out := map[source.Code]string{}
	for _, m := range re.FindAllStringSubmatch(string(data), -1) {
		out[source.Code(m[2])] = m[1]
	}
	return out
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

func TestCodeTokensDropComments(t *testing.T) {
	src := []byte("package x\n// E_IN_COMMENT source.EInComment\nvar _ = source.EInCode\nvar _ = \"E_IN_STRING\"\n/* E_BLOCK */\n")
	got := codeTokens(src)
	for _, want := range []string{"source.EInCode", "E_IN_STRING"} {
		if !strings.Contains(got, want) {
			t.Errorf("codeTokens lost %s: %q", want, got)
		}
	}
	for _, gone := range []string{"E_IN_COMMENT", "EInComment", "E_BLOCK"} {
		if strings.Contains(got, gone) {
			t.Errorf("codeTokens kept the comment's %s: %q", gone, got)
		}
	}
}
