package compiler

import (
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"smith/isa"
	"smith/lang"
	"smith/manifest"
	"smith/source"
	"smith/workers/confine"
	"smith/workers/reply"
)

// Options carries what the caller knows beyond the document.
type Options struct {
	// ContextKeys are the keys given with --context/--context-file; they
	// count as known context keys for the ${context.KEY} checks.
	ContextKeys []string
	// Start is the node (Node:X or X) where a manifest's run starts
	// instead of its entry (smithvm run --start); "" keeps the entry. An
	// unknown node is E_UNKNOWN_TARGET. YAML workflows ignore it.
	Start string
	// ChecksOnly stops Compile after the checks (smithc check): no code is
	// generated and Result.Prog stays nil. Code generation reports nothing
	// about a document the checks accepted (only a compiler bug, as an
	// internal error), so the diagnostics are the same. The blocks of a
	// manifest's IR then carry no Spec.
	ChecksOnly bool
	// Layout, when set, is the project layout of the run the program is
	// compiled for (smithvm knows BASE and WORKSPACE, smithc does not):
	// every literal path is checked against it too, with confine's own
	// check, so a path that the run would refuse at its step (one into
	// BASE/.orchestrator when WORKSPACE is BASE) is E_PATH_ESCAPE before
	// the run is created. Paths with references are checked at use.
	// LoadProgram checks a .smbc's paths against it too (CheckLayout).
	Layout *confine.Dir
	// consume lets LowerManifest take the decoded manifest apart as it
	// lowers it (each block's transitions, the largest part, once
	// lowered) and collect garbage halfway, so that the second half
	// reuses the first half's memory. Compile sets it for a large
	// manifest that it alone holds (docs/performance.md, fifth pass,
	// third part).
	consume bool
}

// A lowerer holds what one lowering knows about the document: the names that
// references may use, and the diagnostics found so far.
type lowerer struct {
	file  string
	opt   Options
	diags source.Diagnostics

	// steps are the names ${steps.NAME} may use: every step of the workflow
	// (loop bodies included), or every block ID of a manifest.
	steps []string
	// stepSet holds the names of steps, for lookups in large documents.
	stepSet map[string]bool
	// contextKeys are the known first keys of ${context.KEY}.
	contextKeys []string
	// yaml is set for a YAML workflow (which has a context: section).
	yaml bool
	// config is the document's config (its commands for the internal
	// workers).
	config lang.Config
	// jsonSteps are the steps of a YAML workflow with output_capture:
	// json, the only ones ${steps.NAME.json} can read.
	jsonSteps map[string]bool
	// envAllowed are the names ${env.NAME} may read: env_allow and secrets.
	envAllowed []string
	// secrets are the document's secrets.
	secrets []string
	// agents are the document's agents, in document order.
	agents []*manifest.Agent
	// providers are the document's providers, in document order.
	providers []*manifest.Provider
	// schemas are the keys of the document's schemas, in document order.
	schemas []string
	// paramKeys maps a provider name to the provider_params keys of the
	// steps and workers that use it (for the E_TEMPLATE_KEY check).
	paramKeys map[string][]string
	// overrideKeys maps a provider name to the template keys that the
	// command_override and argv_template of the steps using it name (a
	// defaults key they use is used).
	overrideKeys map[string][]string
}

func newLowerer(file string, opt Options) *lowerer {
	return &lowerer{file: file, opt: opt, paramKeys: map[string][]string{}, overrideKeys: map[string][]string{}, stepSet: map[string]bool{}}
}

// addStep records a name that ${steps.NAME} may use.
func (l *lowerer) addStep(name string) {
	l.steps = append(l.steps, name)
	l.stepSet[name] = true
}

// hasStep reports whether ${steps.NAME} may use name.
func (l *lowerer) hasStep(name string) bool { return l.stepSet[name] }

// errorf reports a diagnostic at pos.
func (l *lowerer) errorf(pos source.Pos, code source.Code, format string, args ...any) {
	l.diags.Add(pos, code, format, args...)
}

// checkToolConfig warns when the internal worker named worker (at pos)
// runs a config command the document does not set: its step fails when it
// runs, as the workers define (W_CONFIG_MISSING).
func (l *lowerer) checkToolConfig(worker string, pos source.Pos) {
	iw := lang.LookupInternal(worker)
	if iw == nil || iw.Config == "" || len(l.config.Command(iw.Config)) > 0 {
		return
	}
	set := "config." + iw.Config + " in the manifest"
	if l.yaml {
		set = iw.Config + " at the workflow's top level"
	}
	l.errorf(pos, source.WConfigMissing, "worker '%s' runs config.%s, which this workflow does not set: the step fails when it runs (set %s: the command's argv)",
		worker, iw.Config, set)
}

