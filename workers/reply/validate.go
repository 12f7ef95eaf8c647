package reply

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	jsv "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"smith/lang"
	"smith/source"
)

// ValidationFailPrefix starts every validation problem (CONTRACT.md
// section 9); the text after it says what failed, with its JSON path.
const ValidationFailPrefix = "Output failed validation. Fix this: "

// schemaBaseURL is the base of the URLs the schemas are compiled under; it
// is never fetched.
const schemaBaseURL = "https://smith.dev/schemas/"

// maxProblems bounds how many failures one problem text lists.
const maxProblems = 10

// rootPath names the whole value in problem texts.
const rootPath = "(root)"

// A SchemaDoc is one named schema of a document's schemas section: Name is
// its key, JSON its JSON Schema text.
type SchemaDoc struct {
	Name string
	JSON string
}

// A SchemaSet holds the compiled validation schemas a program can name: the
// built-ins (CodeAndExplanation, CodeOnly) and the document's own. A
// document schema with a built-in's name replaces the built-in. A SchemaSet
// is safe for concurrent use.
type SchemaSet struct {
	names   []string // sorted
	entries map[string]*schemaEntry
}

// A schemaEntry is one compiled schema.
type schemaEntry struct {
	text   string
	sch    *jsv.Schema
	string bool // the schema's top-level type is "string": the reply is text, not JSON
}

// NewSchemaSet compiles the built-in schemas and defs (JSON Schema draft
// 2020-12 unless a schema names another draft with $schema). References to
// other documents are not loaded: a $ref may only point inside its schema.
func NewSchemaSet(defs []SchemaDoc) (*SchemaSet, error) {
	s := &SchemaSet{entries: map[string]*schemaEntry{}}
	for _, name := range lang.BuiltinSchemas {
		text, _ := builtinSchemaText(name)
		e, err := compileSchemaEntry(name, text)
		if err != nil {
			return nil, fmt.Errorf("internal error: built-in schema '%s': %w", name, err)
		}
		s.add(name, e)
	}
	for _, d := range defs {
		e, err := compileSchemaEntry(d.Name, d.JSON)
		if err != nil {
			return nil, fmt.Errorf("schema '%s': %w", d.Name, err)
		}
		s.add(d.Name, e)
	}
	slices.Sort(s.names)
	return s, nil
}

func (s *SchemaSet) add(name string, e *schemaEntry) {
	if _, ok := s.entries[name]; !ok {
		s.names = append(s.names, name)
	}
	s.entries[name] = e
}

// Names returns the names of every schema in s, sorted.
func (s *SchemaSet) Names() []string { return slices.Clone(s.names) }

// Has reports whether s has a schema called name.
func (s *SchemaSet) Has(name string) bool {
	_, ok := s.entries[name]
	return ok
}

// Schema returns the JSON Schema text of name, for the CONTRACT layer of a
// prompt: the document's text as written (trimmed), or the built-in's
// indented text.
func (s *SchemaSet) Schema(name string) (string, bool) {
	e, ok := s.entries[name]
	if !ok {
		return "", false
	}
	return e.text, true
}

// Validate cleans reply and validates it against the schema name. For a
// string schema (CodeOnly, or "type": "string") the cleaned value is
// ExtractCode(Clean(reply)); for any other schema it is the first JSON
// value in Clean(reply) (ExtractJSON, or the whole text when it is a
// JSON scalar), printed as compact JSON with sorted keys. ok reports whether
// it passed; otherwise problem is "Output failed validation. Fix this: "
// followed by every failure as "<JSON path>: <what>", sorted and joined with
// "; " (at most 10, then "and N more"). cleaned is returned in both cases
// when there is one.
func (s *SchemaSet) Validate(name, reply string) (cleaned, problem string, ok bool) {
	e, found := s.entries[name]
	if !found {
		return "", ValidationFailPrefix + fmt.Sprintf("unknown validation schema '%s'%s", name, source.DidYouMean(name, s.names)), false
	}
	if e.string {
		cleaned = ExtractCode(Clean(reply))
		if p := validateValue(e.sch, cleaned); p != "" {
			return cleaned, ValidationFailPrefix + p, false
		}
		return cleaned, "", true
	}
	text, p := findJSON(Clean(reply), e.text)
	if p != "" {
		return "", ValidationFailPrefix + p, false
	}
	v, err := jsv.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return "", ValidationFailPrefix + fmt.Sprintf("malformed JSON in the reply: %v", err), false
	}
	cleaned, err = canonicalJSON(v)
	if err != nil {
		return "", ValidationFailPrefix + fmt.Sprintf("malformed JSON in the reply: %v", err), false
	}
	if p := validateValue(e.sch, v); p != "" {
		return cleaned, ValidationFailPrefix + p, false
	}
	return cleaned, "", true
}

// findJSON returns the JSON text of a reply, or a problem saying why there
// is none. schemaText is used to name what was expected.
func findJSON(reply, schemaText string) (string, string) {
	if text, ok := ExtractJSON(reply); ok {
		return text, ""
	}
	if t := strings.TrimSpace(reply); t != "" && json.Valid([]byte(t)) {
		return t, "" // a scalar: a number, a string, true, false or null
	}
	want := "JSON value"
	switch topType(schemaText) {
	case "object":
		want = "JSON object"
	case "array":
		want = "JSON array"
	}
	i := strings.IndexAny(reply, "{[")
	if i < 0 {
		return "", fmt.Sprintf("no %s found in the reply", want)
	}
	// Say what is wrong with the first candidate, preferring a json fence.
	cand := reply[i:]
	for _, b := range fencedBlocks(SplitLines(reply)) {
		if b.info == "json" {
			cand = strings.TrimSpace(b.body)
			break
		}
	}
	var v any
	err := json.Unmarshal([]byte(cand), &v)
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return "", fmt.Sprintf("no complete %s found in the reply: malformed JSON at byte %d: %v", want, se.Offset, se)
	case err != nil:
		return "", fmt.Sprintf("no complete %s found in the reply: %v", want, err)
	}
	return "", fmt.Sprintf("no complete %s found in the reply", want)
}

