package manifest

import (
	"strconv"

	"smith/source"
)

//go:generate go run ./internal/decodegen

// Decoding fills the raw types of types.go from a Value tree. It trusts
// nothing: schema validation has already reported every value of the wrong
// shape, and decoding skips such values silently, so it never panics.
// Keyed entries (providers, agents, schemas, workers, nodes, blocks) are
// positioned at their key, which is where the document names them.
//
// The switch on the keys of each object type is generated from the json
// tags of types.go (decode_gen.go, written by internal/decodegen: go
// generate ./manifest); this file holds the scalars' decoders, the lists
// and maps, and the objects that are not decoded the usual way.

// A decoder holds what decoding one document keeps across its objects.
type decoder struct {
	// blocks counts the blocks decoded so far: Block.Order is document
	// order across the whole manifest.
	blocks int
}

// DecodeWorkflow fills a Workflow from the tree of a YAML workflow. name is
// the file name recorded in Workflow.File.
func DecodeWorkflow(name string, v *Value) *Workflow {
	wf := &Workflow{File: name}
	decodeRoot(v, &wf.Pos, func(d *decoder, m []MapEntry) { d.fieldsWorkflow(wf, m) })
	return wf
}

// DecodeManifest fills a Manifest from the tree of a workflows.json
// manifest. Block.Order counts blocks across the whole manifest.
func DecodeManifest(name string, v *Value) *Manifest {
	mf := &Manifest{File: name}
	decodeRoot(v, &mf.Pos, func(d *decoder, m []MapEntry) { d.fieldsManifest(mf, m) })
	return mf
}

// decodeRoot decodes v, a document's top level, when it is an object:
// its position into pos, its entries with fields.
func decodeRoot(v *Value, pos *source.Pos, fields func(*decoder, []MapEntry)) {
	if isMap(v) {
		*pos = v.Pos
		fields(&decoder{}, v.Map)
	}
}

// decFree keeps v, a value that outlives the document's tree, as a copy of
// its own whose values are carved from one array: the JSON reader carves
// the tree's scalars from slabs shared with the rest of the tree
// (jsonParser.newLeaf), which a subtree kept by reference would keep
// alive, up to the whole tree's scalars for the static_memory of every
// node of a large manifest.
func decFree(v *Value) Free {
	if v == nil {
		return Free{}
	}
	vals := make([]Value, 0, countValues(v))
	return Free{V: copyValue(v, &vals)}
}

// countValues counts the values of the tree v.
func countValues(v *Value) int {
	n := 1
	for _, e := range v.List {
		if e != nil {
			n += countValues(e)
		}
	}
	for _, e := range v.Map {
		if e.Val != nil {
			n += countValues(e.Val)
		}
	}
	return n
}

// copyValue copies the tree v into vals, which has room for it.
func copyValue(v *Value, vals *[]Value) *Value {
	if v == nil {
		return nil
	}
	*vals = append(*vals, *v)
	c := &(*vals)[len(*vals)-1]
	if v.List != nil {
		c.List = make([]*Value, len(v.List))
		for i, e := range v.List {
			c.List[i] = copyValue(e, vals)
		}
	}
	if v.Map != nil {
		c.Map = make([]MapEntry, len(v.Map))
		for i, e := range v.Map {
			c.Map[i] = MapEntry{Key: e.Key, KeyPos: e.KeyPos, Val: copyValue(e.Val, vals)}
		}
	}
	return c
}

func isMap(v *Value) bool { return v != nil && v.Kind == KMap }

func decString(v *Value) String {
	if v == nil || v.Kind != KString {
		return String{}
	}
	return String{V: v.Str, Pos: v.Pos, Set: true}
}

func decNumber(v *Value) Number {
	if v == nil || v.Kind != KNumber {
		return Number{}
	}
	return Number{V: v.Num, Pos: v.Pos, Set: true}
}

func decBool(v *Value) Bool {
	if v == nil || v.Kind != KBool {
		return Bool{}
	}
	return Bool{V: v.Bool, Pos: v.Pos, Set: true}
}

// decStrings returns the string elements of a list, skipping the others.
func decStrings(v *Value) []String {
	out := make([]String, 0, len(v.List))
	for _, e := range v.List {
		if s := decString(e); s.Set {
			out = append(out, s)
		}
	}
	return out
}

func decStringList(v *Value) StringList {
	if v == nil || v.Kind != KList {
		return StringList{}
	}
	return StringList{V: decStrings(v), Pos: v.Pos, Set: true}
}

func decStringOrList(v *Value) StringOrList {
	switch {
	case v == nil:
		return StringOrList{}
	case v.Kind == KString:
		return StringOrList{V: []String{decString(v)}, Pos: v.Pos, Set: true}
	case v.Kind == KList:
		return StringOrList{V: decStrings(v), Pos: v.Pos, Set: true}
	}
	return StringOrList{}
}

