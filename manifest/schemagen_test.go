package manifest

// The generation of the two formats' JSON Schemas from the Go types, with
// invopop/jsonschema: what workflow.schema.json and manifest.schema.json
// hold. Only the tests generate them (TestSchemaGolden compares the files
// with the generator; -update rewrites them): the binaries embed the
// files and do not link the reflection library.

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/invopop/jsonschema"

	"smith/lang"
)

// stepKinds are the keys of which a step has exactly one: those of the
// fields of Step tagged step:"kind", in field order.
var stepKinds = func() []string {
	var keys []string
	t := reflect.TypeFor[Step]()
	for i := range t.NumField() {
		if f := t.Field(i); f.Tag.Get("step") == "kind" {
			key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			keys = append(keys, key)
		}
	}
	return keys
}()

// Permissions are the values of permissions: (CONTRACT 5), least first.
var Permissions = []string{"read", "edit", "full"}

// stepNamePattern is what a step name must match.
const stepNamePattern = `^[A-Za-z_][A-Za-z0-9_-]*$`

// compareOps are the operators of exit_code and number conditions.
var compareOps = []string{"==", "!=", ">", "<", ">=", "<="}

// generateWorkflowSchema and generateManifestSchema generate the schemas
// from the Go types (what workflow.schema.json and manifest.schema.json
// hold).
func generateWorkflowSchema() []byte {
	return schemaText(&Workflow{}, WorkflowSchemaID, "Workflow")
}

func generateManifestSchema() []byte {
	return schemaText(&Manifest{}, ManifestSchemaID, "Manifest")
}

// schemaText reflects the type of v, refines the result, describes every
// key (root names the root object in keyDocs) and prints it.
func schemaText(v any, id, root string) []byte {
	r := &jsonschema.Reflector{Anonymous: true, ExpandedStruct: true}
	s := r.Reflect(v)
	s.ID = jsonschema.ID(id)
	refine(s.Definitions)
	if _, ok := s.Properties.Get("isolation"); ok {
		s.Properties.Set("isolation", enumSchema(lang.IsolationModes...)) // a workflow's own (the root)
	}
	describe(root, s)
	limit(root, s)
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		panic(fmt.Sprintf("internal error: print schema %s: %v", id, err))
	}
	return append(b, '\n')
}

// refine adds what the json tags cannot say: enums, the step name pattern,
// and "exactly one of" for steps, conditions and handlers. Definitions the
// document does not use are skipped.
func refine(defs jsonschema.Definitions) {
	if s := defs["Step"]; s != nil {
		s.Properties.Set("name", &jsonschema.Schema{Type: "string", Pattern: stepNamePattern})
		s.Properties.Set("output_capture", enumSchema("text", "lines", "json"))
		// A step with agent: and none of the kinds is a provider step on
		// the agent's provider (CONTRACT 3).
		s.OneOf = append(exactlyOne(stepKinds), &jsonschema.Schema{
			Required: []string{"agent"},
			Not:      &jsonschema.Schema{AnyOf: exactlyOne(stepKinds)},
		})
	}
	for _, name := range []string{"Step", "Agent", "Defaults", "WorkerDef"} {
		if s := defs[name]; s != nil {
			s.Properties.Set("permissions", enumSchema(Permissions...))
		}
	}
	if s := defs["On"]; s != nil {
		s.Properties.Set("signals", &jsonschema.Schema{
			Type:                 "object",
			PropertyNames:        &jsonschema.Schema{Pattern: lang.SignalPattern},
			AdditionalProperties: &jsonschema.Schema{Ref: "#/$defs/Handler"},
		})
		delete(defs, "SignalHandler")
	}
	if s := defs["Parallel"]; s != nil {
		s.Required = []string{"branches"}
		if b, ok := s.Properties.Get("branches"); ok && b != nil {
			b.PropertyNames = &jsonschema.Schema{Pattern: stepNamePattern}
			one := uint64(1)
			b.MinProperties = &one
		}
	}
	if s := defs["Send"]; s != nil {
		s.OneOf = exactlyOne([]string{"file", "content"})
	}
	if s := defs["PromptTransport"]; s != nil {
		s.Properties.Set("mode", enumSchema("argv", "stdin", "temp_file"))
	}
	if s := defs["Provider"]; s != nil {
		s.Properties.Set("home", enumSchema(lang.HomeModes...))
	}
	if s := defs["Agent"]; s != nil {
		s.Properties.Set("session", enumSchema(lang.SessionModes...))
	}
	if s := defs["Config"]; s != nil {
		s.Properties.Set("isolation", enumSchema(lang.IsolationModes...))
	}
	if s := defs["ExitCodeCond"]; s != nil {
		s.Properties.Set("op", enumSchema(compareOps...))
	}
	if s := defs["NumberCond"]; s != nil {
		s.Properties.Set("op", enumSchema(compareOps...))
	}
	// A condition is one of its keys, and so is a handler.
	for _, name := range []string{"Cond", "Handler"} {
		if s := defs[name]; s != nil {
			var keys []string
			for k := range s.Properties.KeysFromOldest() {
				keys = append(keys, k)
			}
			s.OneOf = exactlyOne(keys)
		}
	}
}

