package manifest

import (
	_ "embed" // the generated schemas
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	jsv "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"smith/source"
)

// Schema identifiers ($id) of the two formats.
const (
	WorkflowSchemaID = "https://smith.dev/schema/workflow.json"
	ManifestSchemaID = "https://smith.dev/schema/manifest.json"
)

// The two schemas as generateWorkflowSchema and generateManifestSchema
// (schemagen_test.go) print them from the Go types, kept in files so that
// loading a document does not reflect on the Go types and print the result
// every time (about a fifth of the compilation of a 100-step workflow), and
// so that the binaries do not link the reflection library at all.
// TestSchemaGolden fails when a file differs from its generator; -update
// rewrites it.
var (
	//go:embed workflow.schema.json
	workflowSchemaText string
	//go:embed manifest.schema.json
	manifestSchemaText string
)

// WorkflowSchema returns the JSON Schema (draft 2020-12) of YAML step
// workflows, generated from the Go types: indented, deterministic text.
func WorkflowSchema() []byte { return []byte(workflowSchemaText) }

// ManifestSchema returns the JSON Schema (draft 2020-12) of workflows.json
// manifests, generated from the Go types: indented, deterministic text.
func ManifestSchema() []byte { return []byte(manifestSchemaText) }

// A Validator checks document trees against one format's generated schema.
// Make one with NewWorkflowValidator or NewManifestValidator and keep it to
// validate many documents; it is safe for concurrent use.
type Validator struct {
	format string // "workflow" or "manifest": the noun of the top level
	// doc reads the schema document (for the library and for property
	// lookups), once, at the first document fast does not accept.
	doc  func() (any, error)
	fast *fastSchema // judges the valid documents (fastschema.go)
	// sch compiles the schema with the validation library, once, at the
	// first document fast does not accept.
	sch func() (*jsv.Schema, error)
	// byNode and node judge a manifest read node by node (stream.go):
	// byNode is fast with any object accepted for nodes, node the schema
	// of each node. nil when the schema's nodes is not of that form.
	byNode, node *fastSchema
}

// NewWorkflowValidator compiles WorkflowSchema.
func NewWorkflowValidator() (*Validator, error) {
	return newValidator("workflow", WorkflowSchemaID, workflowSchemaText, true)
}

// NewManifestValidator compiles ManifestSchema.
func NewManifestValidator() (*Validator, error) {
	return newValidator("manifest", ManifestSchemaID, manifestSchemaText, true)
}

// newLazyWorkflowValidator and newLazyManifestValidator leave the
// library's compilation of the schema to the first document that needs it:
// loading one valid document needs none.
func newLazyWorkflowValidator() (*Validator, error) {
	return newValidator("workflow", WorkflowSchemaID, workflowSchemaText, false)
}

func newLazyManifestValidator() (*Validator, error) {
	return newValidator("manifest", ManifestSchemaID, manifestSchemaText, false)
}

// newValidator reads the schema text; eager compiles it with the library
// at once (else at the first document the fast validator does not accept).
//
// The fast validator reads the text with ParseJSON, each definition at its
// first use unless eager; the library's form of
// the document (a tree of interfaces, read with encoding/json) is made only
// for a document the fast validator does not accept.
func newValidator(format, id, text string, eager bool) (*Validator, error) {
	fast, err := compileFast(text, eager)
	if err != nil {
		return nil, fmt.Errorf("compile %s schema for the fast validator: %w", format, err)
	}
	vr := &Validator{format: format, fast: fast}
	vr.byNode, vr.node = splitNodes(fast)
	vr.doc = sync.OnceValues(func() (any, error) {
		doc, err := jsv.UnmarshalJSON(strings.NewReader(text))
		if err != nil {
			return nil, fmt.Errorf("read %s schema: %w", format, err)
		}
		return doc, nil
	})
	vr.sch = sync.OnceValues(func() (*jsv.Schema, error) {
		doc, err := vr.doc()
		if err != nil {
			return nil, err
		}
		c := jsv.NewCompiler()
		if err := c.AddResource(id, doc); err != nil {
			return nil, fmt.Errorf("add %s schema: %w", format, err)
		}
		sch, err := c.Compile(id)
		if err != nil {
			return nil, fmt.Errorf("compile %s schema: %w", format, err)
		}
		return sch, nil
	})
	if eager {
		if _, err := vr.sch(); err != nil {
			return nil, err
		}
	}
	return vr, nil
}

