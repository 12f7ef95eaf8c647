package manifest

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
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
	ref      *fastSchema
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
}

// fastCompiler compiles a schema document, as ParseJSON reads it, into
// fastSchemas; refs resolves "#/$defs/NAME".
type fastCompiler struct {
	defs *Value
	refs map[string]*fastSchema
}

// compileFast compiles the schema document doc, or fails when it uses a
// keyword or form the fast validator does not know.
func compileFast(doc *Value) (*fastSchema, error) {
	if doc == nil || doc.Kind != KMap {
		return nil, fmt.Errorf("the schema is not an object")
	}
	c := &fastCompiler{refs: map[string]*fastSchema{}, defs: doc.Get("$defs")}
	return c.compile(doc)
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
		if s.ref = c.refs[name]; s.ref == nil {
			def := c.defs.Get(name)
			if def == nil {
				return fmt.Errorf("$ref %q", v.Str)
			}
			s.ref = &fastSchema{}
			c.refs[name] = s.ref
			t, err := c.compile(def)
			if err != nil {
				return err
			}
			*s.ref = *t
		}
	case "type":
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
	if s.ref != nil && !s.ref.valid(v) {
		return false
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
