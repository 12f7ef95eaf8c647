package manifest

import (
	"bytes"
	"errors"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"

	"smith/source"
)

// Limits on alias expansion: a document whose aliases expand to more nodes,
// or nest deeper, is refused (the "billion laughs" attack).
const (
	maxAliasNodes = 1_000_000
	maxAliasDepth = 100
	// maxExpanded caps the running count so that it cannot overflow.
	maxExpanded = 1 << 40
)

// yamlErrLine splits yaml's error text "yaml: line N: msg".
var yamlErrLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`) })

// ParseYAML reads a YAML document into a Value tree. String values are
// positioned at their first content character: one column after the opening
// quote of a quoted scalar, the first content line of a block scalar (| or >).
// Aliases are expanded by sharing the anchored Value (the tree may therefore
// hold one *Value in several places; treat it as read-only). Merge keys (<<)
// are applied. Only one document per file is accepted. A top level that is
// not a mapping is returned together with an E_SCHEMA diagnostic.
func ParseYAML(name string, src []byte) (*Value, source.Diagnostics) {
	var ds source.Diagnostics
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			ds.Add(source.Pos{File: name, Line: 1, Col: 1}, source.ESchema, "document is empty, expected an object")
			return nil, ds
		}
		ds.Append(yamlError(name, src, err))
		return nil, ds
	}
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		ds.Add(source.Pos{File: name, Line: next.Line, Col: next.Column}, source.EParse,
			"only one document per file is allowed, found a second one")
		return nil, ds
	} else if !errors.Is(err, io.EOF) {
		ds.Append(yamlError(name, src, err))
		return nil, ds
	}
	if len(doc.Content) == 0 {
		ds.Add(source.Pos{File: name, Line: 1, Col: 1}, source.ESchema, "document is empty, expected an object")
		return nil, ds
	}
	root := doc.Content[0]

	b := &yamlBuilder{file: name, src: src, sizes: map[*yaml.Node]aliasCost{}, built: map[*yaml.Node]*Value{}}
	// The bound is on what aliases add: the expanded tree (what validation
	// and decoding walk) minus the document's own nodes. A large document
	// without aliases is fine.
	if c := b.cost(root); c.nodes-b.own > maxAliasNodes || c.depth > maxAliasDepth || c.cyclic {
		ds.Add(b.pos(root), source.EParse, "document expands aliases too far (billion laughs?)")
		return nil, ds
	}
	if at := tooDeep(root, source.MaxDepth); at != nil {
		ds.Add(b.pos(at), source.EParse, "document nests deeper than %d levels", source.MaxDepth)
		return nil, ds
	}
	v := b.build(root)
	ds = append(ds, b.ds...)
	if ds.HasErrors() {
		return nil, ds
	}
	if v.Kind != KMap {
		ds.Add(v.Pos, source.ESchema, "the top level must be an object, found %s", v.Kind)
	}
	return v, ds
}

// yamlError turns an error of the YAML library into an E_PARSE diagnostic:
// at the mistake explainYAML finds, named in words, else on the line the
// library reports (line 1 when it reports none: yaml omits the line for
// problems on the first line). The library's own text follows, never alone.
func yamlError(name string, src []byte, err error) source.Diagnostic {
	msg := err.Error()
	line := 1
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = "yaml: " + te.Errors[0]
	}
	if m := yamlErrLine().FindStringSubmatch(msg); m != nil {
		if m[1] != "" {
			if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
				line = n
			}
		}
		msg = m[2]
	}
	msg = strings.TrimRight(msg, ".")
	col := 1
	if te == nil {
		if mk, ok := explainYAML(src); ok {
			return source.New(source.Pos{File: name, Line: mk.line, Col: mk.col}, source.EParse, "%s (the YAML parser: %s)", mk.msg, msg)
		}
		if l, c, text, ok := badLine(src); ok {
			line, col = l, c
			if w, c, ok := lineWords(msg, text); ok {
				col += c
				return source.New(source.Pos{File: name, Line: line, Col: col}, source.EParse, "%s (the YAML parser: %s)", w, msg)
			}
		}
	}
	return source.New(source.Pos{File: name, Line: line, Col: col}, source.EParse, "%s (the YAML parser: %s)", yamlWords(msg), msg)
}

// afterQuote matches a value that goes on after its closing quote.
var afterQuote = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:- +)?[^\s"'#][^:#]*?: +("[^"]*"|'[^']*') *[^\s#]`)
})

