// Package docgen keeps the generated parts of the documentation in step
// with the code: a test builds a region's text and Region compares it with
// the document (or, with -update, rewrites it). Test support only.
package docgen

import (
	"bytes"
	"os"
	"regexp"
	"testing"
)

// Region checks the generated region name of the document doc: the lines
// between <!-- BEGIN GENERATED name --> and <!-- END GENERATED name -->
// must be body. With update it rewrites the region instead; otherwise a
// stale region is an error that names regen, the command that regenerates
// it.
func Region(t testing.TB, doc, name, body string, update bool, regen string) {
	t.Helper()
	data, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?s)<!-- BEGIN GENERATED ` + regexp.QuoteMeta(name) + ` -->\n.*?<!-- END GENERATED ` + regexp.QuoteMeta(name) + ` -->`)
	if !re.Match(data) {
		t.Fatalf("%s has no region <!-- BEGIN GENERATED %s --> ... <!-- END GENERATED %s -->", doc, name, name)
	}
	want := "<!-- BEGIN GENERATED " + name + " -->\n" + body + "<!-- END GENERATED " + name + " -->"
	got := re.ReplaceAllLiteral(data, []byte(want))
	if bytes.Equal(got, data) {
		return
	}
	if update {
		if err := os.WriteFile(doc, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: the generated part %q is stale: run %s", doc, name, regen)
}