// Validate checks the tree v and returns one E_SCHEMA diagnostic per
// problem, positioned at the offending value (at the key for an unknown
// key, at the object for a missing one), sorted.
func (vr *Validator) Validate(v *Value) source.Diagnostics {
	if vr.fast.valid(v) {
		return nil
	}
	return vr.validateSlow(v)
}

// validateSlow is Validate by the validation library alone.
func (vr *Validator) validateSlow(v *Value) source.Diagnostics {
	sch, err := vr.sch()
	if err != nil {
		panic("internal error: " + err.Error()) // a generated schema that does not compile
	}
	err = sch.Validate(v.Interface())
	if err == nil {
		return nil
	}
	var ve *jsv.ValidationError
	if !errors.As(err, &ve) {
		return source.Diagnostics{source.New(v.Pos, source.ESchema, "%s", err.Error())}
	}
	r := &reporter{vr: vr, root: v}
	r.walk(ve)
	r.ds.Sort()
	return r.ds
}

// reporter turns a validation error tree into diagnostics.
type reporter struct {
	vr   *Validator
	root *Value
	ds   source.Diagnostics
}

// walk reports the leaves of e. anyOf/oneOf nodes are turned into one
// message each, or narrowed to the branch that matched the value's type.
func (r *reporter) walk(e *jsv.ValidationError) {
	switch k := e.ErrorKind.(type) {
	case *kind.OneOf, *kind.AnyOf:
		if keys := r.exactlyOneKeys(e); keys != nil {
			r.exactlyOne(e, keys)
			return
		}
		var kept []*jsv.ValidationError
		var wants []string
		for _, c := range e.Causes {
			if t, ok := c.ErrorKind.(*kind.Type); ok && len(c.InstanceLocation) == len(e.InstanceLocation) {
				wants = append(wants, t.Want...)
				continue
			}
			kept = append(kept, c)
		}
		if len(kept) == 0 {
			r.typeError(e.InstanceLocation, wants)
			return
		}
		for _, c := range kept {
			r.walk(c)
		}
	case *kind.AdditionalProperties:
		obj, path := r.lookup(e.InstanceLocation)
		allowed := r.properties(e.SchemaURL)
		for _, p := range k.Properties {
			pos := obj.Pos
			if obj.Kind == KMap {
				pos = entryKeyPos(obj, p)
			}
			hint := source.DidYouMean(p, allowed)
			switch def := defName(e.SchemaURL); {
			case hint != "":
			case def == "Agent" && slices.Contains(r.properties("#/$defs/Step"), p):
				// A step's key written on the agent the steps name.
				hint = fmt.Sprintf(" ('%s' is a key of a step: give it on each step that names this agent)", p)
			case def == "Step" && slices.Contains(r.properties("#/$defs/Handler"), p):
				// A handler's key (halt, goto, ...) written on the step.
				hint = fmt.Sprintf(" ('%s' is a key of a handler: write it under on:, e.g. on: {success: {%s: ...}})", p, p)
			case def == "On" && signalName().MatchString(p):
				// A custom signal routed beside success and failure.
				hint = fmt.Sprintf(" (a custom signal goes under signals:, e.g. on: {signals: {\"SIGNAL:%s\": {goto: ...}}})", strings.TrimPrefix(p, "SIGNAL:"))
			}
			r.add(pos, joinPath(path, p), "unknown key '%s' in %s%s", p, r.noun(e.SchemaURL, e.InstanceLocation), hint)
		}
	case *kind.Required:
		obj, path := r.lookup(e.InstanceLocation)
		for _, m := range k.Missing {
			r.add(obj.Pos, path, "%s is missing required key '%s'", r.noun(e.SchemaURL, e.InstanceLocation), m)
		}
	case *kind.Type:
		if len(k.Want) == 1 && k.Want[0] == "integer" {
			// A number key whose limit wants an integer: a fraction is the
			// compiler's to report, with the range.
			if val, _ := r.lookup(e.InstanceLocation); val.Kind == KNumber {
				return
			}
		}
		r.typeError(e.InstanceLocation, k.Want)
	case *kind.Enum:
		val, path := r.lookup(e.InstanceLocation)
		var want []string
		for _, w := range k.Want {
			want = append(want, fmt.Sprint(w))
		}
		found := fmt.Sprintf("'%s'", val.Str)
		if val.Kind != KString {
			found = val.Kind.String()
		}
		r.add(val.Pos, path, "%s must be one of %s, found %s%s", label(e.InstanceLocation), strings.Join(want, ", "), found, source.DidYouMean(val.Str, want))
	case *kind.Pattern:
		val, path := r.lookup(e.InstanceLocation)
		r.add(val.Pos, path, "%s must match %s, found '%s'", label(e.InstanceLocation), k.Want, k.Got)
	case *kind.PropertyNames:
		// A key that is a name (a branch's): said at the key, with the
		// rule its cause broke.
		obj, path := r.lookup(e.InstanceLocation)
		pos := obj.Pos
		if obj.Kind == KMap {
			pos = entryKeyPos(obj, k.Property)
		}
		rule := "be a valid name"
		for _, c := range e.Causes {
			if p, ok := c.ErrorKind.(*kind.Pattern); ok {
				rule = "match " + p.Want
			}
		}
		r.add(pos, joinPath(path, k.Property), "the name '%s' in %s must %s", k.Property, label(e.InstanceLocation), rule)
	case *kind.Minimum, *kind.ExclusiveMinimum, *kind.Maximum, *kind.ExclusiveMaximum:
		// A number out of its key's range: the compiler reports it, from
		// the same limit tags, naming the key and the range (one error per
		// mistake). The schema carries the ranges for editors.
	case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf:
		for _, c := range e.Causes {
			r.walk(c)
		}
	default:
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				r.walk(c)
			}
			return
		}
		val, path := r.lookup(e.InstanceLocation)
		r.add(val.Pos, path, "%s does not match the %s schema (%s)", label(e.InstanceLocation), r.vr.format, strings.Join(e.ErrorKind.KeywordPath(), "/"))
	}
}

