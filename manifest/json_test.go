package manifest

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"smith/manifest/source"
)

const positionsJSON = `{
  "version": "1",
  "ünï": {"é": "çx", "n": -1.5e3,
    "list": [1, "ß", true, null, {"k": []}]},
	"tab": "t"
}`

func TestParseJSONPositions(t *testing.T) {
	t.Parallel()
	root, ds := ParseJSON("p.json", []byte(positionsJSON))
	if len(ds) > 0 {
		t.Fatalf("ParseJSON diagnostics:\n%s", showDiags(ds))
	}
	tests := []struct {
		name string
		path string
		kind Kind
		str  string
		pos  string
	}{
		{"top", "", KMap, "", "p.json:1:1"},
		{"string after its quote", "version", KString, "1", "p.json:2:15"},
		{"object", "ünï", KMap, "", "p.json:3:10"},
		{"string after multi-byte key", "ünï.é", KString, "çx", "p.json:3:17"},
		{"number literal kept", "ünï.n", KNumber, "-1.5e3", "p.json:3:27"},
		{"list on the next line", "ünï.list", KList, "", "p.json:4:13"},
		{"number in list", "ünï.list[0]", KNumber, "1", "p.json:4:14"},
		{"multi-byte string", "ünï.list[1]", KString, "ß", "p.json:4:18"},
		{"bool after multi-byte", "ünï.list[2]", KBool, "true", "p.json:4:22"},
		{"null", "ünï.list[3]", KNull, "", "p.json:4:28"},
		{"empty list", "ünï.list[4].k", KList, "", "p.json:4:40"},
		{"after a tab", "tab", KString, "t", "p.json:5:10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := root
			if tt.path != "" {
				v = lookupPath(root, tt.path)
			}
			if v == nil {
				t.Fatalf("lookup(%q) = nil", tt.path)
			}
			if v.Kind != tt.kind || (tt.str != "" && v.Str != tt.str) || v.Pos.String() != tt.pos {
				t.Errorf("lookup(%q) = %v %q at %s, want %v %q at %s", tt.path, v.Kind, v.Str, v.Pos, tt.kind, tt.str, tt.pos)
			}
		})
	}
	if got := root.Get("ünï").Map[0].KeyPos.String(); got != "p.json:3:11" {
		t.Errorf("key 'é' at %s, want p.json:3:11", got)
	}
}

// TestJSONCursor checks the linear-time cursor against source.File.
func TestJSONCursor(t *testing.T) {
	t.Parallel()
	src := []byte("ab\nçd\n\nx\xffy\n")
	f := source.NewFile("c.json", src)
	c := jsonCursor{src: src, file: "c.json", line: 1, col: 1}
	for off := 0; off <= len(src); off++ {
		if got, want := c.pos(off), f.Pos(off); got != want {
			t.Errorf("cursor.pos(%d) = %v, want %v", off, got, want)
		}
	}
}

func TestParseJSONErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want string
	}{
		{"missing colon", `{"a" 1}`, "e.json:1:6: error: E_PARSE: invalid character '1' after object key"},
		{"bad literal", "{\n  \"a\": tru}", "e.json:2:11: error: E_PARSE: invalid character '}' in literal true (expecting 'e')"},
		{"unexpected end", "{\"a\": [1,", "e.json:1:10: error: E_PARSE: unexpected end of JSON input"},
		{"trailing data", "{\"a\": 1}\n x", "e.json:2:2: error: E_PARSE: invalid character 'x' after top-level value"},
		{"second value", "{} {}", "e.json:1:4: error: E_PARSE: invalid character '{' after top-level value"},
		{"trailing comma", `{"a": 1,}`, "e.json:1:9: error: E_PARSE: invalid character '}' looking for beginning of object key string"},
		{"empty", "", "e.json:1:1: error: E_PARSE: unexpected end of JSON input"},
		{"duplicate key", "{\"a\": {\"b\": 1,\n \"b\": 2}}", "e.json:2:2: error: E_PARSE: duplicate key 'b'"},
		{"too deep", `{"a": ` + strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth) + "}", "e.json:1:10006: error: E_PARSE: document nests deeper than 10000 levels"},
		{"list at top", "[1]", "e.json:1:1: error: E_SCHEMA: the top level must be an object, found array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, ds := ParseJSON("e.json", []byte(tt.src))
			if got := showDiags(ds); got != tt.want {
				t.Errorf("ParseJSON(%q) =\n%s\nwant\n%s", tt.src, got, tt.want)
			}
		})
	}
}

func TestParseJSONDuplicateKeyInLargeObject(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, "%q: %d,\n", fmt.Sprintf("k%d", i), i)
	}
	b.WriteString(`"k7": 0}`)
	_, ds := ParseJSON("d.json", []byte(b.String()))
	want := "d.json:41:1: error: E_PARSE: duplicate key 'k7'"
	if got := showDiags(ds); got != want {
		t.Errorf("ParseJSON(40 keys + 'k7') =\n%s\nwant\n%s", got, want)
	}
}

// bigJSON builds a manifest-like document of about size bytes: one object
// with many entries of ~100-byte strings and small nested objects.
func bigJSON(size int) []byte {
	var b bytes.Buffer
	b.Grow(size + 1024)
	b.WriteString(`{"version": "1", "static_memory": {`)
	pad := strings.Repeat("x", 80)
	n := 0
	for b.Len() < size {
		if n > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `"key%07d": {"text": "%s ü", "n": %d, "ok": true}`, n, pad, n)
		n++
	}
	b.WriteString("}}\n")
	return b.Bytes()
}

func TestParseJSONLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("50 MB document: skipped with -short")
	}
	src := bigJSON(50 << 20)
	v, ds := ParseJSON("big.json", src)
	if len(ds) > 0 {
		t.Fatalf("ParseJSON(50 MB) diagnostics:\n%s", showDiags(ds))
	}
	mem := v.Get("static_memory")
	if mem == nil || len(mem.Map) < 350_000 {
		t.Fatalf("ParseJSON(50 MB): static_memory has %d entries, want >= 350000", len(mem.Map))
	}
	last := mem.Map[len(mem.Map)-1]
	wantLine := len(mem.Map) // one entry per line, the first on line 1
	if last.KeyPos.Line != wantLine || last.KeyPos.Col != 1 {
		t.Errorf("ParseJSON(50 MB): last key at %s, want line %d col 1", last.KeyPos, wantLine)
	}
	if got := last.Val.Get("n").Str; got != fmt.Sprint(len(mem.Map)-1) {
		t.Errorf("ParseJSON(50 MB): last n = %s, want %d", got, len(mem.Map)-1)
	}
}

func BenchmarkParseJSON(b *testing.B) {
	src := bigJSON(4 << 20)
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, ds := ParseJSON("big.json", src); len(ds) > 0 {
			b.Fatal(ds)
		}
	}
}
