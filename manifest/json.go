package manifest

import (
	"encoding/binary"
	"math/bits"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"smith/source"
)

// ParseJSON reads a JSON document into a Value tree. A value's position is
// that of its first character, except that a string value is positioned
// one past its opening quote, at its first content character (as YAML
// quoted scalars are); keys are positioned at their quote. Numbers keep
// their literal text. A key written twice in one object is E_PARSE. A top
// level that is not an object is returned together with an E_SCHEMA
// diagnostic.
//
// The text is read in one pass by a recursive-descent scanner that accepts
// exactly what encoding/json accepts, decodes strings as it does (invalid
// UTF-8 and lone surrogates become U+FFFD) and reports syntax errors with
// its messages, at the offending byte.
func ParseJSON(name string, src []byte) (*Value, source.Diagnostics) {
	p := &jsonParser{src: src, file: name, line: 1, markCol: 1}
	v := p.document()
	var ds source.Diagnostics
	if v == nil {
		ds.Append(p.diag)
		return nil, ds
	}
	if v.Kind != KMap {
		ds.Add(v.Pos, source.ESchema, "the top level must be an object, found %s", v.Kind)
	}
	return v, ds
}

// maxJSONDepth bounds nesting (source.MaxDepth, as for YAML).
const maxJSONDepth = source.MaxDepth

// Sizes of the parser's string cache and value slabs.
const (
	jsonCacheBits = 10  // the cache has 1<<jsonCacheBits entries
	jsonCacheMax  = 32  // longest string cached, in bytes
	jsonSlabMax   = 256 // values per slab, at most
)

// jsonStop marks the bytes that end a run of plain string content: the
// quote, the backslash and the control characters.
var jsonStop = [256]bool{
	'"': true, '\\': true,
	0x00: true, 0x01: true, 0x02: true, 0x03: true, 0x04: true, 0x05: true, 0x06: true, 0x07: true,
	0x08: true, 0x09: true, 0x0a: true, 0x0b: true, 0x0c: true, 0x0d: true, 0x0e: true, 0x0f: true,
	0x10: true, 0x11: true, 0x12: true, 0x13: true, 0x14: true, 0x15: true, 0x16: true, 0x17: true,
	0x18: true, 0x19: true, 0x1a: true, 0x1b: true, 0x1c: true, 0x1d: true, 0x1e: true, 0x1f: true,
}

// jsonParser scans a JSON text into a Value tree. Each method takes the
// offset of the first byte of what it reads and returns the offset just
// past it; a nil value means an error, recorded in diag.
type jsonParser struct {
	src   []byte
	file  string
	depth int               // open arrays and objects
	diag  source.Diagnostic // the error, once one is found

	// Positions: mark, on line, is at column markCol; the column of a later
	// offset on the line is found by counting from mark, bytes if no string
	// with non-ASCII content lies in between (that is, highEnd <= mark),
	// else characters. Lines break only in blanks, which skip reads.
	line, mark, markCol int
	highEnd             int // past the last string with non-ASCII content

	// Scratch stacks of the elements and entries of the open arrays and
	// objects: a closed one copies its own into a slice of exact size.
	// (They are not carved from shared slabs as scalars are: see newLeaf.)
	elems []*Value
	ents  []MapEntry
	buf   []byte  // unescaped string content
	slab  []Value // scalars are allocated from here
	// strs caches short strings (keys and repeated values, mostly) by a
	// hash of their bytes, so that each is allocated once.
	strs [1 << jsonCacheBits]string

	// onNode, when set, receives each entry of the root's "nodes" object
	// (stream.go) instead of the tree: the entry's values are carved from
	// the arenas, whose memory the next entry reuses. false stops the read.
	onNode  func(i int, key string, kpos source.Pos, v *Value) bool
	inArena bool // values are carved from the arenas below
	vals    arena[Value]
	lists   arena[*Value]
	maps    arena[MapEntry]
}

// arenaChunk is the number of elements of an arena's chunks.
const arenaChunk = 512

// An arena hands out zeroed slices carved from chunks that reset makes
// reusable: the values of one node of a manifest read node by node.
type arena[T any] struct {
	chunks [][]T
	i, off int // the chunk being carved, and its carved part
}