func (r *reporter) add(pos source.Pos, path, format string, args ...any) {
	d := source.New(pos, source.ESchema, format, args...)
	d.Path = path
	r.ds = append(r.ds, d)
}

// signalName matches a key that names a signal (APPROVED, SIGNAL:APPROVED).
var signalName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(SIGNAL:)?[A-Z][A-Z0-9_]*$`)
})

// typeError reports a value of the wrong type.
func (r *reporter) typeError(loc []string, wants []string) {
	val, path := r.lookup(loc)
	var ws []string
	for _, w := range wants {
		if !slices.Contains(ws, w) {
			ws = append(ws, w)
		}
	}
	for i, w := range ws {
		ws[i] = article(w)
	}
	want := strings.Join(ws, " or ")
	if n := len(ws); n > 2 {
		want = strings.Join(ws[:n-1], ", ") + " or " + ws[n-1]
	}
	r.add(val.Pos, path, "%s must be %s, found %s%s", label(loc), want, val.Kind, typeHint(loc, ws, val))
}

// typeHint says how to write a value of the wanted type where the fix is
// plain: a number or boolean where a string is wanted is quoted, and a
// command written as one string becomes its argument list (no shell runs
// it: one with shell syntax becomes sh -c).
func typeHint(loc []string, wants []string, val *Value) string {
	if len(wants) != 1 {
		return ""
	}
	switch {
	case wants[0] == "a string" && (val.Kind == KNumber || val.Kind == KBool) && val.Str != "":
		return fmt.Sprintf("; quote it: %q", val.Str)
	case wants[0] == "an array" && val.Kind == KString && len(loc) > 0 && argvKeys[loc[len(loc)-1]] && strings.TrimSpace(val.Str) != "":
		args := strings.Fields(val.Str)
		if strings.ContainsAny(val.Str, "|&;<>()$`\\\"'*?[]#~{}") {
			args = []string{"sh", "-c", val.Str}
		}
		quoted := make([]string, len(args))
		for i, a := range args {
			quoted[i] = strconv.Quote(a)
		}
		return "; write the arguments as a list (no shell runs it): [" + strings.Join(quoted, ", ") + "]"
	}
	return ""
}

