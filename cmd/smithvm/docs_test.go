package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"

	"smith/internal/docgen"
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
	for _, c := range commands() {
		fs := c.flags(e, &flagVals{})
		have[strings.TrimPrefix(fs.Name(), "smithvm ")] = true
		var h bytes.Buffer
		fs.SetOutput(&h)
		fs.Usage()
		fmt.Fprintf(&b, "\n### %s\n\n```\n%s```\n", fs.Name(), h.String())
	}
	for _, m := range regexp.MustCompile(`(?m)^  smithvm ([a-z][a-z-]*)`).FindAllStringSubmatch(usage, -1) {
		if !have[m[1]] {
			t.Errorf("smithvm %s has no row in commands (cmd/smithvm/flags.go), so docs/cli.md cannot document it", m[1])
		}
	}
	docgen.Region(t, "../../docs/cli.md", "smithvm", b.String(), *update, "go test ./cmd/smithc ./cmd/smithvm -run TestCLIDocs -update")
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
