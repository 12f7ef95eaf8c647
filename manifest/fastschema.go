package manifest

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// A fastSchema is a compiled form of the generated schemas (WorkflowSchema,
// ManifestSchema) that answers one question without allocating: is this
// document valid? It knows the keywords those schemas use and nothing else
// (compileFast refuses any other). A valid document, the common case, then
// needs neither the compilation of the schema by the validation library
// (which checks it against the draft's meta-schema) nor its validation of
// the document as a tree of interfaces: together most of the time of
// loading a document. Any document it does not accept goes to the library,
// which stays the definition and words the diagnostics;
// TestFastSchemaAgrees checks that they agree.
type fastSchema struct {
	boolean  int8 // 1: the true schema, -1: the false schema, 0: a schema object
	ref      *fastRef
	types    uint8 // bit per Kind; 0: any type
	props    map[string]*fastSchema
	addl     *fastSchema // additionalProperties; nil when absent
	required []string
	names    *fastSchema // propertyNames
	minProps int
	items    *fastSchema
	enum     []string
	hasEnum  bool
	pattern  *regexp.Regexp
	anyOf    []*fastSchema
	oneOf    []*fastSchema
	not      *fastSchema
	// minimum, exclusiveMinimum and maximum of a number (bounds says which)
	min, exclMin, max float64
	bounds            uint8 // boundMin | boundExclMin | boundMax
	integer           bool  // type integer: a number without a fraction
}

// The bits of fastSchema.bounds.
const (
	boundMin uint8 = 1 << iota
	boundExclMin
	boundMax
)

// fastCompiler compiles a schema document into fastSchemas. Each $defs
// entry is read (ParseJSON) and compiled only when a document first
// reaches a $ref to it: a run of a small workflow visits a few of the
// definitions, and reading and compiling all of them was most of the cost
// of loading it. refs holds one fastRef per name.
type fastCompiler struct {
	defs map[string]string // the text of each $defs entry
	mu   sync.Mutex        // guards refs
	refs map[string]*fastRef
}

// A fastRef is the target of a "$ref": "#/$defs/NAME", compiled at its
// first use (get).
type fastRef struct {
	c    *fastCompiler
	name string
	once sync.Once
	s    *fastSchema // nil when the definition does not compile
	err  error
}

// get returns the compiled definition; nil when it does not compile (then
// valid says false and the library judges the document).
func (r *fastRef) get() *fastSchema {
	r.once.Do(func() {
		switch text := r.c.defs[r.name]; text {
		case "true", "false": // ParseJSON reads objects only
			r.s, r.err = r.c.compile(&Value{Kind: KBool, Bool: text == "true"})
			return
		}
		v, ds := ParseJSON("#/$defs/"+r.name, []byte(r.c.defs[r.name]))
		if err := ds.Err(); err != nil || v == nil {
			r.err = fmt.Errorf("$defs/%s: %v", r.name, ds)
			return
		}
		r.s, r.err = r.c.compile(v)
	})
	return r.s
}

// compileFast compiles the schema document text, or fails when its root
// uses a keyword or form the fast validator does not know. With all, every
// definition is compiled at once too (and a failing one fails it);
// otherwise each one at its first use.
func compileFast(text string, all bool) (*fastSchema, error) {
	root, defs, err := cutDefs(text)
	if err != nil {
		return nil, err
	}
	doc, ds := ParseJSON("schema", []byte(root))
	if err := ds.Err(); err != nil || doc == nil {
		return nil, fmt.Errorf("read the schema: %v", ds)
	}
	if doc.Kind != KMap {
		return nil, fmt.Errorf("the schema is not an object")
	}
	c := &fastCompiler{refs: map[string]*fastRef{}, defs: defs}
	s, err := c.compile(doc)
	if err != nil || !all {
		return s, err
	}
	for name := range defs {
		r := c.ref(name)
		if r.get(); r.err != nil {
			return nil, r.err
		}
	}
	return s, nil
}