func enumSchema(vals ...string) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "string"}
	for _, v := range vals {
		s.Enum = append(s.Enum, v)
	}
	return s
}

// exactlyOne is a oneOf whose branches each require one of keys.
func exactlyOne(keys []string) []*jsonschema.Schema {
	out := make([]*jsonschema.Schema, len(keys))
	for i, k := range keys {
		out[i] = &jsonschema.Schema{Required: []string{k}}
	}
	return out
}

func stringSchema() *jsonschema.Schema { return &jsonschema.Schema{Type: "string"} }

func stringArraySchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "array", Items: stringSchema()}
}

// JSONSchema is the schema of a string value.
func (String) JSONSchema() *jsonschema.Schema { return stringSchema() }

// JSONSchema is the schema of a number value.
func (Number) JSONSchema() *jsonschema.Schema { return &jsonschema.Schema{Type: "number"} }

// JSONSchema is the schema of a boolean value.
func (Bool) JSONSchema() *jsonschema.Schema { return &jsonschema.Schema{Type: "boolean"} }

// JSONSchema is the schema of a list of strings.
func (StringList) JSONSchema() *jsonschema.Schema { return stringArraySchema() }

// JSONSchema is the schema of a string or a list of strings.
func (StringOrList) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{stringSchema(), stringArraySchema()}}
}

// JSONSchema is the schema of a string, number or boolean.
func (Scalar) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
		stringSchema(), {Type: "number"}, {Type: "boolean"},
	}}
}

// JSONSchema is the schema of an object of strings.
func (StringMap) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", AdditionalProperties: stringSchema()}
}

// JSONSchema is the schema of a value of any shape (the true schema).
func (Free) JSONSchema() *jsonschema.Schema { return &jsonschema.Schema{} }

// JSONSchema is the schema of inject: a boolean or an object.
func (Inject) JSONSchema() *jsonschema.Schema {
	props := jsonschema.NewProperties()
	props.Set("mode", enumSchema("list", "content", "none"))
	props.Set("instruction", stringSchema())
	props.Set("position", enumSchema("prepend", "append"))
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
		{Type: "boolean"},
		{Type: "object", Properties: props, AdditionalProperties: jsonschema.FalseSchema},
	}}
}

// JSONSchema is the schema of a named schema: a JSON Schema document, which
// is an object or a boolean.
func (SchemaDef) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Type: "object"}, {Type: "boolean"}}}
}

// A KeyDoc documents one key of a source format: what it means and, when
// the key may be left out, the value that applies then ("" when there is
// no default worth naming).
type KeyDoc struct {
	Desc    string
	Default string
}

// keyDocs documents every key of both formats, keyed "Object.key": Object
// is the schema definition ($defs name, or Workflow/Manifest for the
// roots). Its one source is the doc comments of the fields of types.go
// (fieldKeyDocs, which go generate ./manifest writes from them), with
// {presets} standing for lang's list of provider presets. The printed
// schemas carry the descriptions (so an editor shows them) and
// docs/workflow-reference.md and docs/manifest-reference.md print them
// (TestSchemaDescriptions and TestReferenceDocs keep all three in step).
// A step's key that only some steps read says so (stepClassDocs).
// A numeric key states its range (withLimits).
var keyDocs = withStepClasses(withLimits(expandKeyDocs(fieldKeyDocs)))