// take returns a zeroed slice of n elements (length and capacity n).
func (a *arena[T]) take(n int) []T {
	for ; a.i < len(a.chunks); a.i, a.off = a.i+1, 0 {
		if c := a.chunks[a.i]; a.off+n <= len(c) {
			s := c[a.off : a.off+n : a.off+n]
			a.off += n
			clear(s)
			return s
		}
	}
	c := make([]T, max(n, arenaChunk))
	a.chunks = append(a.chunks, c)
	a.off = n
	return c[:n:n]
}

// reset makes every chunk reusable.
func (a *arena[T]) reset() { a.i, a.off = 0, 0 }

// newValue returns a Value of kind k at pos for an array or an object.
func (p *jsonParser) newValue(k Kind, pos source.Pos) *Value {
	if p.inArena {
		v := &p.vals.take(1)[0]
		v.Kind, v.Pos = k, pos
		return v
	}
	return &Value{Kind: k, Pos: pos}
}

// document reads the top-level value and checks that only blanks follow.
func (p *jsonParser) document() *Value {
	v, i := p.value(p.skip(0))
	if v == nil {
		return nil
	}
	if i = p.skip(i); i < len(p.src) {
		return p.syntax(i, "after top-level value")
	}
	return v
}

// skip returns the offset of the first non-blank byte from i on.
func (p *jsonParser) skip(i int) int {
	src := p.src
	for i < len(src) {
		switch src[i] {
		case ' ', '\t', '\r':
			i++
			continue
		case '\n':
			i++
			p.line++
			p.mark, p.markCol = i, 1
			continue
		}
		break
	}
	return i
}

// pos returns the position of off, which lies on the current line, at or
// after mark, and just after an ASCII byte (or at the line's start).
// Columns count characters, an invalid UTF-8 byte as one, as source.File
// does; counting runs in time linear in the text.
func (p *jsonParser) pos(off int) source.Pos {
	if p.highEnd > p.mark {
		p.markCol += utf8.RuneCount(p.src[p.mark:off])
		p.mark = off
	}
	return source.Pos{File: p.file, Line: p.line, Col: p.markCol + off - p.mark}
}

// newLeaf returns a scalar Value of kind k at pos from the current slab.
// Only scalars share slabs: they hold no pointers to other values, so a
// subtree kept after the tree keeps alive, besides itself, no more than
// the other scalars of its slabs, never another part of the tree; the
// decoder copies the subtrees it keeps (a Free) so that they keep none.
// Slabs start small (most documents are) and double up to jsonSlabMax
// values.
func (p *jsonParser) newLeaf(k Kind, pos source.Pos) *Value {
	if p.inArena {
		return p.newValue(k, pos)
	}
	if len(p.slab) == cap(p.slab) {
		n := min(max(2*cap(p.slab), 8), jsonSlabMax)
		p.slab = make([]Value, 0, n)
	}
	p.slab = p.slab[:len(p.slab)+1]
	v := &p.slab[len(p.slab)-1]
	v.Kind, v.Pos = k, pos
	return v
}

// value reads the value starting at i.
func (p *jsonParser) value(i int) (*Value, int) {
	src := p.src
	if i >= len(src) {
		return p.eof(), i
	}
	switch c := src[i]; c {
	case '"':
		s, j := p.str(i)
		if j < 0 {
			return nil, j
		}
		// Like YAML's quoted scalars, a string is positioned at its first
		// content character, so positions inside it (${...}, actions) can
		// be shifted from it.
		v := p.newLeaf(KString, p.pos(i+1))
		v.Str = s
		return v, j
	case '{':
		return p.object(i, false)
	case '[':
		return p.array(i)
	case 't':
		if j := p.literal(i, "true"); j > 0 {
			v := p.newLeaf(KBool, p.pos(i))
			v.Bool, v.Str = true, "true"
			return v, j
		}
		return nil, -1
	case 'f':
		if j := p.literal(i, "false"); j > 0 {
			v := p.newLeaf(KBool, p.pos(i))
			v.Str = "false"
			return v, j
		}
		return nil, -1
	case 'n':
		if j := p.literal(i, "null"); j > 0 {
			return p.newLeaf(KNull, p.pos(i)), j
		}
		return nil, -1
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return p.number(i)
	}
	return p.syntax(i, "looking for beginning of value"), -1
}