func decScalar(v *Value) Scalar {
	if v == nil {
		return Scalar{}
	}
	switch v.Kind {
	case KString:
		return Scalar{Str: v.Str, IsString: true, Pos: v.Pos, Set: true}
	case KNumber:
		s := v.Str
		if s == "" {
			s = strconv.FormatFloat(v.Num, 'g', -1, 64)
		}
		return Scalar{Str: s, Pos: v.Pos, Set: true}
	case KBool:
		return Scalar{Str: strconv.FormatBool(v.Bool), Pos: v.Pos, Set: true}
	}
	return Scalar{}
}

func decStringMap(v *Value) StringMap {
	if !isMap(v) {
		return StringMap{}
	}
	m := StringMap{V: make([]KeyString, 0, len(v.Map)), Pos: v.Pos, Set: true}
	for _, e := range v.Map {
		if s := decString(e.Val); s.Set {
			m.V = append(m.V, KeyString{Key: e.Key, KeyPos: e.KeyPos, Val: s})
		}
	}
	return m
}

// decList decodes the objects of a list with dec, skipping the values
// dec refuses (nil); nil when v is not a list.
func decList[T any](v *Value, dec func(*Value) *T) []*T {
	if v == nil || v.Kind != KList {
		return nil
	}
	out := make([]*T, 0, len(v.List))
	for _, e := range v.List {
		if x := dec(e); x != nil {
			out = append(out, x)
		}
	}
	return out
}

// decMap decodes the entries of an object with dec (given each entry's
// index), skipping the entries dec refuses (nil); nil when v is not an
// object.
func decMap[T any](v *Value, dec func(int, MapEntry) *T) map[string]*T {
	if !isMap(v) {
		return nil
	}
	out := make(map[string]*T, len(v.Map))
	for i, e := range v.Map {
		if x := dec(i, e); x != nil {
			out[e.Key] = x
		}
	}
	return out
}

// decSchemaDef decodes the i-th entry of schemas: a JSON Schema, which is
// an object or a boolean, kept whole.
func (d *decoder) decSchemaDef(i int, e MapEntry) *SchemaDef {
	if e.Val == nil || (e.Val.Kind != KMap && e.Val.Kind != KBool) {
		return nil
	}
	return &SchemaDef{Key: e.Key, Pos: e.KeyPos, Order: i, Schema: decFree(e.Val)}
}

// decSignalHandler decodes the i-th entry of on.signals: a handler.
func (d *decoder) decSignalHandler(i int, e MapEntry) *SignalHandler {
	h := d.decHandler(e.Val)
	if h == nil {
		return nil
	}
	return &SignalHandler{Key: e.Key, Pos: e.KeyPos, Order: i, Handler: h}
}

// decBlock decodes an entry of a node's blocks; its Order counts blocks
// across all nodes.
func (d *decoder) decBlock(_ int, e MapEntry) *Block {
	if !isMap(e.Val) {
		return nil
	}
	b := &Block{Key: e.Key, Pos: e.KeyPos, Order: d.blocks}
	d.blocks++
	d.fieldsBlock(b, e.Val.Map)
	return b
}

// decParallel decodes a parallel: step kind. Branches is never nil.
func (d *decoder) decParallel(v *Value) *Parallel {
	if !isMap(v) {
		return nil
	}
	p := &Parallel{Pos: v.Pos, Branches: map[string][]*Step{}}
	d.fieldsParallel(p, v.Map)
	return p
}

// decParallelBranches decodes parallel.branches into the map and, in
// document order with their positions, Order.
func (d *decoder) decParallelBranches(p *Parallel, v *Value) {
	if !isMap(v) {
		return
	}
	for _, e := range v.Map {
		steps := decList(e.Val, d.decStep)
		p.Branches[e.Key] = steps
		p.Order = append(p.Order, &Branch{Name: e.Key, Pos: e.KeyPos, Steps: steps})
	}
}

// decInject accepts the boolean form and the object form (which sets
// Enabled true, positioned at the object).
func (d *decoder) decInject(v *Value) *Inject {
	switch {
	case v == nil:
		return nil
	case v.Kind == KBool:
		return &Inject{Pos: v.Pos, Enabled: decBool(v)}
	case v.Kind != KMap:
		return nil
	}
	in := &Inject{Pos: v.Pos, Enabled: Bool{V: true, Pos: v.Pos, Set: true}}
	d.fieldsInject(in, v.Map)
	return in
}

// ptr returns a pointer to a copy of v (Block's and Transition's rare
// fields).
func ptr[T any](v T) *T { return &v }