// ref returns the one fastRef of the definition name.
func (c *fastCompiler) ref(name string) *fastRef {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.refs[name]
	if r == nil {
		r = &fastRef{c: c, name: name}
		c.refs[name] = r
	}
	return r
}

// cutDefs splits the schema text into the text of its root object without
// the "$defs" member and the text of each definition, without reading the
// definitions: it only finds where each value ends.
func cutDefs(text string) (root string, defs map[string]string, err error) {
	i := jsonSpace(text, 0)
	if i >= len(text) || text[i] != '{' {
		return "", nil, fmt.Errorf("the schema is not an object")
	}
	defs = map[string]string{}
	root = text
	for i = jsonSpace(text, i+1); i < len(text) && text[i] == '"'; {
		start := i
		keyEnd := skipJSON(text, i)
		key, kerr := strconv.Unquote(text[i:keyEnd])
		i = jsonSpace(text, keyEnd)
		if kerr != nil || i >= len(text) || text[i] != ':' {
			return "", nil, fmt.Errorf("the schema is not valid JSON near offset %d", i)
		}
		vs := jsonSpace(text, i+1)
		var ve int
		if key == "$defs" {
			ve = splitObject(text, vs, defs)
		} else {
			ve = skipJSON(text, vs)
		}
		if ve < 0 {
			return "", nil, fmt.Errorf("the schema is not valid JSON near offset %d", vs)
		}
		i = jsonSpace(text, ve)
		if key == "$defs" {
			if i < len(text) && text[i] == ',' { // drop the member and its comma
				root = text[:start] + text[jsonSpace(text, i+1):]
			} else {
				return "", nil, fmt.Errorf("$defs is the last member of the schema")
			}
		}
		if i < len(text) && text[i] == ',' {
			i = jsonSpace(text, i+1)
		}
	}
	return root, defs, nil
}

// splitObject puts the text of each member of the JSON object that starts
// at s[i] in m; it returns the end of the object, or -1.
func splitObject(s string, i int, m map[string]string) int {
	if i >= len(s) || s[i] != '{' {
		return -1
	}
	for i = jsonSpace(s, i+1); i < len(s) && s[i] == '"'; {
		keyEnd := skipJSON(s, i)
		if keyEnd < 0 {
			return -1
		}
		key, err := strconv.Unquote(s[i:keyEnd])
		i = jsonSpace(s, keyEnd)
		if err != nil || i >= len(s) || s[i] != ':' {
			return -1
		}
		vs := jsonSpace(s, i+1)
		ve := skipJSON(s, vs)
		if ve < 0 {
			return -1
		}
		m[key] = s[vs:ve]
		if i = jsonSpace(s, ve); i < len(s) && s[i] == ',' {
			i = jsonSpace(s, i+1)
		}
	}
	if i >= len(s) || s[i] != '}' {
		return -1
	}
	return i + 1
}

