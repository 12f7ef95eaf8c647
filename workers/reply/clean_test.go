package reply

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"smith/lang"
)

// corpusSchemas are the document schemas the reply corpus uses besides the
// built-ins.
var corpusSchemas = []SchemaDoc{
	{Name: "FileList", JSON: `{"type": "array", "items": {"type": "string"}}`},
	{Name: "Plan", JSON: `{"type": "object", "properties": {"title": {"type": "string"}, "steps": {"type": "array", "items": {"type": "string"}, "minItems": 1}}, "required": ["title", "steps"]}`},
}

// corpusSchema returns the schema a corpus reply is validated against, from
// its name's prefix.
func corpusSchema(stem string) string {
	switch {
	case strings.HasPrefix(stem, "cae_"):
		return lang.SchemaCodeAndExplanation
	case strings.HasPrefix(stem, "codeonly_"):
		return lang.SchemaCodeOnly
	case strings.HasPrefix(stem, "filelist_"):
		return "FileList"
	case strings.HasPrefix(stem, "plan_"):
		return "Plan"
	}
	return ""
}

// A corpusWant is the expected outcome of one corpus reply (NAME.want).
type corpusWant struct {
	Signal  string `json:"signal"`
	OK      bool   `json:"ok"`
	Cleaned string `json:"cleaned"`
	Problem string `json:"problem"`
}