// lineWords names, in words, the mistake on the line that stops the
// document being YAML (text, without its indentation), when the library's
// message msg and the line tell which one it is; off is the mistake's
// column on the line past the indentation.
func lineWords(msg, text string) (words string, off int, ok bool) {
	switch {
	case strings.HasPrefix(msg, "did not find expected key") && afterQuote().MatchString(text):
		m := afterQuote().FindStringSubmatchIndex(text)
		return "text after the closing quote: a quoted value ends at its quote; put the whole value inside the quotes", m[1] - 1, true
	case strings.HasPrefix(msg, "did not find expected key") && strings.HasPrefix(text, "- "):
		return "a list item ('- ') among the keys of an object: line it up with the items of its list, or give it a key of its own whose value is the list", 0, true
	case strings.HasPrefix(msg, "did not find expected '-' indicator") && !strings.HasPrefix(text, "-"):
		return "this line lines up with the items ('- ') of the list above it but starts none: indent it as the keys of the item it belongs to, or start a new item with '- '", 0, true
	}
	return "", 0, false
}

// badLine finds the line where a document the library refused stops being
// YAML: the line after the longest run of whole lines, from the top, that
// parses, and that line's text without its indentation. The library's own line is where it gave up, which is often the
// start of the enclosing list or object, lines above the mistake (and for
// its parser's errors it counts from 0). col is the line's first
// character. Only the error path pays for it: a handful of parses of
// prefixes, found from the end (the longest prefix that parses is searched
// for backwards in doubling steps, then halved), so that a list or a
// quoted string that legitimately spans lines above the mistake, whose
// cut prefixes do not parse, does not mislead it.
func badLine(src []byte) (line, col int, text string, ok bool) {
	starts := []int{0} // byte offset of each line's start
	for i, c := range src {
		if c == '\n' && i+1 < len(src) {
			starts = append(starts, i+1)
		}
	}
	n := len(starts)
	// parses(k): the first k lines parse (every document in them).
	parses := func(k int) bool {
		end := len(src)
		if k < n {
			end = starts[k]
		}
		dec := yaml.NewDecoder(bytes.NewReader(src[:end]))
		for {
			var d yaml.Node
			if err := dec.Decode(&d); err != nil {
				return errors.Is(err, io.EOF)
			}
		}
	}
	if parses(n) {
		return 0, 0, "", false
	}
	lo, hi := 0, n // lines lo parse, lines hi do not
	for step := 1; ; step *= 2 {
		k := n - step
		if k <= 0 {
			break
		}
		if parses(k) {
			lo = k
			break
		}
		hi = k
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if parses(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	// Line hi (1-based) is the first that does not parse.
	l := src[starts[hi-1]:]
	if i := bytes.IndexByte(l, '\n'); i >= 0 {
		l = l[:i]
	}
	l = bytes.TrimRight(l, "\r")
	t := bytes.TrimLeft(l, " \t")
	return hi, len(l) - len(t) + 1, string(t), true
}

// yamlWords says what a message of the YAML library means for the writer
// of a workflow.
func yamlWords(msg string) string {
	switch {
	case strings.HasPrefix(msg, "mapping values are not allowed"):
		return "a ': ' inside a value: quote the value (\"...\") when it holds ': ', or put the entry on a line of its own"
	case strings.HasPrefix(msg, "did not find expected node content"):
		return "a value is missing, or a list ([) or object ({) is not closed"
	case strings.HasPrefix(msg, "found unexpected end of stream"):
		return "the document ends inside a quoted string or an unclosed list ([) or object ({)"
	case strings.HasPrefix(msg, "unknown anchor"):
		return "an alias (*name) names no anchor (&name) defined above it"
	case strings.HasPrefix(msg, "found character that cannot start any token"):
		return "a character that cannot start a value here: quote the value"
	}
	return "YAML syntax error on this line: check its indentation against the lines above it, and that a quoted value ends at its closing quote"
}

// aliasCost is the expanded size of a YAML node: how many nodes it stands
// for once every alias below it is expanded, and how deeply aliases nest.
type aliasCost struct {
	nodes  int
	depth  int
	cyclic bool
	done   bool
}

// yamlBuilder turns a yaml.Node tree into a Value tree.
type yamlBuilder struct {
	file  string
	src   []byte
	lines []int // byte offset of the start of each line, built on demand
	// sizes and built memoize anchored nodes only: nothing else can be
	// reached twice (an alias always names an anchor).
	sizes map[*yaml.Node]aliasCost
	built map[*yaml.Node]*Value
	own   int // the document's own nodes, counted by cost
	ds    source.Diagnostics
}

// cost computes the expanded size of n without building anything, so that a
// billion-laughs document is refused in time proportional to its text.
// Counts saturate just above the limit.
func (b *yamlBuilder) cost(n *yaml.Node) aliasCost {
	memo := n.Anchor != ""
	if memo {
		if c, ok := b.sizes[n]; ok {
			if !c.done {
				return aliasCost{cyclic: true, done: true}
			}
			return c
		}
		b.sizes[n] = aliasCost{}
	}
	b.own++
	c := aliasCost{nodes: 1, done: true}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			c.cyclic = true
		} else {
			t := b.cost(n.Alias)
			c.nodes, c.depth, c.cyclic = t.nodes, t.depth+1, t.cyclic
		}
	} else {
		for _, ch := range n.Content {
			t := b.cost(ch)
			c.nodes = min(c.nodes+t.nodes, maxExpanded)
			c.depth = max(c.depth, t.depth)
			c.cyclic = c.cyclic || t.cyclic
		}
	}
	if memo {
		b.sizes[n] = c
	}
	return c
}

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i <= maxAliasDepth; i++ {
		n = n.Alias
	}
	return n
}