// enter opens an array or object at pos, checking the depth.
func (p *jsonParser) enter(pos source.Pos) bool {
	p.depth++
	if p.depth > maxJSONDepth {
		p.diag = source.New(pos, source.EParse, "document nests deeper than %d levels", maxJSONDepth)
		return false
	}
	return true
}

// array reads the array whose '[' is at i.
func (p *jsonParser) array(i int) (*Value, int) {
	src := p.src
	pos := p.pos(i)
	if !p.enter(pos) {
		return nil, -1
	}
	v := p.newValue(KList, pos)
	if i = p.skip(i + 1); i < len(src) && src[i] == ']' {
		p.depth--
		return v, i + 1
	}
	base := len(p.elems)
	for {
		e, j := p.value(i)
		if e == nil {
			return nil, -1
		}
		p.elems = append(p.elems, e)
		if i = p.skip(j); i >= len(src) {
			return p.eof(), -1
		}
		if c := src[i]; c == ',' {
			i = p.skip(i + 1)
			continue
		} else if c != ']' {
			return p.syntax(i, "after array element"), -1
		}
		break
	}
	if p.inArena {
		v.List = p.lists.take(len(p.elems) - base)
	} else {
		v.List = make([]*Value, len(p.elems)-base)
	}
	copy(v.List, p.elems[base:])
	p.elems = p.elems[:base]
	p.depth--
	return v, i + 1
}

// object reads the object whose '{' is at i. stream reads the root's
// "nodes" for onNode: each entry is handed to it, in arena values, and
// not kept (the object is returned empty).
func (p *jsonParser) object(i int, stream bool) (*Value, int) {
	src := p.src
	pos := p.pos(i)
	if !p.enter(pos) {
		return nil, -1
	}
	v := p.newValue(KMap, pos)
	if i = p.skip(i + 1); i < len(src) && src[i] == '}' {
		p.depth--
		return v, i + 1
	}
	base := len(p.ents)
	var seen map[string]bool
	for n := 0; ; n++ {
		if i >= len(src) {
			return p.eof(), -1
		}
		if src[i] != '"' {
			return p.syntax(i, "looking for beginning of object key string"), -1
		}
		kpos := p.pos(i)
		key, j := p.str(i)
		if j < 0 {
			return nil, -1
		}
		// Small objects are searched; large ones get a set.
		dup := false
		if ents := p.ents[base:]; !stream && len(ents) < 16 {
			for k := range ents {
				if ents[k].Key == key {
					dup = true
					break
				}
			}
		} else {
			if seen == nil {
				seen = make(map[string]bool, 2*len(ents))
				for k := range ents {
					seen[ents[k].Key] = true
				}
			}
			dup = seen[key]
			seen[key] = true
		}
		if dup {
			p.diag = source.New(kpos, source.EParse, "duplicate key '%s'", key)
			return nil, -1
		}
		if i = p.skip(j); i >= len(src) {
			return p.eof(), -1
		}
		if src[i] != ':' {
			return p.syntax(i, "after object key"), -1
		}
		var val *Value
		switch i = p.skip(i + 1); {
		case stream:
			p.inArena = true
			val, j = p.value(i)
			p.inArena = false
		case p.onNode != nil && p.depth == 1 && key == "nodes" && i < len(src) && src[i] == '{':
			val, j = p.object(i, true)
		default:
			val, j = p.value(i)
		}
		if val == nil {
			return nil, -1
		}
		if stream {
			if !p.onNode(n, key, kpos, val) {
				return nil, -1
			}
			p.vals.reset()
			p.lists.reset()
			p.maps.reset()
		} else {
			p.ents = append(p.ents, MapEntry{Key: key, KeyPos: kpos, Val: val})
		}
		if i = p.skip(j); i >= len(src) {
			return p.eof(), -1
		}
		if c := src[i]; c == ',' {
			i = p.skip(i + 1)
			continue
		} else if c != '}' {
			return p.syntax(i, "after object key:value pair"), -1
		}
		break
	}
	switch {
	case stream:
	case p.inArena:
		v.Map = p.maps.take(len(p.ents) - base)
	default:
		v.Map = make([]MapEntry, len(p.ents)-base)
	}
	copy(v.Map, p.ents[base:])
	p.ents = p.ents[:base]
	p.depth--
	return v, i + 1
}

