package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"smith/source"
)

// TestRuntimeCodesHaveTest checks that every runtime code (Static: false in
// source/codes.go) is produced end to end: some testdata/script/*.txtar
// case (run by TestScripts against the built binaries) has an assertion
// that requires the code in what smithvm printed or wrote. Only assertions
// count, as scriptCodes reads them: a code named in a comment, in a
// workflow file of the archive or in a negated assertion does not. So
// removing a code's production makes its script fail, and removing the
// script makes this test fail. (The static codes have their check cases:
// compiler's TestStaticCodesHaveCheckCase.)
func TestRuntimeCodesHaveTest(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/script/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/script/*.txtar")
	}
	produced := map[source.Code][]string{}
	for _, f := range files {
		a, err := txtar.ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range scriptCodes(a) {
			produced[c] = append(produced[c], filepath.Base(f))
		}
	}
	// Codes only smith-temporal produces are asserted by its own module's
	// tests (it is another program): they must name the code there.
	temporal, err := filepath.Glob("../../smith-temporal/*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var temporalTests strings.Builder
	for _, f := range temporal {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		temporalTests.Write(b)
	}
	for c := range temporalOnly {
		if !strings.Contains(temporalTests.String(), string(c)+": ") {
			t.Errorf("code %s: no test of cmd/smith-temporal expects a message with it", c)
		}
		produced[c] = append(produced[c], "cmd/smith-temporal")
	}
	for _, ci := range source.Codes() {
		if !ci.Static && len(produced[ci.Code]) == 0 {
			t.Errorf("runtime code %s: no testdata/script/*.txtar asserts that smithvm produces it (add exit%d_%s.txtar)",
				ci.Code, ci.Exit, strings.ToLower(strings.TrimPrefix(string(ci.Code), "E_")))
		}
	}
}

// temporalOnly are the runtime codes that only smith-temporal produces.
var temporalOnly = map[source.Code]bool{source.ETemporalConn: true}

// codeRE finds code names in an assertion's pattern or expected text.
var codeRE = regexp.MustCompile(`\b[EW]_[A-Z][A-Z_]*[A-Z]\b`)

// scriptCodes returns the codes (sorted, each once) that the assertions of
// a testscript archive require smithvm to produce:
//
//   - stdout/stderr PATTERN after a smithvm command: the codes in PATTERN;
//   - cmp stdout|stderr FILE after a smithvm command: the codes in FILE;
//   - grep PATTERN FILE, when FILE is not one the script supplied (an
//     archive file, or a cp of one): the codes in PATTERN;
//   - exit N after smithvm run|resume|run-step: the code whose exit status
//     N is, when exactly one code has it (130: E_INTERRUPTED), since those
//     commands map a run's end to a status only through the code table.
//
// Comments, negated assertions (! stderr X) and output of other commands
// (exec git ...) count for nothing.
func scriptCodes(a *txtar.Archive) []source.Code {
	supplied := map[string]string{}
	for _, f := range a.Files {
		supplied[f.Name] = string(f.Data)
	}
	found := map[source.Code]bool{}
	add := func(text string) {
		for _, m := range codeRE.FindAllString(text, -1) {
			if _, ok := source.Code(m).Info(); ok {
				found[source.Code(m)] = true
			}
		}
	}
	lastCmd, lastVM := "", ""
	for _, line := range strings.Split(string(a.Comment), "\n") {
		args := scriptWords(line)
		for len(args) > 0 && strings.HasPrefix(args[0], "[") {
			args = args[1:] // a condition
		}
		neg := len(args) > 0 && args[0] == "!"
		if neg {
			args = args[1:]
		}
		if len(args) == 0 {
			continue
		}
		name, rest := args[0], args[1:]
		for len(rest) > 0 && (strings.HasPrefix(rest[0], "-count=") || rest[0] == "-q") && name != "smithvm" && name != "exec" {
			rest = rest[1:]
		}
		switch name {
		case "smithvm":
			lastCmd, lastVM = name, ""
			if len(rest) > 0 {
				lastVM = rest[0]
			}
		case "exec":
			// smithvm started through another program (prlimit) on PATH.
			lastCmd, lastVM = name, ""
			if i := slices.Index(rest, "smithvm"); i >= 0 {
				lastCmd = "smithvm"
				if i+1 < len(rest) {
					lastVM = rest[i+1]
				}
			}
		case "stdout", "stderr":
			if !neg && lastCmd == "smithvm" && len(rest) > 0 {
				add(rest[0])
			}
		case "cmp":
			if !neg && lastCmd == "smithvm" && len(rest) == 2 && (rest[0] == "stdout" || rest[0] == "stderr") {
				add(supplied[rest[1]])
			}
		case "grep":
			if _, ok := supplied[filepath.Clean(lastOf(rest))]; !neg && len(rest) == 2 && !ok {
				add(rest[0])
			}
		case "cp", "mv":
			if len(rest) >= 2 {
				supplied[filepath.Clean(lastOf(rest))] = ""
			}
		case "exit":
			if len(rest) == 1 && (lastVM == "run" || lastVM == "resume" || lastVM == "run-step") {
				if n, err := strconv.Atoi(rest[0]); err == nil && n != 0 {
					if c, ok := onlyCodeWithExit(n); ok {
						found[c] = true
					}
				}
			}
		default:
			lastCmd = name
		}
	}
	var out []source.Code
	for c := range found {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// onlyCodeWithExit is the code whose exit status is n, when exactly one
// code has it.
func onlyCodeWithExit(n int) (source.Code, bool) {
	var only []source.Code
	for _, ci := range source.Codes() {
		if ci.Exit == n {
			only = append(only, ci.Code)
		}
	}
	if len(only) != 1 {
		return "", false
	}
	return only[0], true
}

func lastOf(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}

// scriptWords splits a testscript line into words as testscript does:
// spaces separate, 'single quotes' group (” is a quote inside them), and a
// # that starts a word starts a comment.
func scriptWords(line string) []string {
	var words []string
	var w strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quoted && c == '\'' && i+1 < len(line) && line[i+1] == '\'':
			w.WriteByte('\'')
			i++
		case c == '\'':
			quoted, inWord = !quoted, true
		case quoted:
			w.WriteByte(c)
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '#' && !inWord:
			return words
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// TestScriptCodes pins down what scriptCodes counts as an assertion that
// a code was produced, and what it does not.
func TestScriptCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, script string
		want         string
	}{
		{"stderr after smithvm", "! smithvm run f.yaml\nstderr 'E_EXEC: command'\n", "E_EXEC"},
		{"stdout with count", "smithvm list\nstdout -count=1 E_USAGE\n", "E_USAGE"},
		{"comment", "# E_EXEC is produced here\nsmithvm run f.yaml # E_TIMEOUT\n", ""},
		{"negated", "! smithvm run f.yaml\n! stderr E_EXEC\n", ""},
		{"stderr of smithvm under prlimit", "! exec prlimit --fsize=6000 smithvm run f.yaml\nstderr E_STATE_IO\n", "E_STATE_IO"},
		{"stderr of another command", "smithvm run f.yaml\nexec git status\nstderr E_MERGE_CONFLICT\n", ""},
		{"conditioned", "[!tool:git] skip\n! smithvm merge r1\n[linux] stderr E_MERGE_CONFLICT\n", "E_MERGE_CONFLICT"},
		{"grep of a run's file", "smithvm run f.yaml\ngrep '\"code\":\"E_STEP_BUDGET\"' .orchestrator/runs/b/logs/events.jsonl\n", "E_STEP_BUDGET"},
		{"grep of a supplied file", "grep E_EXEC f.yaml\n-- f.yaml --\nE_EXEC\n", ""},
		{"grep of a copied file", "cp f.yaml out.txt\ngrep E_EXEC out.txt\n-- f.yaml --\nE_EXEC\n", ""},
		{"cmp stderr with a golden", "! smithvm run f.yaml\ncmp stderr want.txt\n-- want.txt --\nERROR: E_LIMIT: deep\n", "E_LIMIT"},
		{"unique exit status", "! smithvm run f.yaml\nexit 130\n", "E_INTERRUPTED"},
		{"shared exit status", "! smithvm run f.yaml\nexit 124\n", ""},
		{"exit of watch", "! smithvm watch f.yaml\nexit 130\n", ""},
		{"not a code", "! smithvm run f.yaml\nstderr E_NOT_A_CODE\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range scriptCodes(txtar.Parse([]byte(tt.script))) {
				got = append(got, string(c))
			}
			if g := strings.Join(got, " "); g != tt.want {
				t.Errorf("scriptCodes(%q) = %q, want %q", tt.script, g, tt.want)
			}
		})
	}
}