// build converts n. An alias yields the Value built for its anchor.
func (b *yamlBuilder) build(n *yaml.Node) *Value {
	if n.Kind == yaml.AliasNode {
		n = resolve(n)
		if n == nil || n.Kind == yaml.AliasNode {
			return &Value{Kind: KNull}
		}
	}
	if v, ok := b.built[n]; ok {
		return v
	}
	var v *Value
	switch n.Kind {
	case yaml.MappingNode:
		v = &Value{Kind: KMap, Pos: b.pos(n)}
		if n.Anchor != "" {
			b.built[n] = v
		}
		b.buildMap(v, n)
		return v
	case yaml.SequenceNode:
		v = &Value{Kind: KList, Pos: b.pos(n), List: make([]*Value, 0, len(n.Content))}
		if n.Anchor != "" {
			b.built[n] = v
		}
		for _, ch := range n.Content {
			v.List = append(v.List, b.build(ch))
		}
		return v
	case yaml.ScalarNode:
		v = b.scalar(n)
	default:
		v = &Value{Kind: KNull, Pos: b.pos(n)}
	}
	if n.Anchor != "" {
		b.built[n] = v
	}
	return v
}

// buildMap fills v with the entries of mapping n, applying merge keys: an
// explicit key wins over a merged one; a merged key is placed where the
// << stands. A key written twice is E_PARSE.
func (b *yamlBuilder) buildMap(v *Value, n *yaml.Node) {
	explicit := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := resolve(n.Content[i])
		if k == nil || isMerge(k) {
			continue
		}
		if k.Kind != yaml.ScalarNode {
			b.ds.Add(b.pos(n.Content[i]), source.EParse, "a mapping key must be a scalar, found %s", nodeKind(k))
			continue
		}
		if explicit[k.Value] {
			b.ds.Add(b.pos(n.Content[i]), source.EParse, "duplicate key '%s'", k.Value)
			continue
		}
		explicit[k.Value] = true
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		k := resolve(kn)
		if k == nil {
			continue
		}
		if isMerge(k) {
			b.merge(v, vn, explicit, seen)
			continue
		}
		if k.Kind != yaml.ScalarNode || seen[k.Value] {
			continue
		}
		seen[k.Value] = true
		v.Map = append(v.Map, MapEntry{Key: k.Value, KeyPos: b.pos(kn), Val: b.build(vn)})
	}
}

