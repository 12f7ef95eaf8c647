package compiler

import (
	"strings"
	"testing"

	"smith/manifest/source"
)

// TestBlockIDsNameFiles: a manifest's block and node ids name log files and
// artifact folders, so smithc check rejects an empty one and one with a '/'
// (issue 8, point 11).
func TestBlockIDsNameFiles(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"", "a/b", `a\b`, ".", ".."} {
		src := `{"version": "1", "entry": "Main",
  "workers": {"Command:A": {"command": ["true"]}},
  "nodes": {"Main": {"entry_block": "ID", "blocks": {"ID": {"worker": "Command:A", "transitions": [
    {"on_signal": "SIGNAL:SUCCESS", "action": "END"}, {"on_signal": "SIGNAL:FAIL_DEFAULT", "action": "FAIL:x"}]}}}}}`
		src = strings.ReplaceAll(src, `"ID"`, strconvQuote(id))
		ds := compileForCheck("m.json", []byte(src))
		found := false
		for _, d := range ds {
			if d.Severity == source.Error && strings.Contains(d.Msg, "block id") {
				found = true
			}
		}
		if !found {
			t.Errorf("block id %q: no error, got %v", id, ds)
		}
	}
}

func strconvQuote(s string) string {
	return `"` + strings.ReplaceAll(s, `\`, `\\`) + `"`
}