// literal checks that the literal word (true, false or null) starts at i
// and returns the offset past it, or -1.
func (p *jsonParser) literal(i int, word string) int {
	src := p.src
	for k := 1; k < len(word); k++ {
		if i+k >= len(src) {
			p.syntaxEOF("in literal " + word + " (expecting '" + word[k:k+1] + "')")
			return -1
		}
		if src[i+k] != word[k] {
			p.syntax(i+k, "in literal "+word+" (expecting '"+word[k:k+1]+"')")
			return -1
		}
	}
	return i + len(word)
}

// number reads the number starting at i (a '-' or a digit), checking the
// JSON grammar. The value keeps its literal text.
func (p *jsonParser) number(i int) (*Value, int) {
	src := p.src
	j := i
	if src[j] == '-' {
		j++
		if j >= len(src) {
			return p.syntaxEOF("in numeric literal"), -1
		}
		if c := src[j]; c < '0' || c > '9' {
			return p.syntax(j, "in numeric literal"), -1
		}
	}
	if src[j] == '0' {
		j++
	} else {
		for j++; j < len(src) && '0' <= src[j] && src[j] <= '9'; j++ {
		}
	}
	integer := j
	if j < len(src) && src[j] == '.' {
		j++
		if j >= len(src) {
			return p.syntaxEOF("after decimal point in numeric literal"), -1
		}
		if c := src[j]; c < '0' || c > '9' {
			return p.syntax(j, "after decimal point in numeric literal"), -1
		}
		for j++; j < len(src) && '0' <= src[j] && src[j] <= '9'; j++ {
		}
	}
	if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
		j++
		if j < len(src) && (src[j] == '+' || src[j] == '-') {
			j++
		}
		if j >= len(src) {
			return p.syntaxEOF("in exponent of numeric literal"), -1
		}
		if c := src[j]; c < '0' || c > '9' {
			return p.syntax(j, "in exponent of numeric literal"), -1
		}
		for j++; j < len(src) && '0' <= src[j] && src[j] <= '9'; j++ {
		}
	}
	text := p.intern(src[i:j])
	var f float64
	if digits := text; integer == j && len(text) <= 16 {
		// A short integer fits an int64, whose conversion rounds to the
		// nearest float64 as ParseFloat does, at a fraction of the cost.
		neg := digits[0] == '-'
		if neg {
			digits = digits[1:]
		}
		var n int64
		for k := 0; k < len(digits); k++ {
			n = 10*n + int64(digits[k]-'0')
		}
		if f = float64(n); neg {
			f = -f
		}
	} else {
		f, _ = strconv.ParseFloat(text, 64) // out of range: ±Inf; the text is kept either way
	}
	v := p.newLeaf(KNumber, p.pos(i))
	v.Num, v.Str = f, text
	return v, j
}

// str reads the string whose opening quote is at i and returns its
// decoded value and the offset past its closing quote, or -1.
func (p *jsonParser) str(i int) (string, int) {
	src := p.src
	a := i + 1
	j := a
	var high byte // the bits of every plain content byte: >= 0x80 if any is not ASCII
	escaped := false
	for {
		for j < len(src) && !jsonStop[src[j]] {
			high |= src[j]
			j++
		}
		if j >= len(src) {
			p.eof()
			return "", -1
		}
		c := src[j]
		if c == '"' {
			break
		}
		if c != '\\' {
			p.syntax(j, "in string literal")
			return "", -1
		}
		escaped = true
		if j++; j >= len(src) {
			p.syntaxEOF("in string escape code")
			return "", -1
		}
		switch src[j] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			j++
		case 'u':
			for k := 0; k < 4; k++ {
				if j++; j >= len(src) {
					p.syntaxEOF("in \\u hexadecimal character escape")
					return "", -1
				}
				if !isHex(src[j]) {
					p.syntax(j, "in \\u hexadecimal character escape")
					return "", -1
				}
			}
			j++
		default:
			p.syntax(j, "in string escape code")
			return "", -1
		}
	}
	s := src[a:j]
	if high >= utf8.RuneSelf {
		p.highEnd = j
	}
	if !escaped && (high < utf8.RuneSelf || utf8.Valid(s)) {
		return p.intern(s), j + 1
	}
	p.buf = unquoteJSON(p.buf[:0], s)
	return p.intern(p.buf), j + 1
}