// merge applies one merge key's value (a mapping or a list of mappings).
func (b *yamlBuilder) merge(v *Value, vn *yaml.Node, explicit, seen map[string]bool) {
	src := resolve(vn)
	var maps []*yaml.Node
	switch {
	case src != nil && src.Kind == yaml.MappingNode:
		maps = []*yaml.Node{src}
	case src != nil && src.Kind == yaml.SequenceNode:
		for _, e := range src.Content {
			if m := resolve(e); m != nil && m.Kind == yaml.MappingNode {
				maps = append(maps, m)
			} else {
				b.ds.Add(b.pos(e), source.EParse, "a merge (<<) list must hold mappings")
				return
			}
		}
	default:
		b.ds.Add(b.pos(vn), source.EParse, "a merge (<<) value must be a mapping or a list of mappings")
		return
	}
	for _, m := range maps {
		mv := b.build(m)
		if mv.Kind != KMap {
			continue
		}
		for _, e := range mv.Map {
			if explicit[e.Key] || seen[e.Key] {
				continue
			}
			seen[e.Key] = true
			v.Map = append(v.Map, e)
		}
	}
}

func isMerge(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Tag == "!!merge"
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "object"
	case yaml.SequenceNode:
		return "array"
	}
	return "scalar"
}

// scalar converts a scalar node by its resolved tag. Numbers keep their
// literal text when it is valid JSON, else a canonical rendering; values
// JSON cannot hold (.inf, .nan), timestamps, binaries and custom tags stay
// strings.
func (b *yamlBuilder) scalar(n *yaml.Node) *Value {
	pos := b.pos(n)
	switch n.ShortTag() {
	case "!!null":
		return &Value{Kind: KNull, Pos: pos, Str: n.Value}
	case "!!bool":
		return &Value{Kind: KBool, Pos: pos, Str: n.Value, Bool: strings.EqualFold(n.Value, "true")}
	case "!!int":
		s := strings.ReplaceAll(n.Value, "_", "")
		if i, err := strconv.ParseInt(s, 0, 64); err == nil {
			return &Value{Kind: KNumber, Pos: pos, Str: jsonNumberText(n.Value, strconv.FormatInt(i, 10)), Num: float64(i)}
		}
		if u, err := strconv.ParseUint(s, 0, 64); err == nil {
			return &Value{Kind: KNumber, Pos: pos, Str: jsonNumberText(n.Value, strconv.FormatUint(u, 10)), Num: float64(u)}
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) {
			return &Value{Kind: KNumber, Pos: pos, Str: jsonNumberText(n.Value, strconv.FormatFloat(f, 'g', -1, 64)), Num: f}
		}
	case "!!float":
		if f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return &Value{Kind: KNumber, Pos: pos, Str: jsonNumberText(n.Value, strconv.FormatFloat(f, 'g', -1, 64)), Num: f}
		}
	}
	return &Value{Kind: KString, Pos: b.strPos(n, pos), Str: n.Value}
}

