package builtin

import (
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"smith/lang"
	"smith/workers/reply"
)

// TestWorkersDocumented: docs/workers.md has a row for every internal
// worker, and the preamble schema it shows requires what
// Internal:PreambleValidator requires.
func TestWorkersDocumented(t *testing.T) {
	data, err := os.ReadFile("../../docs/workers.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	for _, name := range lang.InternalNames() {
		if !strings.Contains(doc, "| `"+name+"` |") {
			t.Errorf("docs/workers.md has no table row for %s", name)
		}
	}
	m := regexp.MustCompile("(?s)## PreambleValidator's schema.*?```json\n(.*?)```").FindStringSubmatch(doc)
	if m == nil {
		t.Fatal("docs/workers.md shows no preamble schema")
	}
	var shown, real struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal([]byte(m[1]), &shown); err != nil {
		t.Fatalf("the preamble schema in docs/workers.md is not JSON: %v", err)
	}
	if err := json.Unmarshal([]byte(reply.PreambleSchemaText()), &real); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(shown.Required, real.Required) || len(shown.Properties) != len(real.Properties) {
		t.Errorf("docs/workers.md shows required %v (%d properties), PreambleValidator requires %v (%d)",
			shown.Required, len(shown.Properties), real.Required, len(real.Properties))
	}
}
