package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"smith/source"
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

// TestJSONCursor checks tokenParseJSON's cursor against source.File.
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
		{"too deep", `{"a": ` + strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth) + "}", "e.json:1:106: error: E_PARSE: document nests deeper than 100 levels"},
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
	if os.Getenv("SMITH_LARGE") != "1" || testing.Short() {
		t.Skip("50 MB document: runs with SMITH_LARGE=1 (docs/testing.md)")
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

// BenchmarkParseJSON4MB parses a 4 MB document of many small objects.
func BenchmarkParseJSON4MB(b *testing.B) {
	src := bigJSON(4 << 20)
	b.ReportAllocs()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, ds := ParseJSON("big.json", src); len(ds) > 0 {
			b.Fatal(ds)
		}
	}
}

func TestParseJSONStrings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		lit  string // a JSON string literal
		want string
	}{
		{"empty", `""`, ""},
		{"plain", `"abc"`, "abc"},
		{"utf-8", `"çé ß 😀"`, "çé ß 😀"},
		{"short escapes", `"a\"b\\c\/d\be\ff\ng\rh\ti"`, "a\"b\\c/d\be\ff\ng\rh\ti"},
		{"unicode escape", `"caf\u00e9 \u00E9"`, "café é"},
		{"surrogate pair", `"\ud83d\ude00!"`, "😀!"},
		{"lone high surrogate", `"x\ud83dy"`, "x\uFFFDy"},
		{"lone high surrogate at the end", `"x\ud83d"`, "x\uFFFD"},
		{"high surrogate then non-surrogate", `"\ud83d\u0041"`, "\uFFFDA"},
		{"high surrogate twice", `"\ud83d\ud83d\ude00"`, "\uFFFD😀"},
		{"lone low surrogate", `"\ude00"`, "\uFFFD"},
		{"invalid utf-8", "\"a\xffb\"", "a\uFFFDb"},
		{"invalid utf-8 and escape", "\"\xc3\\n\"", "\uFFFD\n"},
		{"utf-8 encoded surrogate", "\"\xed\xa0\x80\"", "\uFFFD\uFFFD\uFFFD"},
		{"truncated utf-8", "\"\xe2\x82\"", "\uFFFD\uFFFD"},
		{"long", `"` + strings.Repeat("x", 100) + `\n"`, strings.Repeat("x", 100) + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := `{"k": ` + tt.lit + `, ` + tt.lit + `: 1}`
			v, ds := ParseJSON("s.json", []byte(src))
			if len(ds) > 0 {
				t.Fatalf("ParseJSON(%q) diagnostics:\n%s", src, showDiags(ds))
			}
			if got := v.Get("k").Str; got != tt.want {
				t.Errorf("ParseJSON(%q) value = %q, want %q", src, got, tt.want)
			}
			if got := v.Map[1].Key; got != tt.want {
				t.Errorf("ParseJSON(%q) key = %q, want %q", src, got, tt.want)
			}
		})
	}
}

func TestParseJSONNumbers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		lit  string
		want float64
	}{
		{"zero", "0", 0},
		{"negative zero", "-0", math.Copysign(0, -1)},
		{"integer", "1234", 1234},
		{"negative", "-42", -42},
		{"fraction", "1.5", 1.5},
		{"negative fraction", "-0.25", -0.25},
		{"exponent", "1e3", 1000},
		{"signed exponent", "2.5E+2", 250},
		{"negative exponent", "1e-3", 0.001},
		{"16 digits, rounded", "9007199254740993", 9007199254740992},
		{"20 digits", "12345678901234567890", 12345678901234567890},
		{"overflow", "1e999", math.Inf(1)},
		{"negative overflow", "-1e999", math.Inf(-1)},
		{"underflow", "1e-999", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := `{"n": [` + tt.lit + `]}`
			v, ds := ParseJSON("n.json", []byte(src))
			if len(ds) > 0 {
				t.Fatalf("ParseJSON(%q) diagnostics:\n%s", src, showDiags(ds))
			}
			n := v.Get("n").List[0]
			if n.Kind != KNumber || n.Str != tt.lit || n.Num != tt.want || math.Signbit(n.Num) != math.Signbit(tt.want) {
				t.Errorf("ParseJSON(%q) = %v %q %v, want number %q %v", src, n.Kind, n.Str, n.Num, tt.lit, tt.want)
			}
		})
	}
}