// argvKeys are the keys whose value is an argv: a step's or worker's
// command and the internal workers' commands.
var argvKeys = map[string]bool{"command": true, "test_command": true, "lint_command": true, "build_command": true}

// article prefixes a JSON Schema type name with its indefinite article.
func article(t string) string {
	switch t {
	case "object", "array", "integer":
		return "an " + t
	case "null":
		return t
	}
	return "a " + t
}

// exactlyOneKeys returns the keys of an "exactly one of" oneOf (steps,
// conditions, handlers: every branch requires one key), in schema order, or
// nil for other oneOf/anyOf nodes.
func (r *reporter) exactlyOneKeys(e *jsv.ValidationError) []string {
	if _, ok := e.ErrorKind.(*kind.OneOf); !ok {
		return nil
	}
	m, _ := r.schemaAt(e.SchemaURL).(map[string]any)
	branches, _ := m["oneOf"].([]any)
	var keys []string
	for _, b := range branches {
		bm, _ := b.(map[string]any)
		if _, ok := bm["not"]; ok {
			continue // the agent-only branch of a step
		}
		req, _ := bm["required"].([]any)
		if len(bm) != 1 || len(req) != 1 {
			return nil
		}
		k, ok := req[0].(string)
		if !ok {
			return nil
		}
		keys = append(keys, k)
	}
	return keys
}

// exactlyOne reports an object with none or several of keys. With none,
// an unknown key on the same object (a misspelt kind) already says it all.
func (r *reporter) exactlyOne(e *jsv.ValidationError, keys []string) {
	obj, path := r.lookup(e.InstanceLocation)
	if obj.Kind != KMap {
		return
	}
	var found []string
	for _, k := range keys {
		if obj.Get(k) != nil {
			found = append(found, k)
		}
	}
	if len(found) == 0 {
		allowed := r.properties(e.SchemaURL)
		for _, en := range obj.Map {
			if !slices.Contains(allowed, en.Key) {
				return
			}
		}
	}
	r.add(obj.Pos, path, "%s must have exactly one of %s (found %s)", r.noun(e.SchemaURL, e.InstanceLocation), strings.Join(keys, ", "), andList(found))
}

// andList joins names as "a", "a and b", "a, b and c", or "none".
func andList(names []string) string {
	switch n := len(names); n {
	case 0:
		return "none"
	case 1:
		return names[0]
	default:
		return strings.Join(names[:n-1], ", ") + " and " + names[n-1]
	}
}

// lookup walks the instance location through the tree; it returns the
// value found (the deepest one reached) and its data path.
func (r *reporter) lookup(loc []string) (*Value, string) {
	v := r.root
	var path strings.Builder
	for _, tok := range loc {
		switch v.Kind {
		case KMap:
			next := v.Get(tok)
			if next == nil {
				return v, path.String()
			}
			if path.Len() > 0 {
				path.WriteByte('.')
			}
			path.WriteString(tok)
			v = next
		case KList:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v.List) {
				return v, path.String()
			}
			fmt.Fprintf(&path, "[%d]", i)
			v = v.List[i]
		default:
			return v, path.String()
		}
	}
	return v, path.String()
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// entryKeyPos is the position of key in the object v.
func entryKeyPos(v *Value, key string) source.Pos {
	for _, e := range v.Map {
		if e.Key == key {
			return e.KeyPos
		}
	}
	return v.Pos
}

