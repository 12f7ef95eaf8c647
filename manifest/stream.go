package manifest

import (
	"maps"

	"smith/source"
)

// A large manifest is mostly its nodes. Reading it whole holds, at the end
// of the load, the source, the tree of ParseJSON (six times the source) and
// the decoded manifest together. streamManifest reads it node by node
// instead: each entry of nodes is parsed into values carved from the
// parser's arenas, judged by the fast validator against the schema of a
// node (nodes is additionalProperties: Node), decoded, and its arenas are
// reused for the next node, so that the tree of no more than one node is
// ever held (docs/performance.md, fifth pass, continued).
//
// Only a valid manifest is read so: any document that the parser or the
// fast validator refuses goes to the whole-document path, which words the
// diagnostics. A valid manifest has none, so both paths give the same
// result; TestStreamManifest checks it.

// streamManifest reads src, a manifest, node by node; ok is false when it
// is not valid by the fast validator (or its schema's nodes is not of the
// form above), and the document must be loaded whole.
func streamManifest(vr *Validator, name string, src []byte) (mf *Manifest, ok bool) {
	if vr.byNode == nil {
		return nil, false
	}
	nodes := map[string]*Node{}
	var d decoder // Block.Order counts across the nodes
	p := &jsonParser{src: src, file: name, line: 1, markCol: 1}
	p.onNode = func(i int, key string, kpos source.Pos, v *Value) bool {
		if !vr.node.valid(v) {
			return false
		}
		nodes[key] = d.decNode(i, MapEntry{Key: key, KeyPos: kpos, Val: v})
		return true
	}
	root := p.document()
	if root == nil || root.Kind != KMap || !vr.byNode.valid(root) {
		return nil, false
	}
	mf = DecodeManifest(name, root) // nodes, streamed, is empty in root
	mf.Nodes = nodes
	return mf, true
}

// splitNodes returns, when the manifest schema s has a nodes that is
// exactly {type: object, additionalProperties: NODE}, a copy of s that
// accepts any object for nodes, and NODE: a document is valid by s if and
// only if, with an empty nodes, it is valid by the copy and each of its
// nodes (its keys distinct, which the parser checks) is valid by NODE.
// Otherwise both are nil.
func splitNodes(s *fastSchema) (byNode, node *fastSchema) {
	ns := s.props["nodes"]
	if s.boolean != 0 || s.ref != nil || s.names != nil || s.anyOf != nil || s.oneOf != nil || s.not != nil ||
		ns == nil || ns.addl == nil || ns.boolean != 0 || ns.ref != nil || ns.types != 1<<KMap ||
		ns.props != nil || ns.required != nil || ns.names != nil || ns.minProps != 0 || ns.items != nil ||
		ns.hasEnum || ns.pattern != nil || ns.anyOf != nil || ns.oneOf != nil || ns.not != nil {
		return nil, nil
	}
	c := *s
	c.props = maps.Clone(s.props)
	c.props["nodes"] = &fastSchema{types: 1 << KMap}
	return &c, ns.addl
}
