package manifest

import (
	"fmt"
	"strings"
	"testing"

	"smith/source"
)

// lookupPath follows a dotted path with [n] indexes ("context.list[1]")
// through a tree.
func lookupPath(v *Value, path string) *Value {
	for _, part := range strings.Split(path, ".") {
		key, rest, _ := strings.Cut(part, "[")
		if key != "" {
			v = v.Get(key)
		}
		for rest != "" && v != nil {
			var i int
			fmt.Sscanf(rest, "%d]", &i)
			if v.Kind != KList || i >= len(v.List) {
				return nil
			}
			v = v.List[i]
			_, rest, _ = strings.Cut(rest, "[")
		}
		if v == nil {
			return nil
		}
	}
	return v
}

func showDiags(ds source.Diagnostics) string {
	var lines []string
	for _, d := range ds {
		lines = append(lines, d.Format())
	}
	return strings.Join(lines, "\n")
}

const positionsYAML = `version: "1.0"
name: démo
context:
  ünï: 'x'
  plain: hello world
  "quoted key": "çé ${context.x}"
  lit: |
    line1
    ${context.x}
  fold: >-

      folded
  list: [a, "b", 3, true, null]
  anchored: &a "anch"
  tagged: !!str 12
  nested:
    - deep: {k: v}
steps: []
`

func TestParseYAMLPositions(t *testing.T) {
	t.Parallel()
	root, ds := ParseYAML("p.yaml", []byte(positionsYAML))
	if len(ds) > 0 {
		t.Fatalf("ParseYAML diagnostics:\n%s", showDiags(ds))
	}
	tests := []struct {
		name string
		path string
		kind Kind
		str  string
		pos  string
	}{
		{"double quoted", "version", KString, "1.0", "p.yaml:1:11"},
		{"plain after multi-byte", "name", KString, "démo", "p.yaml:2:7"},
		{"single quoted after multi-byte key", "context.ünï", KString, "x", "p.yaml:4:9"},
		{"plain", "context.plain", KString, "hello world", "p.yaml:5:10"},
		{"quoted multi-byte", "context.quoted key", KString, "çé ${context.x}", "p.yaml:6:18"},
		{"literal block", "context.lit", KString, "line1\n${context.x}\n", "p.yaml:8:5"},
		{"folded block with leading blank line", "context.fold", KString, "\nfolded", "p.yaml:11:7"},
		{"flow list", "context.list", KList, "", "p.yaml:13:9"},
		{"flow plain", "context.list[0]", KString, "a", "p.yaml:13:10"},
		{"flow quoted", "context.list[1]", KString, "b", "p.yaml:13:14"},
		{"number", "context.list[2]", KNumber, "3", "p.yaml:13:18"},
		{"bool", "context.list[3]", KBool, "true", "p.yaml:13:21"},
		{"null", "context.list[4]", KNull, "null", "p.yaml:13:27"},
		{"anchored quoted", "context.anchored", KString, "anch", "p.yaml:14:17"},
		{"tagged", "context.tagged", KString, "12", "p.yaml:15:17"},
		{"nested map in list", "context.nested[0].deep.k", KString, "v", "p.yaml:17:17"},
		{"empty list", "steps", KList, "", "p.yaml:18:8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := lookupPath(root, tt.path)
			if v == nil {
				t.Fatalf("lookup(%q) = nil", tt.path)
			}
			if v.Kind != tt.kind || (tt.str != "" && v.Str != tt.str) || v.Pos.String() != tt.pos {
				t.Errorf("lookup(%q) = %v %q at %s, want %v %q at %s", tt.path, v.Kind, v.Str, v.Pos, tt.kind, tt.str, tt.pos)
			}
		})
	}
	// Keys are positioned at their first character.
	ctx := root.Get("context")
	if got := ctx.Map[0].KeyPos.String(); got != "p.yaml:4:3" {
		t.Errorf("key 'ünï' at %s, want p.yaml:4:3", got)
	}
}