// jsonNumber matches the JSON number grammar.
var jsonNumber = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$`)
})

// jsonNumberText returns lit when it is a JSON number, else canonical.
func jsonNumberText(lit, canonical string) string {
	if jsonNumber().MatchString(lit) {
		return lit
	}
	return canonical
}

// pos is the node's own position (for a node with an anchor or tag, where
// the anchor or tag starts; see contentPos).
func (b *yamlBuilder) pos(n *yaml.Node) source.Pos {
	return source.Pos{File: b.file, Line: n.Line, Col: n.Column}
}

// strPos moves the position of a string scalar onto its first content
// character: past an anchor or tag, past the opening quote, and for block
// scalars to the first content line at the block's indentation.
func (b *yamlBuilder) strPos(n *yaml.Node, p source.Pos) source.Pos {
	if n.Anchor == "" && n.Style&(yaml.TaggedStyle|yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
		return p
	}
	off, ok := b.offset(n.Line, n.Column)
	if !ok {
		return p
	}
	// Skip "&anchor" and "!tag" properties and the blanks after them.
	for off < len(b.src) && (b.src[off] == '&' || b.src[off] == '!') {
		for off < len(b.src) && !isYAMLBlank(b.src[off]) {
			off++
		}
		for off < len(b.src) && isYAMLBlank(b.src[off]) {
			off++
		}
	}
	if off >= len(b.src) {
		return p
	}
	switch c := b.src[off]; {
	case c == '"' || c == '\'':
		return b.posAt(off + 1)
	case c == '|' || c == '>':
		// The content starts on the next line; its column is the
		// indentation of the first non-blank content line.
		nl := bytes.IndexByte(b.src[off:], '\n')
		if nl < 0 {
			return p
		}
		start := off + nl + 1
		line := b.posAt(start).Line
		for i := start; i < len(b.src); {
			j := i
			for j < len(b.src) && b.src[j] == ' ' {
				j++
			}
			if j < len(b.src) && b.src[j] != '\n' && b.src[j] != '\r' {
				return source.Pos{File: b.file, Line: line, Col: j - i + 1}
			}
			k := bytes.IndexByte(b.src[i:], '\n')
			if k < 0 {
				break
			}
			i += k + 1
		}
		return source.Pos{File: b.file, Line: line, Col: 1}
	}
	return b.posAt(off)
}

func isYAMLBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// index builds the line table once.
func (b *yamlBuilder) index() {
	if b.lines != nil {
		return
	}
	b.lines = []int{0}
	for i, c := range b.src {
		if c == '\n' {
			b.lines = append(b.lines, i+1)
		}
	}
}

// offset maps a 1-based line and rune column to a byte offset.
func (b *yamlBuilder) offset(line, col int) (int, bool) {
	b.index()
	if line < 1 || line > len(b.lines) || col < 1 {
		return 0, false
	}
	off := b.lines[line-1]
	for c := 1; c < col && off < len(b.src); c++ {
		_, w := utf8.DecodeRune(b.src[off:])
		off += w
	}
	return off, true
}

// posAt maps a byte offset to a position.
func (b *yamlBuilder) posAt(off int) source.Pos {
	b.index()
	lo, hi := 0, len(b.lines)
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if b.lines[mid] <= off {
			lo = mid
		} else {
			hi = mid
		}
	}
	return source.Pos{File: b.file, Line: lo + 1, Col: utf8.RuneCount(b.src[b.lines[lo]:off]) + 1}
}

// tooDeep returns the first node of n nested deeper than limit levels of
// mappings and sequences (aliases followed, their expansion already
// bounded), or nil.
func tooDeep(n *yaml.Node, limit int) *yaml.Node {
	var walk func(n *yaml.Node, depth, hops int) *yaml.Node
	walk = func(n *yaml.Node, depth, hops int) *yaml.Node {
		if n.Kind == yaml.AliasNode {
			if n.Alias == nil || hops > maxAliasDepth {
				return nil
			}
			return walk(n.Alias, depth, hops+1)
		}
		if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
			depth++
			if depth > limit {
				return n
			}
		}
		for _, c := range n.Content {
			if at := walk(c, depth, hops); at != nil {
				return at
			}
		}
		return nil
	}
	return walk(n, 0, 0)
}