// topType returns the top-level "type" of a schema text when it is a single
// string.
func topType(schemaText string) string {
	var s struct {
		Type any `json:"type"`
	}
	if json.Unmarshal([]byte(schemaText), &s) != nil {
		return ""
	}
	t, _ := s.Type.(string)
	return t
}

// canonicalJSON prints v compactly with sorted keys, without HTML escaping.
func canonicalJSON(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// compileSchemaEntry compiles one schema text.
func compileSchemaEntry(name, text string) (*schemaEntry, error) {
	sch, err := compileSchema(name, text)
	if err != nil {
		return nil, err
	}
	return &schemaEntry{text: strings.TrimSpace(text), sch: sch, string: topType(text) == "string"}, nil
}

// noLoader refuses every external reference, so that a schema cannot make
// Smith read files or the network.
type noLoader struct{}

func (noLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("external reference '%s' is not allowed", u)
}

// compileSchema compiles text as the schema called name.
func compileSchema(name, text string) (*jsv.Schema, error) {
	doc, err := jsv.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("read JSON: %w", err)
	}
	loc := schemaBaseURL + url.PathEscape(name) + ".json"
	c := jsv.NewCompiler()
	c.DefaultDraft(jsv.Draft2020)
	c.UseLoader(noLoader{})
	if err := c.AddResource(loc, doc); err != nil {
		return nil, fmt.Errorf("add: %w", err)
	}
	sch, err := c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("compile: %w", err)
	}
	return sch, nil
}

// validateValue validates v and returns "" or the failures as
// "<JSON path>: <what>", sorted, joined with "; ".
func validateValue(sch *jsv.Schema, v any) string {
	err := sch.Validate(v)
	if err == nil {
		return ""
	}
	var ve *jsv.ValidationError
	if !errors.As(err, &ve) {
		return rootPath + ": " + err.Error()
	}
	var items []string
	collectProblems(ve, &items)
	slices.Sort(items)
	items = slices.Compact(items)
	if len(items) == 0 {
		items = []string{rootPath + ": " + leafMessage(ve)}
	}
	if n := len(items); n > maxProblems {
		items = append(items[:maxProblems], fmt.Sprintf("and %d more", n-maxProblems))
	}
	return strings.Join(items, "; ")
}

// collectProblems appends one "<path>: <what>" per leaf of the error tree. A
// missing property is reported at the property's own path.
func collectProblems(e *jsv.ValidationError, items *[]string) {
	eachLeaf(e, func(loc []string, what string) {
		*items = append(*items, jsonPointer(loc)+": "+what)
	})
}

// eachLeaf calls f with the location and message of every leaf of the
// error tree. A missing property is reported at the property's own path.
func eachLeaf(e *jsv.ValidationError, f func(loc []string, what string)) {
	if len(e.Causes) > 0 {
		for _, c := range e.Causes {
			eachLeaf(c, f)
		}
		return
	}
	if k, ok := e.ErrorKind.(*kind.Required); ok {
		for _, m := range k.Missing {
			f(append(slices.Clone(e.InstanceLocation), m), "missing required property '"+m+"'")
		}
		return
	}
	f(e.InstanceLocation, leafMessage(e))
}

// CheckSchema compiles text as the document schema called name, as
// NewSchemaSet does for a run, and returns "" or what stops it compiling:
// for a schema that breaks the JSON Schema metaschema, every failure as
// "<JSON path>: <what>" (sorted, joined with "; "), and at the JSON
// Pointer tokens of the first one's value inside the schema; else the
// compiler's message (an external or dangling $ref) at the whole schema.
func CheckSchema(name, text string) (at []string, problem string) {
	_, err := compileSchema(name, text)
	if err == nil {
		return nil, ""
	}
	var sve *jsv.SchemaValidationError
	var ve *jsv.ValidationError
	if !errors.As(err, &sve) || !errors.As(sve.Err, &ve) {
		return nil, strings.TrimPrefix(err.Error(), "compile: ")
	}
	type leaf struct {
		loc  []string
		text string
	}
	var leaves []leaf
	eachLeaf(ve, func(loc []string, what string) {
		leaves = append(leaves, leaf{loc, jsonPointer(loc) + ": " + what})
	})
	slices.SortStableFunc(leaves, func(a, b leaf) int { return strings.Compare(a.text, b.text) })
	items := make([]string, len(leaves))
	for i, l := range leaves {
		items[i] = l.text
	}
	items = slices.Compact(items)
	if n := len(items); n > maxProblems {
		items = append(items[:maxProblems], fmt.Sprintf("and %d more", n-maxProblems))
	}
	if len(leaves) == 0 {
		return nil, rootPath + ": " + leafMessage(ve)
	}
	return leaves[0].loc, strings.Join(items, "; ")
}

// leafMessage is the library's message for one error, without its location.
func leafMessage(e *jsv.ValidationError) string {
	bare := &jsv.ValidationError{SchemaURL: e.SchemaURL, ErrorKind: e.ErrorKind}
	return strings.TrimPrefix(bare.Error(), "at '': ")
}

// jsonPointer prints an instance location as a JSON Pointer ("(root)" for
// the whole value).
func jsonPointer(loc []string) string {
	if len(loc) == 0 {
		return rootPath
	}
	var b strings.Builder
	for _, tok := range loc {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(tok))
	}
	return b.String()
}