// TestParseJSONSyntaxErrors checks encoding/json's messages and offsets,
// which the reader it replaced reported, for every kind of syntax error.
func TestParseJSONSyntaxErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want string
	}{
		{"blanks only", "  \n ", "x.json:2:2: error: E_PARSE: unexpected end of JSON input"},
		{"byte order mark", "\ufeff{}", "x.json:1:1: error: E_PARSE: invalid character 'ï' looking for beginning of value"},
		{"single quotes", `{'a': 1}`, `x.json:1:2: error: E_PARSE: invalid character '\'' looking for beginning of object key string`},
		{"key not a string", `{1: 1}`, "x.json:1:2: error: E_PARSE: invalid character '1' looking for beginning of object key string"},
		{"non-ascii value", `{"a": é}`, "x.json:1:7: error: E_PARSE: invalid character 'Ã' looking for beginning of value"},
		{"missing value", `{"a": }`, "x.json:1:7: error: E_PARSE: invalid character '}' looking for beginning of value"},
		{"missing value in list", `{"a": [1,]}`, "x.json:1:10: error: E_PARSE: invalid character ']' looking for beginning of value"},
		{"missing comma in list", `{"a": [1 2]}`, "x.json:1:10: error: E_PARSE: invalid character '2' after array element"},
		{"missing comma in object", `{"a": 1 "b": 2}`, `x.json:1:9: error: E_PARSE: invalid character '"' after object key:value pair`},
		{"wrong closer", `{"a": [1}`, "x.json:1:9: error: E_PARSE: invalid character '}' after array element"},
		{"leading zero", `{"a": 01}`, "x.json:1:8: error: E_PARSE: invalid character '1' after object key:value pair"},
		{"minus alone", `{"a": -}`, "x.json:1:8: error: E_PARSE: invalid character '}' in numeric literal"},
		{"minus at the end", `{"a": -`, "x.json:1:7: error: E_PARSE: invalid character ' ' in numeric literal"},
		{"plus sign", `{"a": +1}`, "x.json:1:7: error: E_PARSE: invalid character '+' looking for beginning of value"},
		{"no fraction digit", `{"a": 1.}`, "x.json:1:9: error: E_PARSE: invalid character '}' after decimal point in numeric literal"},
		{"ends after the point", `{"a": 1.`, "x.json:1:8: error: E_PARSE: invalid character ' ' after decimal point in numeric literal"},
		{"no exponent digit", `{"a": 1e+}`, "x.json:1:10: error: E_PARSE: invalid character '}' in exponent of numeric literal"},
		{"ends in the exponent", `{"a": 1E`, "x.json:1:8: error: E_PARSE: invalid character ' ' in exponent of numeric literal"},
		{"ends after a number", `{"a": 12`, "x.json:1:9: error: E_PARSE: unexpected end of JSON input"},
		{"hex number", `{"a": 0x1}`, "x.json:1:8: error: E_PARSE: invalid character 'x' after object key:value pair"},
		{"control character", "{\"a\": \"x\ty\"}", `x.json:1:9: error: E_PARSE: invalid character '\t' in string literal`},
		{"newline in string", "{\"a\": \"x\ny\"}", `x.json:1:9: error: E_PARSE: invalid character '\n' in string literal`},
		{"bad escape", `{"a": "\x"}`, "x.json:1:9: error: E_PARSE: invalid character 'x' in string escape code"},
		{"escaped quote mark", `{"a": "\'"}`, `x.json:1:9: error: E_PARSE: invalid character '\'' in string escape code`},
		{"bad hex digit", `{"a": "\u12g4"}`, `x.json:1:12: error: E_PARSE: invalid character 'g' in \u hexadecimal character escape`},
		{"ends in a \\u escape", `{"a": "\u12`, `x.json:1:11: error: E_PARSE: invalid character ' ' in \u hexadecimal character escape`},
		{"ends after a backslash", `{"a": "\`, `x.json:1:8: error: E_PARSE: invalid character ' ' in string escape code`},
		{"unterminated string", `{"a": "abc`, "x.json:1:11: error: E_PARSE: unexpected end of JSON input"},
		{"unterminated key", `{"ab`, "x.json:1:5: error: E_PARSE: unexpected end of JSON input"},
		{"ends after a key", `{"a"`, "x.json:1:5: error: E_PARSE: unexpected end of JSON input"},
		{"ends after a comma", "{\"a\": 1,\n", "x.json:2:1: error: E_PARSE: unexpected end of JSON input"},
		{"bad true", `{"a": trUe}`, "x.json:1:9: error: E_PARSE: invalid character 'U' in literal true (expecting 'u')"},
		{"bad false", `{"a": fals}`, "x.json:1:11: error: E_PARSE: invalid character '}' in literal false (expecting 'e')"},
		{"bad null", `{"a": nul}`, "x.json:1:10: error: E_PARSE: invalid character '}' in literal null (expecting 'l')"},
		{"ends in a literal", `{"a": f`, "x.json:1:7: error: E_PARSE: invalid character ' ' in literal false (expecting 'a')"},
		{"literal glued to a word", `{"a": truex}`, "x.json:1:11: error: E_PARSE: invalid character 'x' after object key:value pair"},
		{"capitalised literal", `{"a": True}`, "x.json:1:7: error: E_PARSE: invalid character 'T' looking for beginning of value"},
		{"two top-level scalars", `1 2`, "x.json:1:3: error: E_PARSE: invalid character '2' after top-level value"},
		{"closer at top level", `{}]`, "x.json:1:3: error: E_PARSE: invalid character ']' after top-level value"},
		{"duplicate key before its colon", `{"a": 1, "a" 2}`, "x.json:1:10: error: E_PARSE: duplicate key 'a'"},
		{"duplicate escaped key", `{"ab": 1, "a\u0062": 2}`, "x.json:1:11: error: E_PARSE: duplicate key 'ab'"},
		{"error before a duplicate", `{"a": 1, "b": x, "a": 2}`, "x.json:1:15: error: E_PARSE: invalid character 'x' looking for beginning of value"},
		{"string at top", `"x"`, "x.json:1:2: error: E_SCHEMA: the top level must be an object, found string"},
		{"number at top", ` -1.5 `, "x.json:1:2: error: E_SCHEMA: the top level must be an object, found number"},
		{"deep but allowed", strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth), "x.json:1:1: error: E_SCHEMA: the top level must be an object, found array"},
		{"too deep, unclosed", strings.Repeat("[", maxJSONDepth+1), "x.json:1:101: error: E_PARSE: document nests deeper than 100 levels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, ds := ParseJSON("x.json", []byte(tt.src))
			if got := showDiags(ds); got != tt.want {
				t.Errorf("ParseJSON(%q) =\n%s\nwant\n%s", tt.src, got, tt.want)
			}
			if _, ds := tokenParseJSON("x.json", []byte(tt.src)); showDiags(ds) != tt.want {
				t.Errorf("tokenParseJSON(%q) =\n%s\nwant\n%s", tt.src, showDiags(ds), tt.want)
			}
		})
	}
}