// intern returns string(b), from the cache when it is short.
func (p *jsonParser) intern(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > jsonCacheMax {
		return string(b)
	}
	// The hash mixes the length with the first and last eight bytes.
	var w uint64
	if n := len(b); n >= 8 {
		w = binary.LittleEndian.Uint64(b) ^ bits.RotateLeft64(binary.LittleEndian.Uint64(b[n-8:]), 29)
	} else {
		for _, c := range b {
			w = w<<8 | uint64(c)
		}
	}
	h := (w ^ uint64(len(b))) * 0x9E3779B97F4A7C15 >> (64 - jsonCacheBits)
	e := &p.strs[h]
	if *e == string(b) {
		return *e
	}
	*e = string(b)
	return *e
}

// isHex reports whether c is a hexadecimal digit.
func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// unquoteJSON appends the decoded content s of a string the scanner has
// checked, as encoding/json decodes it: escapes resolved, a valid
// surrogate pair \uD83D\uDE00 combined, a lone surrogate and each byte of
// invalid UTF-8 replaced by U+FFFD.
func unquoteJSON(b, s []byte) []byte {
	for r := 0; r < len(s); {
		c := s[r]
		switch {
		case c == '\\':
			switch e := s[r+1]; e {
			case 'u':
				rr := hex4(s[r+2:])
				r += 6
				if utf16.IsSurrogate(rr) {
					if r+6 <= len(s) && s[r] == '\\' && s[r+1] == 'u' {
						if dec := utf16.DecodeRune(rr, hex4(s[r+2:])); dec != unicode.ReplacementChar {
							r += 6
							b = utf8.AppendRune(b, dec)
							break
						}
					}
					rr = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, rr)
			default:
				b = append(b, jsonEscape[e])
				r += 2
			}
		case c < utf8.RuneSelf:
			b = append(b, c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			b = utf8.AppendRune(b, rr)
			r += size
		}
	}
	return b
}

// jsonEscape maps the character after a backslash (but 'u') to the byte
// it stands for.
var jsonEscape = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// hex4 decodes four hexadecimal digits the scanner has checked.
func hex4(s []byte) rune {
	var r rune
	for _, c := range s[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c <= 'F':
			c -= 'A' - 10
		default:
			c -= 'a' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// syntax records encoding/json's error for the unexpected byte at i,
// "invalid character 'c' context", positioned at that byte, and returns
// nil.
func (p *jsonParser) syntax(i int, context string) *Value {
	p.diag = source.New(source.NewFile(p.file, p.src).Pos(i), source.EParse,
		"invalid character %s %s", quoteChar(p.src[i]), context)
	return nil
}

// syntaxEOF records the error of a text that ends inside a number, a
// literal or an escape: encoding/json reports it as if a blank followed,
// positioned at the last byte.
func (p *jsonParser) syntaxEOF(context string) *Value {
	p.diag = source.New(source.NewFile(p.file, p.src).Pos(len(p.src)-1), source.EParse,
		"invalid character ' ' %s", context)
	return nil
}

// eof records the error of a text that ends too early and returns nil.
func (p *jsonParser) eof() *Value {
	p.diag = source.New(source.NewFile(p.file, p.src).Pos(len(p.src)), source.EParse,
		"unexpected end of JSON input")
	return nil
}

// quoteChar formats c as encoding/json's errors do.
func quoteChar(c byte) string {
	switch c {
	case '\'':
		return `'\''`
	case '"':
		return `'"'`
	}
	s := strconv.Quote(string(rune(c)))
	return "'" + s[1:len(s)-1] + "'"
}
