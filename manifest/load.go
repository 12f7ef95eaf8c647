package manifest

import (
	"bytes"
	"path/filepath"
	"strings"

	"smith/source"
)

// LoadWorkflow reads a YAML step workflow: parse, validate against the
// workflow schema, decode. The result is nil only when the document has no
// usable shape (a syntax error, or a top level that is not an object);
// otherwise it is decoded even when validation reported errors, so that
// later checks can run. The diagnostics are sorted.
func LoadWorkflow(name string, src []byte) (*Workflow, source.Diagnostics) {
	return loadWorkflow(nil, name, src)
}

// loadWorkflow is LoadWorkflow with a compiled schema (nil: compile one).
func loadWorkflow(vr *Validator, name string, src []byte) (*Workflow, source.Diagnostics) {
	return load(vr, name, src, ParseYAML, newLazyWorkflowValidator, DecodeWorkflow)
}

// LoadManifest reads a workflows.json manifest: parse, validate against the
// manifest schema, decode, as LoadWorkflow does. A valid manifest is read
// node by node, never holding the tree of more than one node (stream.go).
func LoadManifest(name string, src []byte) (*Manifest, source.Diagnostics) {
	return loadManifest(nil, name, src)
}

// loadManifest is LoadManifest with a compiled schema (nil: compile one):
// node by node, else, for a document that is not valid by the fast
// validator, whole.
func loadManifest(vr *Validator, name string, src []byte) (*Manifest, source.Diagnostics) {
	if vr == nil {
		vr = mustValidator(newLazyManifestValidator())
	}
	if mf, ok := streamManifest(vr, name, src); ok {
		return mf, nil
	}
	return load(vr, name, src, parseJSONExplained, newLazyManifestValidator, DecodeManifest)
}

// parseJSONExplained is ParseJSON with its syntax errors in words.
func parseJSONExplained(name string, src []byte) (*Value, source.Diagnostics) {
	v, ds := ParseJSON(name, src)
	return v, explainJSON(src, ds)
}

// load parses src, validates it against its format's schema (vr, or one
// newValidator compiles) and decodes it: nil when the document has no
// usable shape, decoded even when validation reported errors. The
// diagnostics are sorted.
func load[T any](vr *Validator, name string, src []byte,
	parse func(string, []byte) (*Value, source.Diagnostics),
	newValidator func() (*Validator, error),
	decode func(string, *Value) *T) (*T, source.Diagnostics) {
	v, ds := parse(name, src)
	if v == nil || v.Kind != KMap {
		ds.Sort()
		return nil, ds
	}
	if vr == nil {
		vr = mustValidator(newValidator())
	}
	ds = append(ds, vr.Validate(v)...)
	ds.Sort()
	return decode(name, v), ds
}

// Load reads a workflow or a manifest, chosen by the file name's extension
// (.yaml/.yml: workflow, .json: manifest) or, for other names, by the first
// non-blank byte ('{': manifest, else workflow). Exactly one of wf and mf
// is non-nil unless the document has no usable shape.
func Load(name string, src []byte) (wf *Workflow, mf *Manifest, ds source.Diagnostics) {
	if IsManifest(name, src) {
		mf, ds = LoadManifest(name, src)
		return nil, mf, ds
	}
	wf, ds = LoadWorkflow(name, src)
	return wf, nil, ds
}

// IsManifest reports whether Load reads name (with content src) as a
// workflows.json manifest rather than a YAML workflow.
func IsManifest(name string, src []byte) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml":
		return false
	case ".json":
		return true
	}
	t := bytes.TrimLeft(src, " \t\r\n\ufeff")
	return len(t) > 0 && t[0] == '{'
}

// mustValidator panics when a generated schema does not compile: that is a
// bug in this package, never a problem of the document.
func mustValidator(vr *Validator, err error) *Validator {
	if err != nil {
		panic("internal error: " + err.Error())
	}
	return vr
}
