package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite generated documentation")

// TestCLIDocs: the smithvm part of docs/cli.md is exactly the help of every
// command, built from the flag-set builders the commands use, and every
// command of the usage has one. Regenerate:
// go test ./cmd/smithvm -run TestCLIDocs -update.
func TestCLIDocs(t *testing.T) {
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}
	var b strings.Builder
	b.WriteString("```\n" + usage + "```\n")
	have := map[string]bool{}
	for _, build := range flagBuilders {
		fs := build(e, &flagVals{})
		have[strings.TrimPrefix(fs.Name(), "smithvm ")] = true
		var h bytes.Buffer
		fs.SetOutput(&h)
		fs.Usage()
		fmt.Fprintf(&b, "\n### %s\n\n```\n%s```\n", fs.Name(), h.String())
	}
	for _, m := range regexp.MustCompile(`(?m)^  smithvm ([a-z-]+)`).FindAllStringSubmatch(usage, -1) {
		if !have[m[1]] {
			t.Errorf("smithvm %s has no flag-set builder in flagBuilders (cmd/smithvm/flags.go), so docs/cli.md cannot document it", m[1])
		}
	}
	checkRegion(t, "../../docs/cli.md", "smithvm", b.String())
}

// checkRegion compares (or with -update rewrites) the generated region
// NAME of a document: the text between <!-- BEGIN GENERATED NAME --> and
// <!-- END GENERATED NAME -->.
func checkRegion(t *testing.T, doc, name, body string) {
	t.Helper()
	data, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?s)<!-- BEGIN GENERATED ` + name + ` -->\n.*?<!-- END GENERATED ` + name + ` -->`)
	if !re.Match(data) {
		t.Fatalf("%s has no region <!-- BEGIN GENERATED %s --> ... <!-- END GENERATED %s -->", doc, name, name)
	}
	want := "<!-- BEGIN GENERATED " + name + " -->\n" + body + "<!-- END GENERATED " + name + " -->"
	got := re.ReplaceAllLiteral(data, []byte(want))
	if bytes.Equal(got, data) {
		return
	}
	if *update {
		if err := os.WriteFile(doc, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: the %s reference is stale: run go test ./cmd/smithc ./cmd/smithvm -run TestCLIDocs -update", doc, name)
}

// TestWatchHelpHasNoRunOnlyFlags: watch offers no flag that means nothing
// there (it prints no final state, so no --json; each run gets a new id,
// so no --run-id).
func TestWatchHelpHasNoRunOnlyFlags(t *testing.T) {
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}
	fs := e.watchFlags(&flagVals{})
	for _, name := range []string{"json", "run-id", "signal", "note"} {
		if fs.Lookup(name) != nil {
			t.Errorf("smithvm watch offers --%s, which means nothing there", name)
		}
	}
}
