package manifest

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/invopop/jsonschema"

	"smith/lang"
)

// schemaDoc is a printed schema read back as plain JSON.
type schemaDoc map[string]any

func printedSchema(t *testing.T, text []byte) schemaDoc {
	t.Helper()
	var s schemaDoc
	if err := json.Unmarshal(text, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// objects returns the schema's objects with properties: the root under
// rootName and every $defs entry, each as its ordered property names.
func objects(t *testing.T, text []byte, rootName string) (names []string, props map[string][]string, bodies map[string]map[string]any) {
	t.Helper()
	s := printedSchema(t, text)
	props = map[string][]string{}
	bodies = map[string]map[string]any{}
	var typed jsonschema.Schema
	if err := json.Unmarshal(text, &typed); err != nil {
		t.Fatal(err)
	}
	add := func(name string, obj map[string]any) {
		ts := &typed
		if name != rootName {
			ts = typed.Definitions[name]
		}
		ps := propsOf(ts)
		if len(ps) == 0 {
			return
		}
		names = append(names, name)
		props[name] = ps
		bodies[name] = obj
	}
	add(rootName, s)
	defs, _ := s["$defs"].(map[string]any)
	var dn []string
	for n := range defs {
		dn = append(dn, n)
	}
	sort.Strings(dn)
	for _, n := range dn {
		if o, ok := defs[n].(map[string]any); ok {
			add(n, o)
		}
	}
	return names, props, bodies
}

// propsOf lists an object's property names in the printed order, looking
// into anyOf alternatives (inject: true | {mode, ...}).
func propsOf(s *jsonschema.Schema) []string {
	if s == nil {
		return nil
	}
	var out []string
	if s.Properties != nil {
		for p := s.Properties.Oldest(); p != nil; p = p.Next() {
			out = append(out, p.Key)
		}
	}
	for _, a := range s.AnyOf {
		out = append(out, propsOf(a)...)
	}
	return out
}

// property finds a property's schema in obj (or its anyOf alternatives).
func property(obj map[string]any, key string) map[string]any {
	if p, ok := obj["properties"].(map[string]any); ok {
		if v, ok := p[key].(map[string]any); ok {
			return v
		}
	}
	if alts, ok := obj["anyOf"].([]any); ok {
		for _, a := range alts {
			if o, ok := a.(map[string]any); ok {
				if v := property(o, key); v != nil {
					return v
				}
			}
		}
	}
	return nil
}

// pendingKeys are documented ahead of a feature being built at the same
// time (parallel steps, CONTRACT 12.3): keyDocs may hold them before the
// schema does. Remove an entry once the schema has the key.
var pendingKeys = map[string]bool{}

// TestSchemaDescriptions: every key of both printed schemas carries a
// description (so an editor can explain it), and keyDocs documents no key
// that the schemas lack.
func TestSchemaDescriptions(t *testing.T) {
	used := map[string]bool{}
	for _, f := range []struct {
		root string
		text []byte
	}{{"Workflow", WorkflowSchema()}, {"Manifest", ManifestSchema()}} {
		names, props, bodies := objects(t, f.text, f.root)
		for _, n := range names {
			for _, k := range props[n] {
				used[n+"."+k] = true
				p := property(bodies[n], k)
				if d, _ := p["description"].(string); strings.TrimSpace(d) == "" {
					t.Errorf("smithc schema %s: %s.%s has no description: write it as the doc comment of its field in manifest/types.go and run go generate ./manifest",
						strings.ToLower(f.root), n, k)
				}
			}
		}
	}
	for k := range keyDocs {
		if !used[k] && !pendingKeys[k] {
			t.Errorf("keyDocs documents %s, which neither schema has", k)
		}
	}
}

var keysRegion = regexp.MustCompile(`(?s)<!-- keys ([A-Za-z]+) -->\n.*?<!-- end keys -->\n`)

// TestReferenceDocs: docs/workflow-reference.md and docs/manifest-reference.md
// hold one generated key table per object of the schema (root and $defs),
// each exactly as generated from the schema and keyDocs, so the reference
// documents every key and only keys that exist. Regenerate with
// go test ./manifest -run TestReferenceDocs -update.
func TestReferenceDocs(t *testing.T) {
	for _, f := range []struct {
		doc, root string
		text      []byte
	}{
		{"../docs/workflow-reference.md", "Workflow", WorkflowSchema()},
		{"../docs/manifest-reference.md", "Manifest", ManifestSchema()},
	} {
		data, err := os.ReadFile(f.doc)
		if err != nil {
			t.Fatal(err)
		}
		names, props, bodies := objects(t, f.text, f.root)
		known := map[string]bool{}
		for _, n := range names {
			known[n] = true
		}
		seen := map[string]bool{}
		got := keysRegion.ReplaceAllStringFunc(string(data), func(region string) string {
			n := keysRegion.FindStringSubmatch(region)[1]
			if !known[n] && pendingObject(n) {
				return region // generated once the schema has it
			}
			if !known[n] {
				t.Errorf("%s: a key table for %s, which the schema does not have", f.doc, n)
				return region
			}
			if seen[n] {
				t.Errorf("%s: two key tables for %s", f.doc, n)
			}
			seen[n] = true
			return keyTable(n, props[n], bodies[n])
		})
		for _, n := range names {
			if !seen[n] {
				t.Errorf("%s: no key table for %s: add a line <!-- keys %s --> followed by <!-- end keys --> and run go test ./manifest -run TestReferenceDocs -update", f.doc, n, n)
			}
		}
		if got == string(data) {
			continue
		}
		if *update {
			if err := os.WriteFile(f.doc, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s is stale: run go test ./manifest -run TestReferenceDocs -update", f.doc)
	}
}

// keyTable is the generated table of one object.
func keyTable(name string, keys []string, obj map[string]any) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<!-- keys %s -->\n", name)
	b.WriteString("| key | type | default | meaning |\n| --- | --- | --- | --- |\n")
	req := map[string]bool{}
	if r, ok := obj["required"].([]any); ok {
		for _, k := range r {
			req[fmt.Sprint(k)] = true
		}
	}
	for _, k := range keys {
		d := keyDocs[name+"."+k]
		def := d.Default
		switch {
		case req[k]:
			def = "required"
		case def == "":
			def = "-"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", k, typeName(property(obj, k)), cell(def), cell(d.Desc))
	}
	b.WriteString("<!-- end keys -->\n")
	return b.String()
}

// cell escapes text for a markdown table cell: pipes, angle brackets
// (<Step> is not a tag), asterisks and underscores that start a word
// (_end is not emphasis).
func cell(s string) string {
	s = strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;", "*", `\*`).Replace(s)
	return wordUnderscore.ReplaceAllString(s, `$1\_`)
}

var wordUnderscore = regexp.MustCompile(`(^|[^A-Za-z0-9_])_`)

// typeName renders a property's schema as a short type.
func typeName(p map[string]any) string {
	if p == nil {
		return "any"
	}
	if ref, ok := p["$ref"].(string); ok {
		n := strings.TrimPrefix(ref, "#/$defs/")
		switch n {
		case "String":
			return "string"
		case "Number":
			return "number"
		case "Bool":
			return "boolean"
		case "StringList":
			return "list of strings"
		case "StringOrList":
			return "string or list of strings"
		case "StringMap":
			return "map of strings"
		case "Free":
			return "any"
		case "Scalar":
			return "string, number or boolean"
		case "Inject":
			return "boolean or object"
		case "SchemaDef":
			return "JSON Schema"
		}
		return "[" + n + "](#" + strings.ToLower(n) + ")"
	}
	if e, ok := p["enum"].([]any); ok {
		var vs []string
		for _, v := range e {
			vs = append(vs, fmt.Sprintf("`%v`", v))
		}
		return strings.Join(vs, " \\| ")
	}
	if alts, ok := p["anyOf"].([]any); ok {
		var vs []string
		for _, a := range alts {
			if o, ok := a.(map[string]any); ok {
				vs = append(vs, typeName(o))
			}
		}
		return strings.Join(vs, " or ")
	}
	switch t, _ := p["type"].(string); t {
	case "array":
		it, _ := p["items"].(map[string]any)
		return "list of " + typeName(it)
	case "object":
		if ap, ok := p["additionalProperties"].(map[string]any); ok {
			return "map of name to " + typeName(ap)
		}
		return "object"
	case "":
		return "any"
	default:
		return t
	}
}

// pendingObject reports whether every pending key names object n.
func pendingObject(n string) bool {
	for k := range pendingKeys {
		if strings.HasPrefix(k, n+".") {
			return true
		}
	}
	return false
}

// TestPresetProse: the schemas' prose names the provider presets from
// lang's list, never by hand: each description written {presets} names
// every preset, and no doc comment of types.go lists them itself.
func TestPresetProse(t *testing.T) {
	for _, k := range []string{"Workflow.providers", "Manifest.providers"} {
		if !strings.Contains(fieldKeyDocs[k].Desc, "{presets}") {
			t.Errorf("%s: its doc comment in types.go does not write {presets}", k)
		}
		for _, p := range lang.ProviderPresets {
			if !strings.Contains(keyDocs[k].Desc, p) {
				t.Errorf("%s: description %q does not name preset %s", k, keyDocs[k].Desc, p)
			}
		}
	}
	for k, d := range fieldKeyDocs {
		if strings.Contains(d.Desc+d.Default, lang.ProviderPresets[0]+", ") {
			t.Errorf("%s lists the presets by hand; write {presets}", k)
		}
	}
}

// TestStepKeysClassified: every key of a step says which steps read it
// (its field's step tag is one of StepClasses), so that a new key cannot
// go unchecked by the compiler or undocumented in the reference; and the
// tags agree with what the schema and the docs say.
func TestStepKeysClassified(t *testing.T) {
	st := reflect.TypeFor[Step]()
	for i := range st.NumField() {
		f := st.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if key == "" || key == "-" {
			continue
		}
		if c := f.Tag.Get("step"); !slices.Contains(StepClasses, c) {
			t.Errorf("Step.%s (key %s): step tag %q, want one of %v: say which steps read the key (see the comment of Step)", f.Name, key, c, StepClasses)
		}
	}
	for class, sentence := range stepClassDocs {
		for _, k := range StepKeys(class) {
			if d := keyDocs["Step."+k.Key]; !strings.HasSuffix(d.Desc, sentence) {
				t.Errorf("the description of step key %s does not end with %q: %q", k.Key, sentence, d.Desc)
			}
		}
	}
}

// TestNumberKeysLimited: every numeric key of both formats has a limit tag
// (limit:"-" for any number), so that the compiler, the schemas and the
// reference docs read its range from one place; and the schemas carry it.
func TestNumberKeysLimited(t *testing.T) {
	eachKey(func(t0 reflect.Type, f reflect.StructField, key string) {
		if f.Type != reflect.TypeFor[Number]() && f.Type != reflect.TypeFor[*Number]() {
			return
		}
		if _, ok := f.Tag.Lookup("limit"); !ok {
			t.Errorf("%s.%s (key %s) is a number without a limit tag: give its range (see Limit), or limit:\"-\"", t0.Name(), f.Name, key)
		}
	})
	for _, f := range []struct {
		root string
		text []byte
	}{{"Workflow", WorkflowSchema()}, {"Manifest", ManifestSchema()}} {
		var doc struct {
			Defs map[string]any `json:"$defs"`
		}
		if err := json.Unmarshal(f.text, &doc); err != nil {
			t.Fatal(err)
		}
		for k, lim := range limits() {
			obj, key, _ := strings.Cut(k, ".")
			def, _ := doc.Defs[obj].(map[string]any)
			props, _ := def["properties"].(map[string]any)
			p, ok := props[key].(map[string]any)
			if !ok || lim.Any {
				continue
			}
			min := "minimum"
			if lim.MinExclusive {
				min = "exclusiveMinimum"
			}
			if got := fmt.Sprint(p[min]); got != bound(lim.Min) {
				t.Errorf("%s schema: %s has %s %s, want %s", f.root, k, min, got, bound(lim.Min))
			}
		}
	}
}