// TestReplyCorpus validates every testdata/replies/NAME.txt against the
// schema its name's prefix selects (cae_: CodeAndExplanation, codeonly_:
// CodeOnly, filelist_: FileList, plan_: Plan) after taking off a trailing
// signal line, and compares the outcome with NAME.want.
func TestReplyCorpus(t *testing.T) {
	t.Parallel()
	set, err := NewSchemaSet(corpusSchemas)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join("testdata", "replies", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 30 {
		t.Fatalf("found %d corpus replies, want at least 30", len(files))
	}
	for _, file := range files {
		stem := strings.TrimSuffix(filepath.Base(file), ".txt")
		t.Run(stem, func(t *testing.T) {
			t.Parallel()
			reply, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			wantText, err := os.ReadFile(strings.TrimSuffix(file, ".txt") + ".want")
			if err != nil {
				t.Fatal(err)
			}
			var want corpusWant
			if err := json.Unmarshal(wantText, &want); err != nil {
				t.Fatalf("%s.want: %v", stem, err)
			}
			schema := corpusSchema(stem)
			if schema == "" {
				t.Fatalf("corpus file %s has no schema prefix", stem)
			}
			text := string(reply)
			signal, rest, ok := LastLineSignal(text)
			if ok {
				text = rest
			}
			if signal != want.Signal {
				t.Errorf("LastLineSignal(%s) = %q, want %q", stem, signal, want.Signal)
			}
			cleaned, problem, valid := set.Validate(schema, text)
			got := corpusWant{Signal: signal, OK: valid, Cleaned: cleaned, Problem: problem}
			if got != want {
				t.Errorf("Validate(%s, %s) = ok %v, cleaned %q, problem %q\nwant ok %v, cleaned %q, problem %q",
					schema, stem, got.OK, got.Cleaned, got.Problem, want.OK, want.Cleaned, want.Problem)
			}
		})
	}
}

func TestClean(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"plain text kept", "x := 1\ny := 2\n", "x := 1\ny := 2"},
		{"whitespace trimmed", "\n\n  {\"a\": 1}  \n\n", "  {\"a\": 1}"},
		{"sure preamble", "Sure! Here's the code:\n\nfmt.Println(1)", "fmt.Println(1)"},
		{"typographic apostrophe", "Here\u2019s the answer:\n42", "42"},
		{"of course two lines", "Of course.\nHere is the JSON:\n{\"a\": 1}", "{\"a\": 1}"},
		{"one fenced block unwrapped", "```json\n{\"a\": 1}\n```", "{\"a\": 1}"},
		{"preamble and fence", "Certainly! Here is the file:\n\n```go\npackage x\n```\n", "package x"},
		{"postscript", "```\ncode\n```\n\nLet me know if you need anything else!", "code"},
		{"several postscripts", "answer\n\nHope this helps!\nHappy coding!", "answer"},
		{"two blocks kept", "```go\na\n```\ntext\n```go\nb\n```", "```go\na\n```\ntext\n```go\nb\n```"},
		{"block with trailing prose kept", "```go\na\n```\nThis prints a.", "```go\na\n```\nThis prints a."},
		{"colon line before json", "The updated configuration is:\n{\"x\": true}", "{\"x\": true}"},
		{"line carrying json kept", "Sure, here it is: {\"x\": 1}", "Sure, here it is: {\"x\": 1}"},
		{"sure without punctuation kept", "surely_valid := true", "surely_valid := true"},
		{"heading kept", "# Title\n\nBody", "# Title\n\nBody"},
		{"signal line kept", "done\nSIGNAL:SUCCESS", "done\nSIGNAL:SUCCESS"},
		{"crlf", "Sure!\r\n```\r\nx\r\n```\r\n", "x"},
		{"empty", "", ""},
		{"only chatter", "Sure!\nLet me know if this helps.", ""},
		{"markdown wrapper with inner fences", "```markdown\n# X\n```go\ny\n```\n```", "# X\n```go\ny\n```"},
		{"go wrapper with two blocks kept", "```go\na\n```\n```go\nb\n```", "```go\na\n```\n```go\nb\n```"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Clean(tt.in); got != tt.want {
				t.Errorf("Clean(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestExtractJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
		ok             bool
	}{
		{"object", `{"a": 1}`, `{"a": 1}`, true},
		{"array", `["a", "b"]`, `["a", "b"]`, true},
		{"in prose", `The value is {"a": [1, 2]} here.`, `{"a": [1, 2]}`, true},
		{"braces in strings", `x {"s": "}{]["} y`, `{"s": "}{]["}`, true},
		{"escaped quote in string", `{"s": "a\"}b"}`, `{"s": "a\"}b"}`, true},
		{"escaped backslash before quote", `{"s": "a\\"} tail`, `{"s": "a\\"}`, true},
		{"invalid bracket skipped", `see [the docs] and {"ok": true}`, `{"ok": true}`, true},
		{"mismatched skipped", `{ ] {"b": 2}`, `{"b": 2}`, true},
		{"json fence preferred", "{\"first\": 1}\n```json\n{\"second\": 2}\n```", `{"second": 2}`, true},
		{"go fence ignored for preference", "```go\nm := map[string]int{}\n```\n```json\n{\"x\": 1}\n```", `{"x": 1}`, true},
		{"invalid json fence falls back", "```json\n{bad}\n```\n{\"good\": 1}", `{"good": 1}`, true},
		{"nested", `{"a": {"b": [{"c": {}}]}}`, `{"a": {"b": [{"c": {}}]}}`, true},
		{"first of two", `{"a": 1} {"b": 2}`, `{"a": 1}`, true},
		{"none", `no json at all`, "", false},
		{"unbalanced", `{"a": [1, 2}`, "", false},
		{"raw newline in string", "{\"a\": \"x\ny\"}", "", false},
		{"single quotes", `{'a': 1}`, "", false},
		{"scalar only", `42`, "", false},
		{"empty", ``, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := ExtractJSON(tt.in)
			if got != tt.want || ok != tt.ok {
				t.Errorf("ExtractJSON(%q) = %q, %v, want %q, %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestExtractCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"fenced", "Here:\n```go\npackage main\n```\nBye", "package main"},
		{"first block", "```py\na = 1\n```\n```py\nb = 2\n```", "a = 1"},
		{"no fence", "\n\n  indented\nline\n\n", "  indented\nline"},
		{"unclosed fence", "```\nx\ny", "x\ny"},
		{"longer fence holds shorter", "````md\n```go\nx\n```\n````", "```go\nx\n```"},
		{"tilde", "~~~\nt\n~~~", "t"},
		{"inline triple backticks are not a fence", "```x``` y", "```x``` y"},
		{"empty fence", "```go\n```", ""},
		{"indented fence", "  ```go\n  code\n  ```", "  code"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := ExtractCode(tt.in); got != tt.want {
				t.Errorf("ExtractCode(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestCleanPreamble(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"chatty then heading", "Of course, here is the documentation:\n\n# API\n\nText", "# API\n\nText"},
		{"h2", "Sure.\n## Usage\nRun it.", "## Usage\nRun it."},
		{"front matter", "Here you go!\n---\ntitle: x\n---\n# Doc", "---\ntitle: x\n---\n# Doc"},
		{"no heading", "\nJust text.\n", "Just text."},
		{"heading first", "# Title", "# Title"},
		{"hash inside a line does not count", "Use C# here.\n# Real", "# Real"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := CleanPreamble(tt.in); got != tt.want {
				t.Errorf("CleanPreamble(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestLastLineSignal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, signal, rest string
		ok                     bool
	}{
		{"plain", "text\nSIGNAL:NEEDS_CLARIFICATION", "SIGNAL:NEEDS_CLARIFICATION", "text", true},
		{"trailing blank lines", "a\n\nSIGNAL:DONE\n\n", "SIGNAL:DONE", "a", true},
		{"bold", "a\n**SIGNAL:X_1**", "SIGNAL:X_1", "a", true},
		{"backticks", "a\n`SIGNAL:Y`", "SIGNAL:Y", "a", true},
		{"only the signal", "SIGNAL:SUCCESS", "SIGNAL:SUCCESS", "", true},
		{"indented", "a\n   SIGNAL:Z  ", "SIGNAL:Z", "a", true},
		{"lower case", "a\nSIGNAL:done", "", "a\nSIGNAL:done", false},
		{"not alone", "a\nsend SIGNAL:DONE", "", "a\nsend SIGNAL:DONE", false},
		{"not last", "SIGNAL:DONE\nmore", "", "SIGNAL:DONE\nmore", false},
		{"empty name", "a\nSIGNAL:", "", "a\nSIGNAL:", false},
		{"empty", "", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			signal, rest, ok := LastLineSignal(tt.in)
			if signal != tt.signal || rest != tt.rest || ok != tt.ok {
				t.Errorf("LastLineSignal(%q) = %q, %q, %v, want %q, %q, %v", tt.in, signal, rest, ok, tt.signal, tt.rest, tt.ok)
			}
		})
	}
}

func FuzzExtractJSON(f *testing.F) {
	for _, s := range []string{
		`{"a": 1}`, `x [1, {"b": "}"}] y`, "```json\n{\"a\": [\"\\\"\"]}\n```", `{"a": "\\"}`,
		`[[[[`, `]]]`, `{"a": {"b": [1, 2, {"c": null}]}}`, "\"{\" {\"k\": \"v\"}", `{'a': 1}`, "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := ExtractJSON(s)
		if !ok {
			if got != "" {
				t.Errorf("ExtractJSON(%q) = %q, false, want \"\"", s, got)
			}
			return
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("ExtractJSON(%q) = %q, which is not valid JSON", s, got)
		}
		if !strings.Contains(s, got) {
			t.Errorf("ExtractJSON(%q) = %q, which is not part of the input", s, got)
		}
		if got[0] != '{' && got[0] != '[' {
			t.Errorf("ExtractJSON(%q) = %q, want an object or array", s, got)
		}
	})
}

func FuzzClean(f *testing.F) {
	for _, s := range []string{
		"Sure! Here's the code:\n```go\nx\n```\nLet me know!", "```", "~~~json\n{}\n~~~", "\r\n\r\n",
		"Of course.\n\n# Title", "```x```", "SIGNAL:DONE", "````\n```\n````", "Here\u2019s it:\n[1]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Clean(s)
		if len(got) > len(s) {
			t.Errorf("Clean(%q) = %q, longer than its input", s, got)
		}
		if strings.TrimRightFunc(got, unicode.IsSpace) != got {
			t.Errorf("Clean(%q) = %q, with trailing white space", s, got)
		}
		_ = ExtractCode(s)
		_ = CleanPreamble(s)
		_, _, _ = LastLineSignal(s)
	})
}

func ExampleClean() {
	fmt.Println(Clean("Sure! Here's the code:\n\n```go\nfmt.Println(42)\n```\n\nHope this helps!"))
	// Output: fmt.Println(42)
}

func ExampleExtractJSON() {
	v, ok := ExtractJSON(`As noted in [the docs], the answer is {"msg": "a } inside"} -- done.`)
	fmt.Println(v, ok)
	// Output: {"msg": "a } inside"} true
}

func ExampleLastLineSignal() {
	signal, rest, ok := LastLineSignal("Which database should I use?\n\nSIGNAL:NEEDS_CLARIFICATION\n")
	fmt.Printf("%s %q %v\n", signal, rest, ok)
	// Output: SIGNAL:NEEDS_CLARIFICATION "Which database should I use?" true
}

// BenchmarkExtractJSONAdversarial measures the bound on text full of
// brackets that never form a value.
func BenchmarkExtractJSONAdversarial(b *testing.B) {
	inputs := map[string]string{
		"open":   strings.Repeat("[", 1<<16),
		"closed": strings.Repeat("{[", 1<<15) + strings.Repeat("]}", 1<<15),
		"prose":  strings.Repeat(`see [note] and {x} "quote `, 1<<12) + `{"a": 1}`,
	}
	for _, name := range []string{"open", "closed", "prose"} {
		s := inputs[name]
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				ExtractJSON(s)
			}
		})
	}
}
