package reply

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"smith/lang"
)

func TestNewSchemaSetErrors(t *testing.T) {
	t.Parallel()
	// A schema file that exists: only the refusal to load it can fail the
	// reference to it.
	ext := filepath.Join(t.TempDir(), "ext.json")
	if err := os.WriteFile(ext, []byte(`{"type": "string"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		defs []SchemaDoc
		want string
	}{
		{"bad JSON", []SchemaDoc{{Name: "Bad", JSON: `{"type": `}}, "schema 'Bad': read JSON"},
		{"bad keyword value", []SchemaDoc{{Name: "Bad", JSON: `{"type": 5}`}}, "schema 'Bad': compile"},
		{"external ref refused", []SchemaDoc{{Name: "Ext", JSON: `{"$ref": "file://` + filepath.ToSlash(ext) + `"}`}}, "is not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewSchemaSet(tt.defs)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewSchemaSet(%v) = %v, want an error containing %q", tt.defs, err, tt.want)
			}
		})
	}
}

func TestSchemaSetLookup(t *testing.T) {
	t.Parallel()
	set, err := NewSchemaSet([]SchemaDoc{{Name: "FileList", JSON: " {\"type\": \"array\"} \n"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(set.Names(), ","), "CodeAndExplanation,CodeOnly,FileList"; got != want {
		t.Errorf("Names() = %s, want %s", got, want)
	}
	tests := []struct {
		name     string
		has      bool
		contains []string
	}{
		{"CodeAndExplanation", true, []string{`"code"`, `"explanation"`, `"minLength": 1`, `"required"`, `draft/2020-12`}},
		{"CodeOnly", true, []string{`"type": "string"`, `"minLength": 1`}},
		{"FileList", true, []string{`{"type": "array"}`}},
		{"Missing", false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := set.Has(tt.name); got != tt.has {
				t.Errorf("Has(%q) = %v, want %v", tt.name, got, tt.has)
			}
			text, ok := set.Schema(tt.name)
			if ok != tt.has {
				t.Errorf("Schema(%q) ok = %v, want %v", tt.name, ok, tt.has)
			}
			for _, c := range tt.contains {
				if !strings.Contains(text, c) {
					t.Errorf("Schema(%q) = %s, want it to contain %s", tt.name, text, c)
				}
			}
		})
	}
}

func TestSchemaSetValidate(t *testing.T) {
	t.Parallel()
	set, err := NewSchemaSet([]SchemaDoc{
		{Name: "Slug", JSON: `{"type": "string", "pattern": "^[a-z-]+$"}`},
		{Name: "Count", JSON: `{"type": "integer", "minimum": 1}`},
		{Name: "Pair", JSON: `{"type": "object", "properties": {"a/b": {"type": "string"}, "n": {"type": "integer"}}, "required": ["a/b", "n"], "additionalProperties": false}`},
		{Name: "Many", JSON: `{"type": "array", "items": {"type": "integer"}}`},
		{Name: "CodeOnly", JSON: `{"type": "object", "required": ["x"]}`},
	})
	if err != nil {
		t.Fatal(err)
	}
	many := "[" + strings.Repeat(`"x", `, 11) + `"x"]`
	tests := []struct {
		name, schema, reply, cleaned, problem string
		ok                                    bool
	}{
		{"string schema takes the code", "Slug", "Sure!\n```\nmy-slug\n```", "my-slug", "", true},
		{"string schema pattern", "Slug", "Not_A_Slug", "Not_A_Slug", "(root): 'Not_A_Slug' does not match pattern '^[a-z-]+$'", false},
		{"scalar JSON", "Count", "Here is the number:\n3", "3", "", true},
		{"scalar JSON too small", "Count", "0", "0", "(root): minimum: got 0, want 1", false},
		{"no value", "Count", "none", "", "no JSON value found in the reply", false},
		{"pointer escaping and sorted problems", "Pair", `{"a/b": 1, "n": "x", "extra": true}`, `{"a/b":1,"extra":true,"n":"x"}`,
			"(root): additional properties 'extra' not allowed; /a~1b: got number, want string; /n: got string, want integer", false},
		{"two missing", "Pair", `{}`, `{}`, "/a~1b: missing required property 'a/b'; /n: missing required property 'n'", false},
		{"capped problems", "Many", many, "", "and 2 more", false},
		{"document schema replaces a built-in", "CodeOnly", `{"x": 1}`, `{"x":1}`, "", true},
		{"unknown schema", "CodeAndExplantion", "{}", "", "unknown validation schema 'CodeAndExplantion' (did you mean 'CodeAndExplanation'?)", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cleaned, problem, ok := set.Validate(tt.schema, tt.reply)
			if ok != tt.ok || (tt.cleaned != "" && cleaned != tt.cleaned) {
				t.Errorf("Validate(%s, %q) = %q, %q, %v, want %q, ok %v", tt.schema, tt.reply, cleaned, problem, ok, tt.cleaned, tt.ok)
			}
			switch {
			case tt.ok && problem != "":
				t.Errorf("Validate(%s, %q) problem = %q, want none", tt.schema, tt.reply, problem)
			case !tt.ok && (!strings.HasPrefix(problem, ValidationFailPrefix) || !strings.Contains(problem, tt.problem)):
				t.Errorf("Validate(%s, %q) problem = %q, want %q after the prefix", tt.schema, tt.reply, problem, tt.problem)
			}
		})
	}
}

func TestValidateIsDeterministic(t *testing.T) {
	t.Parallel()
	set, err := NewSchemaSet(nil)
	if err != nil {
		t.Fatal(err)
	}
	reply := `{"code": 1, "explanation": 2, "z": {"b": 1, "a": 2}}`
	first, firstProblem, _ := set.Validate(lang.SchemaCodeAndExplanation, reply)
	for range 20 {
		got, problem, _ := set.Validate(lang.SchemaCodeAndExplanation, reply)
		if got != first || problem != firstProblem {
			t.Fatalf("Validate(%q) = %q, %q, then %q, %q", reply, first, firstProblem, got, problem)
		}
	}
	if want := `{"code":1,"explanation":2,"z":{"a":2,"b":1}}`; first != want {
		t.Errorf("Validate(%q) cleaned = %q, want %q", reply, first, want)
	}
}

func ExampleSchemaSet_Validate() {
	set, err := NewSchemaSet([]SchemaDoc{{Name: "FileList", JSON: `{"type": "array", "items": {"type": "string"}}`}})
	if err != nil {
		panic(err)
	}
	fmt.Println(set.Validate("CodeAndExplanation", "Sure!\n```json\n{\"code\": \"x++\", \"explanation\": \"\"}\n```"))
	fmt.Println(set.Validate("FileList", "New files: [\"a.go\", \"b.go\"]"))
	// Output:
	// {"code":"x++","explanation":""} Output failed validation. Fix this: /explanation: minLength: got 0, want 1 false
	// ["a.go","b.go"]  true
}

// TestBuiltinSchemaCatalog: every built-in schema name has its text.
func TestBuiltinSchemaCatalog(t *testing.T) {
	for _, name := range lang.BuiltinSchemas {
		if _, ok := builtinSchemaText(name); !ok {
			t.Errorf("built-in schema %q of lang.BuiltinSchemas has no text in reply", name)
		}
	}
}