// withLimits adds to the description of each numeric key the rule of its
// limit tag ("An integer from 1 to 60000."), if any.
func withLimits(docs map[string]KeyDoc) map[string]KeyDoc {
	for k, lim := range limits() {
		if rule := lim.Rule(); rule != "" {
			d := docs[k]
			d.Desc = strings.TrimSpace(d.Desc + " " + strings.ToUpper(rule[:1]) + rule[1:] + ".")
			docs[k] = d
		}
	}
	return docs
}

// stepClassDocs is the sentence that a step key's description ends with,
// by the class of its step tag (StepKeys): which steps read the key.
var stepClassDocs = map[string]string{
	StepProvider: "Applies only to provider steps.",
	StepProcess:  "Applies only to steps that run a process (command, provider or worker).",
}

// withStepClasses adds to the description of each key of Step the
// sentence of its class, if any.
func withStepClasses(docs map[string]KeyDoc) map[string]KeyDoc {
	for class, sentence := range stepClassDocs {
		for _, k := range StepKeys(class) {
			d := docs["Step."+k.Key]
			d.Desc = strings.TrimSpace(d.Desc + " " + sentence)
			docs["Step."+k.Key] = d
		}
	}
	return docs
}

// expandKeyDocs returns docs with {presets} written out as the list of
// lang.ProviderPresets ("claude, gemini, codex and mock").
func expandKeyDocs(docs map[string]KeyDoc) map[string]KeyDoc {
	names := lang.ProviderPresets[:]
	list := strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
	out := make(map[string]KeyDoc, len(docs))
	for k, d := range docs {
		d.Desc = strings.ReplaceAll(d.Desc, "{presets}", list)
		d.Default = strings.ReplaceAll(d.Default, "{presets}", list)
		out[k] = d
	}
	return out
}

// KeyDocFor returns the documentation of key in object (a $defs name, or
// Workflow/Manifest for the roots).
func KeyDocFor(object, key string) (KeyDoc, bool) {
	d, ok := keyDocs[object+"."+key]
	return d, ok
}

// describe sets the description of every property of s (named object)
// and of its definitions from keyDocs. A key with no entry keeps no
// description: TestSchemaDescriptions names it.
func describe(object string, s *jsonschema.Schema) {
	describeProps(object, s)
	names := make([]string, 0, len(s.Definitions))
	for n := range s.Definitions {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		describeProps(n, s.Definitions[n])
	}
}

// limit sets the range of every numeric key of s (named object) and of its
// definitions from the keys' limit tags (limits): type integer (instead of
// the $ref to Number), minimum or exclusiveMinimum, and maximum. The
// compiler checks the same table.
func limit(object string, s *jsonschema.Schema) {
	limitProps(object, s)
	for n, d := range s.Definitions {
		limitProps(n, d)
	}
}

func limitProps(object string, s *jsonschema.Schema) {
	if s == nil || s.Properties == nil {
		return
	}
	for pair := s.Properties.Oldest(); pair != nil; pair = pair.Next() {
		lim, ok := limits()[object+"."+pair.Key]
		if !ok || lim.Any || pair.Value == nil {
			continue
		}
		v := pair.Value
		if lim.MinExclusive {
			v.ExclusiveMinimum = json.Number(bound(lim.Min))
		} else {
			v.Minimum = json.Number(bound(lim.Min))
		}
		switch {
		case lim.Int:
			// An integer, said without the $ref to Number: an editor
			// (VS Code's JSON service) merges the $ref's type number over
			// a type beside it.
			v.Ref, v.Type = "", "integer"
			v.Maximum = json.Number(bound(lim.IntMax()))
		case lim.HasMax:
			v.Maximum = json.Number(bound(lim.Max))
		}
	}
}

func describeProps(object string, s *jsonschema.Schema) {
	if s == nil {
		return
	}
	for _, alt := range s.AnyOf {
		describeProps(object, alt)
	}
	if s.Properties == nil {
		return
	}
	for pair := s.Properties.Oldest(); pair != nil; pair = pair.Next() {
		d, ok := keyDocs[object+"."+pair.Key]
		if !ok || pair.Value == nil {
			continue
		}
		desc := d.Desc
		if d.Default != "" {
			desc = fmt.Sprintf("%s Default: %s.", desc, d.Default)
		}
		pair.Value.Description = desc
	}
}
