package manifest

import "testing"

// TestExplainJSONSlips: the slips an editor or a habit makes (a byte-order
// mark, a comment, an empty file) are named in words, not as the odd byte
// found.
func TestExplainJSONSlips(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src, want string
	}{
		{"byte order mark", "\ufeff{}", "x.json:1:1: error: E_PARSE: the document starts with a byte-order mark (U+FEFF): save it as UTF-8 without one"},
		{"line comment", "{\n  // the entry\n  \"a\": 1}", "x.json:2:3: error: E_PARSE: expected a key in double quotes, found '/': JSON allows no comments"},
		{"block comment", `{"a": /* one */ 1}`, "x.json:1:7: error: E_PARSE: expected a value (a string in double quotes, a number, an object, a list, true, false or null), found '/': JSON allows no comments"},
		{"comment after a value", "{\"a\": 1 // one\n}", "x.json:1:9: error: E_PARSE: expected ',' or '}' after a value in an object, found '/': JSON allows no comments"},
		{"division is no comment", `{"a": 1/2}`, "x.json:1:8: error: E_PARSE: expected ',' or '}' after a value in an object, found '/'"},
		{"empty", "", "x.json:1:1: error: E_PARSE: the document is empty: expected a JSON object"},
		{"blanks only", "  \n ", "x.json:2:2: error: E_PARSE: the document is empty: expected a JSON object"},
		{"cut short", `{"a": [1,`, "x.json:1:10: error: E_PARSE: the document ends too early: expected more (a string, a list or an object is not closed)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, ds := ParseJSON("x.json", []byte(tt.src))
			if got := showDiags(explainJSON([]byte(tt.src), ds)); got != tt.want {
				t.Errorf("explainJSON(%q) =\n%s\nwant\n%s", tt.src, got, tt.want)
			}
		})
	}
}