// label names the value at loc for a message: its key in quotes, with the
// index for a list element ('steps[2]', 'command[0]').
func label(loc []string) string {
	if len(loc) == 0 {
		return "the document"
	}
	i := len(loc) - 1
	s := ""
	for i >= 0 && isIndex(loc[i]) {
		s = "[" + loc[i] + "]" + s
		i--
	}
	if i >= 0 {
		s = loc[i] + s
	}
	return "'" + s + "'"
}

func isIndex(tok string) bool {
	if tok == "" {
		return false
	}
	for _, c := range tok {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// defName is the $defs entry a schema location lies in ("" for the root).
func defName(schemaURL string) string {
	_, frag, _ := strings.Cut(schemaURL, "#")
	parts := strings.Split(strings.TrimPrefix(frag, "/"), "/")
	if len(parts) >= 2 && parts[0] == "$defs" {
		return parts[1]
	}
	return ""
}

// properties lists the property names of the schema at schemaURL, sorted.
func (r *reporter) properties(schemaURL string) []string {
	m, _ := r.schemaAt(schemaURL).(map[string]any)
	props, _ := m["properties"].(map[string]any)
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// schemaAt resolves the fragment of a schema location in the schema
// document (nil when it does not resolve).
func (r *reporter) schemaAt(schemaURL string) any {
	_, frag, _ := strings.Cut(schemaURL, "#")
	node, _ := r.vr.doc() // read when the library compiled the schema
	for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		if tok == "" {
			continue
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch n := node.(type) {
		case map[string]any:
			node = n[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n) {
				return nil
			}
			node = n[i]
		default:
			return nil
		}
	}
	return node
}

// nouns name the objects of each definition in messages.
var nouns = map[string]string{
	"Step": "step", "Provider": "provider", "Agent": "agent", "ForEach": "for_each", "Parallel": "parallel",
	"PromptTransport": "prompt_transport", "Retry": "retry", "WaitFor": "wait_for",
	"DependsOn": "depends_on", "Inject": "inject", "Cond": "condition", "Equals": "equals",
	"ExitCodeCond": "exit_code", "Contains": "contains", "Regex": "regex",
	"NumberCond": "number", "On": "on", "Handler": "handler", "Config": "config",
	"WorkerDef": "worker", "Node": "node", "Block": "block", "Transition": "transition",
	"SchemaDef": "schema", "Defaults": "defaults", "Send": "send",
}

// noun describes the object at loc, whose schema is at schemaURL:
// "step 'Prep'", "retry of step 'Prep'", "block 'Fix'", "workflow".
func (r *reporter) noun(schemaURL string, loc []string) string {
	def := defName(schemaURL)
	n, ok := nouns[def]
	if !ok {
		return r.vr.format
	}
	switch def {
	case "Provider", "Agent", "WorkerDef", "Node", "Block", "SchemaDef", "Handler":
		if len(loc) > 0 {
			n += " '" + loc[len(loc)-1] + "'"
		}
	case "Step":
		if obj, _ := r.lookup(loc); obj.Kind == KMap {
			if name := obj.Get("name"); name != nil && name.Kind == KString {
				return n + " '" + name.Str + "'"
			}
		}
		return n
	}
	if owner := r.owner(loc); owner != "" {
		n += " of " + owner
	}
	return n
}

// owner names the step or block that contains loc ("" when none).
func (r *reporter) owner(loc []string) string {
	for i := len(loc) - 2; i >= 0; i-- {
		if loc[i] == "steps" && isIndex(loc[i+1]) {
			if obj, _ := r.lookup(loc[:i+2]); obj.Kind == KMap {
				if name := obj.Get("name"); name != nil && name.Kind == KString {
					return "step '" + name.Str + "'"
				}
			}
			return "step"
		}
		if loc[i] == "blocks" && r.vr.format == "manifest" && i+2 < len(loc) {
			return "block '" + loc[i+1] + "'"
		}
	}
	return ""
}
