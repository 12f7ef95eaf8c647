package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDependenciesDoc: docs/dependencies.md names every module smith's
// go.mod requires directly, and every module its table names is required
// by one of the repository's go.mod files (smith's or a nested module's).
func TestDependenciesDoc(t *testing.T) {
	doc, err := os.ReadFile("../../docs/dependencies.md")
	if err != nil {
		t.Fatal(err)
	}
	var mods strings.Builder
	for _, f := range []string{"../../go.mod", "../smith-temporal/go.mod", "../smithvm/e2e/go.mod"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		mods.Write(b)
	}
	root, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	direct := regexp.MustCompile(`(?m)^\s+(\S+) v\S+\s*$`)
	for _, m := range direct.FindAllStringSubmatch(string(root), -1) {
		if !strings.Contains(string(doc), "`"+m[1]) {
			t.Errorf("docs/dependencies.md does not name %s, which go.mod requires", m[1])
		}
	}
	// The first cell of each row of the module table: `module` ... names.
	row := regexp.MustCompile("(?m)^\\| (`[^|]*)\\|")
	name := regexp.MustCompile("`((?:github\\.com|golang\\.org|google\\.golang\\.org|gonum\\.org|go\\.yaml\\.in|go\\.temporal\\.io)/[^`]+)`")
	for _, r := range row.FindAllStringSubmatch(string(doc), -1) {
		for _, n := range name.FindAllStringSubmatch(r[1], -1) {
			mod := strings.TrimSuffix(n[1], "/unix")
			if !regexp.MustCompile(`(?m)^\s*(require\s+)?` + regexp.QuoteMeta(mod) + `(/\S*)? v`).MatchString(mods.String()) {
				t.Errorf("docs/dependencies.md names %s, which no go.mod of the repository requires", n[1])
			}
		}
	}
}
