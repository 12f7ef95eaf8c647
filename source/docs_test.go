package source

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"smith/internal/docgen"
)

// TestCodesDocumented checks that every code has a section in
// docs/diagnostics.md, and that the doc names no code the table lacks.
func TestCodesDocumented(t *testing.T) {
	data, err := os.ReadFile("../docs/diagnostics.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if name, ok := strings.CutPrefix(line, "## "); ok {
			sections[strings.TrimSpace(name)] = true
		}
	}
	for _, ci := range Codes() {
		if !sections[string(ci.Code)] {
			t.Errorf("code %s has no '## %s' section in docs/diagnostics.md", ci.Code, ci.Code)
		}
		delete(sections, string(ci.Code))
	}
	for s := range sections {
		t.Errorf("docs/diagnostics.md has a section '## %s' for a code that codes.go does not define", s)
	}
}

var update = flag.Bool("update", false, "rewrite generated documentation")

// exitMeaning says what each exit status means; every status of the code
// table must have an entry (TestExitCodesDoc).
var exitMeaning = map[int]string{
	ExitOK:          "success (for `smithc check`: no errors; warnings allowed)",
	ExitExec:        "execution error: a step failed and nothing handled it, an `error:` handler or `FAIL:` action, no transition, the step budget",
	ExitConfig:      "configuration error: parse, schema and check errors, a missing secret, bad flags, a corrupt or unknown run, a locked run",
	ExitPathEscape:  "path security violation: a path leaves the project",
	ExitHalted:      "halted by `HALT_AND_FLAG`, awaiting `smithvm resume`",
	ExitTimeout:     "the run failed because a step timed out",
	ExitInterrupted: "interrupted (SIGINT/SIGTERM to smithvm): state saved, resume continues",
}

// TestExitCodesDoc: the tables of docs/exit-codes.md are generated from
// the code table (source/codes.go), the one source of exit
// statuses. Regenerate: go test ./source -run TestExitCodesDoc -update.
func TestExitCodesDoc(t *testing.T) {
	var b strings.Builder
	b.WriteString("| exit | meaning | codes |\n| --- | --- | --- |\n")
	for _, st := range []int{ExitOK, ExitExec, ExitConfig, ExitPathEscape, ExitHalted, ExitTimeout, ExitInterrupted} {
		var codes []string
		for _, ci := range Codes() {
			if ci.Exit == st {
				codes = append(codes, "`"+string(ci.Code)+"`")
			}
		}
		fmt.Fprintf(&b, "| %d | %s | %s |\n", st, exitMeaning[st], strings.Join(codes, ", "))
	}
	b.WriteString("\n| code | severity | exit | found by | meaning |\n| --- | --- | --- | --- | --- |\n")
	for _, ci := range Codes() {
		if _, ok := exitMeaning[ci.Exit]; !ok {
			t.Errorf("code %s exits %d, which exitMeaning does not explain", ci.Code, ci.Exit)
		}
		when := "run time"
		if ci.Static {
			when = "`smithc check`"
		}
		fmt.Fprintf(&b, "| [`%s`](diagnostics.md#%s) | %s | %d | %s | %s |\n", ci.Code, strings.ToLower(string(ci.Code)), ci.Severity, ci.Exit, when, strings.ReplaceAll(ci.Summary, "|", `\|`))
	}
	docgen.Region(t, "../docs/exit-codes.md", "codes", b.String(), *update, "go test ./source -run TestExitCodesDoc -update")
}

// TestCodesDocExamples: the example of each code in docs/diagnostics.md
// (the first block of its section) names the code, as the message a user
// sees does, except for the few codes whose console line carries none.
func TestCodesDocExamples(t *testing.T) {
	data, err := os.ReadFile("../docs/diagnostics.md")
	if err != nil {
		t.Fatal(err)
	}
	// The console line of these names no code: the run's own message, or
	// the interruption notice.
	noCode := map[Code]bool{EStepFailed: true, EValidation: true, EInterrupted: true, EInternal: true}
	for _, ci := range Codes() {
		_, sec, ok := strings.Cut(string(data), "\n## "+string(ci.Code)+"\n")
		if !ok {
			continue // TestCodesDocumented reports it
		}
		sec, _, _ = strings.Cut(sec, "\n## ")
		_, ex, ok := strings.Cut(sec, "\n```\n")
		if !ok {
			t.Errorf("docs/diagnostics.md: %s has no example block", ci.Code)
			continue
		}
		ex, _, _ = strings.Cut(ex, "```")
		if !noCode[ci.Code] && !strings.Contains(ex, string(ci.Code)) {
			t.Errorf("docs/diagnostics.md: the example of %s does not name it, as the message does:\n%s", ci.Code, ex)
		}
	}
}