// jsonSpace skips JSON white space from i.
func jsonSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// skipJSON returns the end of the JSON value that starts at i (a string,
// an object or array with balanced brackets, or a scalar), or -1. It does
// not check the value: ParseJSON does, when the text is read.
func skipJSON(s string, i int) int {
	if i >= len(s) {
		return -1
	}
	switch s[i] {
	case '"':
		return skipString(s, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(s); j++ {
			switch s[j] {
			case '"':
				if j = skipString(s, j); j < 0 {
					return -1
				}
				j-- // the loop's j++ steps past the closing quote
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(s) && !strings.ContainsRune(",}] \t\n\r", rune(s[j])) {
		j++
	}
	return j
}

// skipString returns the end of the JSON string that starts at s[i], or -1.
func skipString(s string, i int) int {
	for j := i + 1; ; {
		k := strings.IndexByte(s[j:], '"')
		if k < 0 {
			return -1
		}
		j += k
		n := 0 // backslashes before the quote: odd escapes it
		for n < j-i-1 && s[j-1-n] == '\\' {
			n++
		}
		if j++; n%2 == 0 {
			return j
		}
	}
}

var fastTypes = map[string]uint8{
	"null": 1 << KNull, "boolean": 1 << KBool, "number": 1 << KNumber,
	"string": 1 << KString, "array": 1 << KList, "object": 1 << KMap,
}

func (c *fastCompiler) compile(node *Value) (*fastSchema, error) {
	switch node.Kind {
	case KBool:
		if node.Bool {
			return &fastSchema{boolean: 1}, nil
		}
		return &fastSchema{boolean: -1}, nil
	case KMap:
		s := &fastSchema{}
		for _, e := range node.Map {
			if err := c.keyword(s, e.Key, e.Val); err != nil {
				return nil, err
			}
		}
		return s, nil
	}
	return nil, fmt.Errorf("a schema of type %s", node.Kind)
}

// list compiles a list of schemas.
func (c *fastCompiler) list(v *Value) ([]*fastSchema, error) {
	if v.Kind != KList {
		return nil, fmt.Errorf("not a list: %s", v.Kind)
	}
	out := make([]*fastSchema, len(v.List))
	for i, e := range v.List {
		var err error
		if out[i], err = c.compile(e); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// strs reads a list of strings.
func strs(v *Value) ([]string, error) {
	if v.Kind != KList {
		return nil, fmt.Errorf("not a list: %s", v.Kind)
	}
	out := make([]string, len(v.List))
	for i, e := range v.List {
		if e.Kind != KString {
			return nil, fmt.Errorf("not a string: %s", e.Kind)
		}
		out[i] = e.Str
	}
	return out, nil
}

func (c *fastCompiler) keyword(s *fastSchema, k string, v *Value) error {
	var err error
	switch k {
	case "$id", "$schema", "$defs", "description", "title":
		// annotations; $defs are compiled when a $ref names them
	case "$ref":
		name, ok := strings.CutPrefix(v.Str, "#/$defs/")
		if !ok || v.Kind != KString || strings.ContainsAny(name, "/~%") {
			return fmt.Errorf("$ref %q", v.Str)
		}
		if _, ok := c.defs[name]; !ok {
			return fmt.Errorf("$ref %q", v.Str)
		}
		s.ref = c.ref(name)
	case "type":
		if v.Kind == KString && v.Str == "integer" {
			s.types, s.integer = 1<<KNumber, true
			break
		}
		if s.types = fastTypes[v.Str]; v.Kind != KString || s.types == 0 {
			return fmt.Errorf("type %s", v.AppendJSON(nil))
		}
	case "properties":
		if v.Kind != KMap {
			return fmt.Errorf("properties of type %s", v.Kind)
		}
		s.props = make(map[string]*fastSchema, len(v.Map))
		for _, e := range v.Map {
			if s.props[e.Key], err = c.compile(e.Val); err != nil {
				return err
			}
		}
	case "additionalProperties":
		s.addl, err = c.compile(v)
	case "propertyNames":
		s.names, err = c.compile(v)
	case "items":
		s.items, err = c.compile(v)
	case "not":
		s.not, err = c.compile(v)
	case "anyOf":
		s.anyOf, err = c.list(v)
	case "oneOf":
		s.oneOf, err = c.list(v)
	case "required":
		s.required, err = strs(v)
	case "enum":
		s.enum, err = strs(v)
		s.hasEnum = true
	case "pattern":
		if v.Kind != KString {
			return fmt.Errorf("pattern of type %s", v.Kind)
		}
		s.pattern, err = regexp.Compile(v.Str)
	case "minimum":
		s.min, err = fastNumber(k, v)
		s.bounds |= boundMin
	case "exclusiveMinimum":
		s.exclMin, err = fastNumber(k, v)
		s.bounds |= boundExclMin
	case "maximum":
		s.max, err = fastNumber(k, v)
		s.bounds |= boundMax
	case "minProperties":
		i, perr := strconv.ParseInt(v.Str, 10, 64)
		if v.Kind != KNumber || perr != nil || i < 0 || i > 1 {
			// more than 1 would have to count distinct keys
			return fmt.Errorf("minProperties %s", v.AppendJSON(nil))
		}
		s.minProps = int(i)
	default:
		return fmt.Errorf("keyword %q", k)
	}
	return err
}

// fastNumber reads the number of keyword k.
func fastNumber(k string, v *Value) (float64, error) {
	if v.Kind != KNumber || math.IsNaN(v.Num) || math.IsInf(v.Num, 0) {
		return 0, fmt.Errorf("%s %s", k, v.AppendJSON(nil))
	}
	return v.Num, nil
}

// valid reports whether v is valid against s. It may say false for a valid
// value in forms it does not judge (a number that is not finite, an object
// with a duplicate key); it never says true for an invalid one.
func (s *fastSchema) valid(v *Value) bool {
	if s.boolean != 0 {
		return s.boolean > 0
	}
	kind := KNull
	if v != nil {
		kind = v.Kind
	}
	if kind == KNumber && (math.IsNaN(v.Num) || math.IsInf(v.Num, 0)) {
		return false
	}
	if s.ref != nil {
		if r := s.ref.get(); r == nil || !r.valid(v) {
			return false
		}
	}
	if s.types != 0 && s.types&(1<<kind) == 0 {
		return false
	}
	if s.hasEnum && (kind != KString || !slices.Contains(s.enum, v.Str)) {
		return false
	}
	if s.pattern != nil && kind == KString && !s.pattern.MatchString(v.Str) {
		return false
	}
	if s.integer && kind == KNumber && v.Num != math.Trunc(v.Num) {
		return false
	}
	if s.bounds != 0 && kind == KNumber && !s.inBounds(v.Num) {
		return false
	}
	if kind == KMap && !s.validMap(v) {
		return false
	}
	if kind == KList && s.items != nil {
		for _, e := range v.List {
			if !s.items.valid(e) {
				return false
			}
		}
	}
	if len(s.anyOf) > 0 && !slices.ContainsFunc(s.anyOf, func(a *fastSchema) bool { return a.valid(v) }) {
		return false
	}
	if len(s.oneOf) > 0 {
		n := 0
		for _, o := range s.oneOf {
			if o.valid(v) {
				n++
			}
		}
		if n != 1 {
			return false
		}
	}
	return s.not == nil || !s.not.valid(v)
}

// inBounds reports whether the number n is within the bounds of s.
func (s *fastSchema) inBounds(n float64) bool {
	return (s.bounds&boundMin == 0 || n >= s.min) &&
		(s.bounds&boundExclMin == 0 || n > s.exclMin) &&
		(s.bounds&boundMax == 0 || n <= s.max)
}

// validMap checks the object keywords against the object v.
func (s *fastSchema) validMap(v *Value) bool {
	if len(v.Map) < s.minProps {
		return false
	}
	if hasDuplicateKey(v) {
		return false // the library sees only the last: not judged here
	}
	for _, e := range v.Map {
		if s.names != nil && !s.names.valid(&Value{Kind: KString, Str: e.Key}) {
			return false
		}
		if p, ok := s.props[e.Key]; ok {
			if !p.valid(e.Val) {
				return false
			}
		} else if s.addl != nil && !s.addl.valid(e.Val) {
			return false
		}
	}
	for _, r := range s.required {
		if !hasKey(v, r) {
			return false
		}
	}
	return true
}

func hasKey(v *Value, k string) bool {
	for _, e := range v.Map {
		if e.Key == k {
			return true
		}
	}
	return false
}

// hasDuplicateKey reports whether the object v has a key twice (a parse
// error, reported by the parser).
func hasDuplicateKey(v *Value) bool {
	if len(v.Map) <= 32 {
		for i, e := range v.Map {
			for _, f := range v.Map[:i] {
				if f.Key == e.Key {
					return true
				}
			}
		}
		return false
	}
	seen := make(map[string]bool, len(v.Map))
	for _, e := range v.Map {
		if seen[e.Key] {
			return true
		}
		seen[e.Key] = true
	}
	return false
}