// TestParseJSONMatchesTokenReader compares ParseJSON with the reader it
// replaced on whole documents: same trees, positions included.
func TestParseJSONMatchesTokenReader(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/*.json")
	if err != nil {
		t.Fatal(err)
	}
	more, err := filepath.Glob("../testdata/*.json")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, more...)
	tests := []struct {
		name string
		src  []byte
	}{
		{"positions", []byte(positionsJSON)},
		{"big", bigJSON(64 << 10)},
		{"one line", bytes.ReplaceAll(bigJSON(16<<10), []byte("\n"), nil)},
		{"escapes and numbers", []byte(`{"a\tb": ["\u00e9\ud83d\ude00\ud800x", "` + "\xff" + `", -0, 1e999, 0.5E-3, 12345678901234567890],
			"c": {"": [[], {}, [{}]], "t": true, "f": false, "n": null}}`)},
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tests = append(tests, struct {
			name string
			src  []byte
		}{f, src})
	}
	if len(tests) < 5 {
		t.Fatalf("found %d documents, want at least 5", len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, gds := ParseJSON("m.json", tt.src)
			want, wds := tokenParseJSON("m.json", tt.src)
			if showDiags(gds) != showDiags(wds) {
				t.Errorf("ParseJSON(%s) diagnostics =\n%s\nwant\n%s", tt.name, showDiags(gds), showDiags(wds))
			}
			if got == nil || !reflect.DeepEqual(got, want) {
				t.Errorf("ParseJSON(%s) tree differs from tokenParseJSON's:\n%s\nwant\n%s", tt.name, dumpTree(got), dumpTree(want))
			}
		})
	}
}

// dumpTree prints a tree with kinds and positions, for failure messages.
func dumpTree(v *Value) string {
	var b strings.Builder
	var dump func(v *Value, indent string)
	dump = func(v *Value, indent string) {
		if v == nil {
			b.WriteString("<nil>\n")
			return
		}
		fmt.Fprintf(&b, "%s %q %v at %s\n", v.Kind, v.Str, v.Num, v.Pos)
		for _, e := range v.List {
			b.WriteString(indent + "- ")
			dump(e, indent+"  ")
		}
		for _, e := range v.Map {
			fmt.Fprintf(&b, "%s%q at %s: ", indent, e.Key, e.KeyPos)
			dump(e.Val, indent+"  ")
		}
	}
	dump(v, "")
	return b.String()
}

// sameAsDecoded reports whether v holds what encoding/json decodes (with
// UseNumber) into x: numbers keep their literal text and its value.
func sameAsDecoded(v *Value, x any) bool {
	switch x := x.(type) {
	case nil:
		return v.Kind == KNull
	case bool:
		return v.Kind == KBool && v.Bool == x && v.Str == strconv.FormatBool(x)
	case json.Number:
		f, _ := strconv.ParseFloat(string(x), 64)
		return v.Kind == KNumber && v.Str == string(x) && (v.Num == f || math.IsNaN(f)) && math.Signbit(v.Num) == math.Signbit(f)
	case string:
		return v.Kind == KString && v.Str == x
	case []any:
		if v.Kind != KList || len(v.List) != len(x) {
			return false
		}
		for i, e := range x {
			if !sameAsDecoded(v.List[i], e) {
				return false
			}
		}
		return true
	case map[string]any:
		if v.Kind != KMap || len(v.Map) != len(x) {
			return false
		}
		for _, e := range v.Map {
			xe, ok := x[e.Key]
			if !ok || !sameAsDecoded(e.Val, xe) {
				return false
			}
		}
		return true
	}
	return false
}

// FuzzParseJSON checks ParseJSON against encoding/json and against the
// reader it replaced: it accepts exactly what json.Valid accepts, but for
// duplicate keys and nesting, builds what json decodes, and gives the same
// tree and diagnostics as tokenParseJSON.
func FuzzParseJSON(f *testing.F) {
	seeds := []string{
		positionsJSON, `{}`, `[]`, `""`, `0`, `-0.5e+3`, `1e999`, `[1,]`, `{"a" 1}`,
		`{"a": "\ud83d\ude00\ud800\u00e9\n\"\\\/"}`, "{\"a\": \"\xff\xed\xa0\x80\"}",
		`{"a": 1, "a": 2}`, `{"a": [1, 2, {"b": null}], "c": true, "d": false}`,
		`{"a": tru}`, `{"a": -`, `{"a": "\u12`, "\ufeff{}", `[[[[[[[[]]]]]]]]`, `{} {}`, " \t\r\n{}\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		v, ds := ParseJSON("f.json", src)
		want, wds := tokenParseJSON("f.json", src)
		if got, w := showDiags(ds), showDiags(wds); got != w {
			t.Fatalf("ParseJSON(%q) diagnostics =\n%s\nwant (tokenParseJSON)\n%s", src, got, w)
		}
		if !reflect.DeepEqual(v, want) {
			t.Fatalf("ParseJSON(%q) tree =\n%s\nwant (tokenParseJSON)\n%s", src, dumpTree(v), dumpTree(want))
		}
		valid := json.Valid(src)
		if v == nil {
			if len(ds) != 1 || ds[0].Code != source.EParse {
				t.Fatalf("ParseJSON(%q) = nil with diagnostics\n%s\nwant one E_PARSE", src, showDiags(ds))
			}
			msg := ds[0].Msg
			if valid && !strings.HasPrefix(msg, "duplicate key") && !strings.HasPrefix(msg, "document nests deeper") {
				t.Fatalf("ParseJSON(%q) = %s, want a tree: json.Valid accepts it", src, msg)
			}
			return
		}
		if !valid {
			t.Fatalf("ParseJSON(%q) accepted a text json.Valid rejects", src)
		}
		dec := json.NewDecoder(bytes.NewReader(src))
		dec.UseNumber()
		var x any
		if err := dec.Decode(&x); err != nil {
			t.Fatalf("json Decode(%q): %v", src, err)
		}
		if !sameAsDecoded(v, x) {
			t.Fatalf("ParseJSON(%q) =\n%s\nwant what encoding/json decodes: %#v", src, dumpTree(v), x)
		}
	})
}

// tokenParseJSON is the reader ParseJSON replaced, built on
// encoding/json's Decoder.Token: the reference that the tests and
// FuzzParseJSON compare ParseJSON with (trees and diagnostics alike).
func tokenParseJSON(name string, src []byte) (*Value, source.Diagnostics) {
	p := &tokenParser{src: src, dec: json.NewDecoder(bytes.NewReader(src)), cur: jsonCursor{src: src, file: name, line: 1, col: 1}}
	p.dec.UseNumber()
	v, err := p.value()
	if err == nil {
		// Anything but the end of input after the top-level value is an error.
		if _, terr := p.dec.Token(); !errors.Is(terr, io.EOF) {
			err = errTokenSyntax
		}
	}
	var ds source.Diagnostics
	if err != nil {
		if d, ok := err.(source.Diagnostic); ok {
			ds.Append(d)
		} else {
			ds.Append(p.syntaxError(name))
		}
		return nil, ds
	}
	if v.Kind != KMap {
		ds.Add(v.Pos, source.ESchema, "the top level must be an object, found %s", v.Kind)
	}
	return v, ds
}

// errTokenSyntax marks a syntax error whose details syntaxError finds.
var errTokenSyntax = errors.New("json syntax error")

// tokenParser builds a Value tree from the decoder's tokens.
type tokenParser struct {
	src   []byte
	dec   *json.Decoder
	cur   jsonCursor
	depth int // open arrays and objects
}

// next reads one token and returns it with the offset of its first byte:
// between tokens there are only blanks, commas and colons, so the token
// starts at the first other byte after the previous token's end.
func (p *tokenParser) next() (json.Token, int, error) {
	off := int(p.dec.InputOffset())
	tok, err := p.dec.Token()
	if err != nil {
		return nil, 0, errTokenSyntax
	}
	for off < len(p.src) {
		switch p.src[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
			continue
		}
		break
	}
	return tok, off, nil
}

// value reads one complete value.
func (p *tokenParser) value() (*Value, error) {
	tok, off, err := p.next()
	if err != nil {
		return nil, err
	}
	return p.valueFrom(tok, off)
}

func (p *tokenParser) valueFrom(tok json.Token, off int) (*Value, error) {
	if _, ok := tok.(string); ok {
		// Like YAML's quoted scalars, a string is positioned at its first
		// content character, so positions inside it (${...}, actions) can
		// be shifted from it.
		return &Value{Kind: KString, Pos: p.cur.pos(off + 1), Str: tok.(string)}, nil
	}
	pos := p.cur.pos(off)
	if d, ok := tok.(json.Delim); ok && (d == '[' || d == '{') {
		p.depth++
		defer func() { p.depth-- }()
		if p.depth > maxJSONDepth {
			return nil, source.New(pos, source.EParse, "document nests deeper than %d levels", maxJSONDepth)
		}
	}
	switch t := tok.(type) {
	case nil:
		return &Value{Kind: KNull, Pos: pos}, nil
	case bool:
		s := "false"
		if t {
			s = "true"
		}
		return &Value{Kind: KBool, Pos: pos, Bool: t, Str: s}, nil
	case json.Number:
		f, _ := t.Float64() // out of range: ±Inf; the text is kept either way
		return &Value{Kind: KNumber, Pos: pos, Num: f, Str: string(t)}, nil
	case json.Delim:
		switch t {
		case '[':
			v := &Value{Kind: KList, Pos: pos}
			for p.dec.More() {
				e, err := p.value()
				if err != nil {
					return nil, err
				}
				v.List = append(v.List, e)
			}
			if _, _, err := p.next(); err != nil { // ']'
				return nil, err
			}
			return v, nil
		case '{':
			return p.object(pos)
		}
	}
	return nil, errTokenSyntax
}

// object reads the entries of an object after its '{'.
func (p *tokenParser) object(pos source.Pos) (*Value, error) {
	v := &Value{Kind: KMap, Pos: pos}
	var seen map[string]bool
	for p.dec.More() {
		tok, off, err := p.next()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errTokenSyntax
		}
		kpos := p.cur.pos(off)
		// Small objects are searched; large ones get a set.
		dup := false
		if len(v.Map) < 16 {
			for _, e := range v.Map {
				if e.Key == key {
					dup = true
					break
				}
			}
		} else {
			if seen == nil {
				seen = make(map[string]bool, 2*len(v.Map))
				for _, e := range v.Map {
					seen[e.Key] = true
				}
			}
			dup = seen[key]
			seen[key] = true
		}
		if dup {
			return nil, source.New(kpos, source.EParse, "duplicate key '%s'", key)
		}
		val, err := p.value()
		if err != nil {
			return nil, err
		}
		v.Map = append(v.Map, MapEntry{Key: key, KeyPos: kpos, Val: val})
	}
	if _, _, err := p.next(); err != nil { // '}'
		return nil, err
	}
	return v, nil
}

// syntaxError locates the first syntax error. The decoder's own offsets
// are relative to its buffer, so the text is checked again as a whole,
// which gives the exact offset.
func (p *tokenParser) syntaxError(name string) source.Diagnostic {
	f := source.NewFile(name, p.src)
	var raw json.RawMessage
	err := json.Unmarshal(p.src, &raw)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off := int(se.Offset)
		msg := se.Error()
		if strings.HasPrefix(msg, "unexpected end") {
			return source.New(f.Pos(len(p.src)), source.EParse, "%s", msg)
		}
		return source.New(f.Pos(off-1), source.EParse, "%s", msg)
	}
	if err != nil {
		return source.New(f.Pos(0), source.EParse, "%s", err.Error())
	}
	return source.New(f.Pos(len(p.src)), source.EParse, "invalid JSON")
}

// jsonCursor maps increasing byte offsets to positions in time linear in
// the text, for tokenParseJSON.
type jsonCursor struct {
	src       []byte
	file      string
	off       int // offset reached
	line, col int // position of off
}

// pos returns the position of off, which must not lie before the last
// offset asked for.
func (c *jsonCursor) pos(off int) source.Pos {
	if off > len(c.src) {
		off = len(c.src)
	}
	if off < c.off {
		return source.NewFile(c.file, c.src).Pos(off)
	}
	for c.off < off {
		b := c.src[c.off]
		switch {
		case b == '\n':
			c.line++
			c.col = 1
			c.off++
		case b < utf8.RuneSelf:
			c.col++
			c.off++
		default:
			_, w := utf8.DecodeRune(c.src[c.off:])
			c.col++
			c.off += w
		}
	}
	return source.Pos{File: c.file, Line: c.line, Col: c.col}
}