// byOrder returns the values of a document map sorted by their document
// order, which order reads from a value.
func byOrder[T any](m map[string]T, order func(T) int) []T {
	out := make([]T, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	sort.SliceStable(out, func(i, j int) bool { return order(out[i]) < order(out[j]) })
	return out
}

// sortedProviders returns a providers map in document order.
func sortedProviders(m map[string]*manifest.Provider) []*manifest.Provider {
	ps := byOrder(m, func(p *manifest.Provider) int { return p.Order })
	return dropNil(ps)
}

func dropNil[T any](l []*T) []*T {
	out := l[:0]
	for _, v := range l {
		if v != nil {
			out = append(out, v)
		}
	}
	return out
}

// parse parses s as a template, reporting its syntax errors. ok is false
// when s is malformed; t then holds the references that do parse (each
// malformed one is reported and left out), for checking them.
func (l *lowerer) parse(s string, pos source.Pos) (lang.Template, bool) {
	t, ds := manifest.ParseTemplate(s, pos)
	if len(ds) > 0 {
		l.diags.Append(ds...)
		return t, false
	}
	return t, true
}

// template parses and checks one string value against sc (nil: syntax
// only) and returns its run-time form.
func (l *lowerer) template(s manifest.String, sc *scope) lang.Template {
	return l.templateAt(s.V, s.Pos, sc)
}

func (l *lowerer) templateAt(s string, pos source.Pos, sc *scope) lang.Template {
	t, ok := l.parse(s, pos)
	if sc != nil {
		for _, r := range t.Refs() {
			l.checkRef(r, sc)
		}
	}
	if !ok {
		return lang.Lit(s)
	}
	return t
}

// templatePtr is template for an optional value: nil when s is absent.
func (l *lowerer) templatePtr(s manifest.String, sc *scope) *lang.Template {
	if !s.Set {
		return nil
	}
	t := l.template(s, sc)
	return &t
}

// templates converts a list of strings (an argv).
func (l *lowerer) templates(sl manifest.StringList, sc *scope) []lang.Template {
	if !sl.Set {
		return nil
	}
	out := make([]lang.Template, len(sl.V))
	for i, s := range sl.V {
		out[i] = l.template(s, sc)
	}
	return out
}

// scalar converts an equals/contains/number operand: a string is a
// template, any other scalar its literal text.
func (l *lowerer) scalar(s manifest.Scalar, sc *scope) *lang.Template {
	if !s.Set {
		return nil
	}
	var t lang.Template
	if s.IsString {
		t = l.templateAt(s.Str, s.Pos, sc)
	} else {
		t = lang.Lit(s.Str)
	}
	return &t
}

// tvalue converts a document value whose strings are templates.
func (l *lowerer) tvalue(v *manifest.Value, sc *scope) isa.TValue {
	if v == nil {
		return isa.TValue{}
	}
	switch v.Kind {
	case manifest.KBool:
		return isa.TValue{Kind: isa.TBool, Bool: v.Bool}
	case manifest.KNumber:
		return isa.TValue{Kind: isa.TNumber, Num: string(v.AppendJSON(nil))}
	case manifest.KString:
		return isa.TValue{Kind: isa.TString, Str: l.templateAt(v.Str, v.Pos, sc)}
	case manifest.KList:
		out := isa.TValue{Kind: isa.TList, List: make([]isa.TValue, len(v.List))}
		for i, e := range v.List {
			out.List[i] = l.tvalue(e, sc)
		}
		return out
	case manifest.KMap:
		return isa.TValue{Kind: isa.TMap, Map: l.fields(v, sc)}
	}
	return isa.TValue{}
}

// fields converts the entries of an object value, in document order; nil
// for anything but an object.
func (l *lowerer) fields(v *manifest.Value, sc *scope) []isa.Field {
	if v == nil || v.Kind != manifest.KMap {
		return nil
	}
	out := make([]isa.Field, len(v.Map))
	for i, e := range v.Map {
		out[i] = isa.Field{Key: e.Key, Val: l.tvalue(e.Val, sc)}
	}
	return out
}

// mapKeys returns the keys of an object value in document order.
func mapKeys(v *manifest.Value) []string {
	if v == nil || v.Kind != manifest.KMap {
		return nil
	}
	out := make([]string, len(v.Map))
	for i, e := range v.Map {
		out[i] = e.Key
	}
	return out
}

// canonicalJSON returns the canonical JSON text of v, "" for no value.
func canonicalJSON(v *manifest.Value) string {
	if v == nil {
		return ""
	}
	return string(v.AppendJSON(nil))
}

// rawStrings returns the values of a string list.
func rawStrings(sl manifest.StringList) []string {
	if !sl.Set {
		return nil
	}
	out := make([]string, len(sl.V))
	for i, s := range sl.V {
		out[i] = s.V
	}
	return out
}

// fileStem returns the base name of a file without its extension.
func fileStem(file string) string {
	base := filepath.Base(filepath.ToSlash(file))
	return strings.TrimSuffix(base, filepath.Ext(base))
}

// lowerProviders checks and converts the document's providers. It runs
// after every step and worker is lowered, so that paramKeys is complete.
func (l *lowerer) lowerProviders() []isa.ProviderDef {
	var out []isa.ProviderDef
	for _, p := range l.providers {
		def := isa.ProviderDef{Name: p.Key, Command: rawStrings(p.Command), Defaults: l.fields(p.Defaults.V, &scope{})}
		l.providerRun(p, &def)
		known := append(append(lang.TemplateKeys[:len(lang.TemplateKeys):len(lang.TemplateKeys)], mapKeys(p.Defaults.V)...), l.paramKeys[p.Key]...)
		for _, s := range p.Command.V {
			l.checkTemplateKeys(p.Key, s, known)
		}
		if pt := p.PromptTransport; pt != nil {
			def.Transport = &isa.Transport{Mode: pt.Mode.V}
			for _, s := range pt.ArgvTemplate.V {
				l.checkTemplateKeys(p.Key, s, known)
				def.Transport.ArgvTemplate = append(def.Transport.ArgvTemplate, convTemplateLoose(s))
			}
		}
		l.checkDefaultKeys(p)
		if script := p.Defaults.V.Get(lang.KeyScript); script != nil {
			l.checkPath(mockDefaultScript(&def), script.Pos)
		}
		out = append(out, def)
	}
	return out
}

// providerKeys returns the keys that the defaults of provider name and a
// step's provider_params may set for it: a preset's own (lang.ParamKeys),
// model, and every key its templates (command, prompt_transport's
// argv_template) use; ok is false for a provider that is neither a preset
// nor a key of providers, or one that has no template to check against.
func (l *lowerer) providerKeys(name string) (keys []string, ok bool) {
	keys = []string{lang.KeyModel}
	preset := contains(lang.ProviderPresets[:], name)
	if preset {
		keys = lang.ParamKeys(name)
	}
	for _, p := range l.providers {
		if p.Key != name {
			continue
		}
		if !p.Command.Set && !preset {
			return nil, false // E_SCHEMA: it needs a command
		}
		keys = append(keys, templateKeys(p.Command.V)...)
		if pt := p.PromptTransport; pt != nil {
			keys = append(keys, templateKeys(pt.ArgvTemplate.V)...)
		}
		return keys, true
	}
	return keys, preset
}

// templateKeys are the ${key} roots that the elements of a provider
// template name, but for the keys Smith fills (PROMPT, ...; model stays,
// a default may set it) (a malformed reference of an element names none:
// its E_PARSE is reported where the element is lowered).
func templateKeys(l []manifest.String) []string {
	var out []string
	for _, s := range l {
		t, _ := manifest.ParseTemplate(s.V, s.Pos)
		for _, r := range t.Refs() {
			if k := r.Root(); k == lang.KeyModel || !contains(lang.TemplateKeys[:], k) {
				out = append(out, k) // PROMPT, INPUT_FILE, ...: Smith's to fill
			}
		}
	}
	return out
}

// checkDefaultKeys reports a key of provider p's defaults that neither p's
// templates nor the command_override of a step using p use: a misspelt
// key would otherwise be silently unused (E_TEMPLATE_KEY).
func (l *lowerer) checkDefaultKeys(p *manifest.Provider) {
	keys, ok := l.providerKeys(p.Key)
	if !ok || p.Defaults.V == nil || p.Defaults.V.Kind != manifest.KMap {
		return
	}
	keys = append(keys, l.overrideKeys[p.Key]...)
	for _, e := range p.Defaults.V.Map {
		if !contains(keys, e.Key) {
			l.errorf(e.KeyPos, source.ETemplateKey, "provider '%s' has a defaults key '%s' that no template of it uses%s",
				p.Key, e.Key, source.DidYouMeanOrList(e.Key, keys, "its keys"))
		}
	}
}

// checkParamKeys reports a key of a step's (or an AI worker's)
// provider_params that no template of its providers nor its own
// command_override or argv_template (own: their template keys) uses
// (E_TEMPLATE_KEY). A key a preset reads is never reported: a workflow
// goes from mock to a real CLI by its provider: line alone, its steps
// keeping their script (examples/team). what names the step or worker. A
// list with a provider that is unknown or has no template is not checked
// (its own error says why).
func (l *lowerer) checkParamKeys(what string, params *manifest.Value, providers []string, own []string) {
	if params == nil || params.Kind != manifest.KMap || len(providers) == 0 {
		return
	}
	keys := own
	for _, name := range lang.ProviderPresets {
		keys = append(keys, lang.ParamKeys(name)...)
	}
	for _, name := range providers {
		pk, ok := l.providerKeys(name)
		if !ok {
			return
		}
		keys = append(keys, pk...)
	}
	of := "provider '" + providers[0] + "'"
	if len(providers) > 1 {
		of = "providers '" + strings.Join(providers, "', '") + "'"
	}
	for _, e := range params.Map {
		if !contains(keys, e.Key) {
			l.errorf(e.KeyPos, source.ETemplateKey, "%s: provider_params key '%s' is used by no template of %s%s",
				what, e.Key, of, source.DidYouMeanOrList(e.Key, keys, "its keys"))
		}
	}
}

// convTemplateLoose parses an already checked provider template element.
func convTemplateLoose(s manifest.String) lang.Template {
	t, ds := manifest.ParseTemplate(s.V, s.Pos)
	if len(ds) > 0 {
		return lang.Lit(s.V)
	}
	return t
}

// checkTemplateKeys checks that every ${key} of one element of provider
// name's template is a template key.
func (l *lowerer) checkTemplateKeys(name string, s manifest.String, known []string) {
	t, _ := l.parse(s.V, s.Pos)
	for _, r := range t.Refs() {
		if contains(known, r.Root()) {
			continue
		}
		l.errorf(r.Pos, source.ETemplateKey, "provider '%s' uses template key '%s' that neither its defaults nor provider_params define%s",
			name, r.Root(), source.DidYouMean(r.Root(), known))
	}
}

// lowerSchemas converts the document's schemas, in document order.
func (l *lowerer) lowerSchemas(m map[string]*manifest.SchemaDef) []isa.SchemaDef {
	var out []isa.SchemaDef
	for _, s := range dropNil(byOrder(m, func(s *manifest.SchemaDef) int { return s.Order })) {
		l.schemas = append(l.schemas, s.Key)
		text := canonicalJSON(s.Schema.V)
		if at, problem := reply.CheckSchema(s.Key, text); problem != "" {
			l.errorf(valueAt(s.Schema.V, at).Pos, source.ESchema, "schema '%s' is not a valid JSON Schema (2020-12): %s", s.Key, problem)
		}
		out = append(out, isa.SchemaDef{Name: s.Key, Schema: text})
	}
	return out
}

// valueAt returns the value at the JSON Pointer tokens path inside v, or
// the deepest value on the way that exists.
func valueAt(v *manifest.Value, path []string) *manifest.Value {
	for _, tok := range path {
		var next *manifest.Value
		switch v.Kind {
		case manifest.KMap:
			next = v.Get(tok)
		case manifest.KList:
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(v.List) {
				next = v.List[i]
			}
		}
		if next == nil {
			return v
		}
		v = next
	}
	return v
}

// checkSchema checks a validation_schema/validationSchema name.
func (l *lowerer) checkSchema(s manifest.String) string {
	if !s.Set {
		return ""
	}
	if contains(lang.BuiltinSchemas[:], s.V) || contains(l.schemas, s.V) {
		return s.V
	}
	known := append(lang.BuiltinSchemas[:len(lang.BuiltinSchemas):len(lang.BuiltinSchemas)], l.schemas...)
	l.errorf(s.Pos, source.EUnknownSchema, "validation schema '%s' is neither a built-in schema nor a key of schemas%s",
		s.V, source.DidYouMean(s.V, known))
	return s.V
}

// providerNames returns every provider name a step may use: the presets,
// then the document's providers.
func (l *lowerer) providerNames() []string {
	out := lang.ProviderPresets[:len(lang.ProviderPresets):len(lang.ProviderPresets)]
	for _, p := range l.providers {
		if !contains(out, p.Key) {
			out = append(out, p.Key)
		}
	}
	return out
}

// checkProviders checks a list of provider names and returns them; params
// are the provider_params keys of the step or worker that uses them.
func (l *lowerer) checkProviders(sl manifest.StringOrList, params []string) []string {
	if !sl.Set {
		return nil
	}
	known := l.providerNames()
	out := make([]string, 0, len(sl.V))
	for _, s := range sl.V {
		out = append(out, s.V)
		if !contains(known, s.V) {
			l.errorf(s.Pos, source.EUnknownProv, "provider '%s' is neither a built-in preset nor a key of providers%s",
				s.V, source.DidYouMean(s.V, known))
			continue
		}
		l.paramKeys[s.V] = append(l.paramKeys[s.V], params...)
	}
	return out
}