func TestParseYAMLScalars(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want string // the value of key v as canonical JSON
	}{
		{"int", "v: 12", "12"},
		{"hex int", "v: 0x1F", "31"},
		{"float", "v: 1.5", "1.5"},
		{"exponent", "v: 1e3", "1e3"},
		{"infinity stays a string", "v: .inf", `".inf"`},
		{"bool", "v: false", "false"},
		{"null", "v: ~", "null"},
		{"timestamp stays a string", "v: 2001-12-14", `"2001-12-14"`},
		{"quoted number is a string", `v: "12"`, `"12"`},
		{"merge key", "a: &b {x: 1, y: 2}\nv: {<<: *b, y: 3, z: 4}", `{"x":1,"y":3,"z":4}`},
		{"merge list", "a: &a {x: 1}\nb: &b {x: 2, w: 0}\nv: {<<: [*a, *b]}", `{"x":1,"w":0}`},
		{"alias", "a: &l [1, 2]\nv: *l", "[1,2]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root, ds := ParseYAML("s.yaml", []byte(tt.src))
			if len(ds) > 0 {
				t.Fatalf("ParseYAML(%q) diagnostics:\n%s", tt.src, showDiags(ds))
			}
			if got := string(root.Get("v").AppendJSON(nil)); got != tt.want {
				t.Errorf("ParseYAML(%q).v = %s, want %s", tt.src, got, tt.want)
			}
		})
	}
}

// billionLaughs is the classic alias bomb: 10^9 nodes from a few lines.
func billionLaughs() string {
	var b strings.Builder
	b.WriteString("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [", i, i)
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// deepAliases nests aliases n deep while staying tiny.
func deepAliases(n int) string {
	var b strings.Builder
	b.WriteString("a0: &a0 [x]\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [*a%d]\n", i, i, i-1)
	}
	return b.String()
}

func TestParseYAMLErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want string
	}{
		{"billion laughs", billionLaughs(), "e.yaml:1:1: error: E_PARSE: document expands aliases too far (billion laughs?)"},
		{"deep alias nesting", deepAliases(120), "e.yaml:1:1: error: E_PARSE: document expands aliases too far (billion laughs?)"},
		{"duplicate key", "a: 1\nb:\n  c: 1\n  c: 2\n", "e.yaml:4:3: error: E_PARSE: duplicate key 'c'"},
		{"duplicate top key", "a: 1\na: 2\n", "e.yaml:2:1: error: E_PARSE: duplicate key 'a'"},
		{"syntax error on line 2", "a: 1\nb: c: d\n", "e.yaml:2:1: error: E_PARSE: a ': ' inside a value: quote the value (\"...\") when it holds ': ', or put the entry on a line of its own (the YAML parser: mapping values are not allowed in this context)"},
		{"syntax error on line 1", "a: b: c\n", "e.yaml:1:1: error: E_PARSE: a ': ' inside a value: quote the value (\"...\") when it holds ': ', or put the entry on a line of its own (the YAML parser: mapping values are not allowed in this context)"},
		{"unterminated quote", "a: 1\nb: \"x\n", "e.yaml:2:4: error: E_PARSE: unclosed quote: the string that starts with \" here has no closing \" on its line (the YAML parser: found unexpected end of stream)"},
		{"unclosed quote in a list", "version: \"1.0\"\nsteps:\n  - name: A\n    command: [\"echo\", \"hi]\n    on: {success: {end: true}}\n", "e.yaml:4:23: error: E_PARSE: unclosed quote: the string that starts with \" here has no closing \" on its line (the YAML parser: found unexpected end of stream)"},
		{"unclosed list", "version: \"1.0\"\nsteps:\n  - name: A\n    command: [\"echo\", \"hi\"\n    on: {success: {end: true}}\n", "e.yaml:4:14: error: E_PARSE: unclosed list: the [ here has no closing ] before line 5 (the YAML parser: did not find expected ',' or ']')"},
		{"unclosed object at the end", "a: 1\nb: {c: 1\n", "e.yaml:2:4: error: E_PARSE: unclosed object: the { here has no closing } before the end of the document (the YAML parser: did not find expected ',' or '}')"},
		{"indented too far", "version: \"1.0\"\nname: x\nsteps:\n  - name: A\n    command: [\"true\"]\n     on: {success: {end: true}}\n", "e.yaml:6:6: error: E_PARSE: bad indentation: this line is indented 5 spaces, more than 'command: [\"true\"]' on line 5 (4 spaces), whose value is already on its line; line it up with its siblings (the YAML parser: did not find expected key)"},
		{"indented too little", "steps:\n  - name: A\n    command: [\"true\"]\n   on: {}\n", "e.yaml:4:4: error: E_PARSE: bad indentation: this line is indented 3 spaces, which lines up with no entry above it; indent it as the entries it belongs with (the YAML parser: did not find expected '-' indicator)"},
		{"tab", "steps:\n  - name: A\n\tcommand: [x]\n", "e.yaml:3:1: error: E_PARSE: a tab in the indentation: YAML indents with spaces only; replace the tab with spaces (the YAML parser: found a tab character that violates indentation)"},
		// The library gives up at the start of the enclosing list (line 3 or
		// 4): the mistake is on line 6.
		{"key at the list's column", "version: \"1.0\"\nname: x\nsteps:\n  - name: A\n    command: [\"true\"]\n  on: x\n", "e.yaml:6:3: error: E_PARSE: this line lines up with the items ('- ') of the list above it but starts none: indent it as the keys of the item it belongs to, or start a new item with '- ' (the YAML parser: did not find expected '-' indicator)"},
		{"list item among keys", "version: \"1.0\"\nname: x\nsteps:\n  - name: A\n    command: [\"true\"]\n    - name: B\n", "e.yaml:6:5: error: E_PARSE: a list item ('- ') among the keys of an object: line it up with the items of its list, or give it a key of its own whose value is the list (the YAML parser: did not find expected key)"},
		{"text after a closing quote", "version: \"1.0\"\nname: x\nsteps:\n  - name: A\n    command: [\"true\"]\n    prompt: \"a\" b\n", "e.yaml:6:17: error: E_PARSE: text after the closing quote: a quoted value ends at its quote; put the whole value inside the quotes (the YAML parser: did not find expected key)"},
		{"unknown anchor below", "version: \"1.0\"\nname: x\nsteps:\n  - name: A\n    command: [\"true\"]\n    prompt: x\n    env: *b\n", "e.yaml:7:5: error: E_PARSE: an alias (*name) names no anchor (&name) defined above it (the YAML parser: unknown anchor 'b' referenced)"},
		// A list that spans lines above the mistake: its cut prefixes do not
		// parse, the mistake's line is still found.
		{"mistake below a list that spans lines", "version: \"1.0\"\nname: x\nitems: [a,\n  b,\n  c]\nsteps:\n  - name: A\n    command: [\"true\"]\n    - name: B\nlast: 1\n", "e.yaml:9:5: error: E_PARSE: a list item ('- ') among the keys of an object: line it up with the items of its list, or give it a key of its own whose value is the list (the YAML parser: did not find expected key)"},
		{"two documents", "a: 1\n---\nb: 2\n", "e.yaml:2:1: error: E_PARSE: only one document per file is allowed, found a second one"},
		{"unknown anchor", "a: *nope\n", "e.yaml:1:1: error: E_PARSE: an alias (*name) names no anchor (&name) defined above it (the YAML parser: unknown anchor 'nope' referenced)"},
		{"complex key", "? [a]\n: 1\n", "e.yaml:1:3: error: E_PARSE: a mapping key must be a scalar, found array"},
		{"bad merge", "a: {<<: 1}\n", "e.yaml:1:9: error: E_PARSE: a merge (<<) value must be a mapping or a list of mappings"},
		{"empty", "# nothing\n", "e.yaml:1:1: error: E_SCHEMA: document is empty, expected an object"},
		{"list at top", "- a\n- b\n", "e.yaml:1:1: error: E_SCHEMA: the top level must be an object, found array"},
		{"scalar at top", "hello\n", "e.yaml:1:1: error: E_SCHEMA: the top level must be an object, found string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, ds := ParseYAML("e.yaml", []byte(tt.src))
			if got := showDiags(ds); got != tt.want {
				t.Errorf("ParseYAML(%q) =\n%s\nwant\n%s", tt.name, got, tt.want)
			}
		})
	}
}

func FuzzParseYAML(f *testing.F) {
	for _, s := range []string{
		positionsYAML, billionLaughs(), deepAliases(5), "a: &x [*x]\n", "a: {<<: [*b]}\n",
		"a: |\n  x\n", "? [a]\n: 1\n", "- 1\n", "a: !!binary aGk=\n", "a: 1\n---\nb: 2\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		v, ds := ParseYAML("f.yaml", src)
		if v == nil && !ds.HasErrors() {
			t.Fatalf("ParseYAML(%q) = nil without an error", src)
		}
		if v != nil {
			_ = v.AppendJSON(nil)
		}
	})
}
