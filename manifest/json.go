package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"unicode/utf8"

	"smith/manifest/source"
)

// ParseJSON reads a JSON document into a Value tree. A value's position is
// that of its first character, except that a string value is positioned
// one past its opening quote, at its first content character (as YAML
// quoted scalars are); keys are positioned at their quote. Numbers keep
// their literal text. A key written twice in one object is E_PARSE. A top
// level that is not an object is returned together with an E_SCHEMA
// diagnostic.
func ParseJSON(name string, src []byte) (*Value, source.Diagnostics) {
	p := &jsonParser{src: src, dec: json.NewDecoder(bytes.NewReader(src)), cur: jsonCursor{src: src, file: name, line: 1, col: 1}}
	p.dec.UseNumber()
	v, err := p.value()
	if err == nil {
		// Anything but the end of input after the top-level value is an error.
		if _, terr := p.dec.Token(); !errors.Is(terr, io.EOF) {
			err = errJSONSyntax
		}
	}
	var ds source.Diagnostics
	if err != nil {
		if d, ok := err.(source.Diagnostic); ok {
			ds.Append(d)
		} else {
			ds.Append(p.syntaxError(name))
		}
		return nil, ds
	}
	if v.Kind != KMap {
		ds.Add(v.Pos, source.ESchema, "the top level must be an object, found %s", v.Kind)
	}
	return v, ds
}

// maxJSONDepth bounds nesting, as the YAML library does.
const maxJSONDepth = 10000

// errJSONSyntax marks a syntax error whose details syntaxError finds.
var errJSONSyntax = errors.New("json syntax error")

// jsonParser builds a Value tree from the decoder's tokens.
type jsonParser struct {
	src   []byte
	dec   *json.Decoder
	cur   jsonCursor
	depth int // open arrays and objects
}

// next reads one token and returns it with the offset of its first byte:
// between tokens there are only blanks, commas and colons, so the token
// starts at the first other byte after the previous token's end.
func (p *jsonParser) next() (json.Token, int, error) {
	off := int(p.dec.InputOffset())
	tok, err := p.dec.Token()
	if err != nil {
		return nil, 0, errJSONSyntax
	}
	for off < len(p.src) {
		switch p.src[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
			continue
		}
		break
	}
	return tok, off, nil
}

// value reads one complete value.
func (p *jsonParser) value() (*Value, error) {
	tok, off, err := p.next()
	if err != nil {
		return nil, err
	}
	return p.valueFrom(tok, off)
}

func (p *jsonParser) valueFrom(tok json.Token, off int) (*Value, error) {
	if _, ok := tok.(string); ok {
		// Like YAML's quoted scalars, a string is positioned at its first
		// content character, so positions inside it (${...}, actions) can
		// be shifted from it.
		return &Value{Kind: KString, Pos: p.cur.pos(off + 1), Str: tok.(string)}, nil
	}
	pos := p.cur.pos(off)
	if d, ok := tok.(json.Delim); ok && (d == '[' || d == '{') {
		p.depth++
		defer func() { p.depth-- }()
		if p.depth > maxJSONDepth {
			return nil, source.New(pos, source.EParse, "document nests deeper than %d levels", maxJSONDepth)
		}
	}
	switch t := tok.(type) {
	case nil:
		return &Value{Kind: KNull, Pos: pos}, nil
	case bool:
		s := "false"
		if t {
			s = "true"
		}
		return &Value{Kind: KBool, Pos: pos, Bool: t, Str: s}, nil
	case json.Number:
		f, _ := t.Float64() // out of range: ±Inf; the text is kept either way
		return &Value{Kind: KNumber, Pos: pos, Num: f, Str: string(t)}, nil
	case json.Delim:
		switch t {
		case '[':
			v := &Value{Kind: KList, Pos: pos}
			for p.dec.More() {
				e, err := p.value()
				if err != nil {
					return nil, err
				}
				v.List = append(v.List, e)
			}
			if _, _, err := p.next(); err != nil { // ']'
				return nil, err
			}
			return v, nil
		case '{':
			return p.object(pos)
		}
	}
	return nil, errJSONSyntax
}

// object reads the entries of an object after its '{'.
func (p *jsonParser) object(pos source.Pos) (*Value, error) {
	v := &Value{Kind: KMap, Pos: pos}
	var seen map[string]bool
	for p.dec.More() {
		tok, off, err := p.next()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errJSONSyntax
		}
		kpos := p.cur.pos(off)
		// Small objects are searched; large ones get a set.
		dup := false
		if len(v.Map) < 16 {
			for _, e := range v.Map {
				if e.Key == key {
					dup = true
					break
				}
			}
		} else {
			if seen == nil {
				seen = make(map[string]bool, 2*len(v.Map))
				for _, e := range v.Map {
					seen[e.Key] = true
				}
			}
			dup = seen[key]
			seen[key] = true
		}
		if dup {
			return nil, source.New(kpos, source.EParse, "duplicate key '%s'", key)
		}
		val, err := p.value()
		if err != nil {
			return nil, err
		}
		v.Map = append(v.Map, MapEntry{Key: key, KeyPos: kpos, Val: val})
	}
	if _, _, err := p.next(); err != nil { // '}'
		return nil, err
	}
	return v, nil
}

// syntaxError locates the first syntax error. The decoder's own offsets
// are relative to its buffer, so the text is checked again as a whole,
// which gives the exact offset.
func (p *jsonParser) syntaxError(name string) source.Diagnostic {
	f := source.NewFile(name, p.src)
	var raw json.RawMessage
	err := json.Unmarshal(p.src, &raw)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off := int(se.Offset)
		msg := se.Error()
		if strings.HasPrefix(msg, "unexpected end") {
			return source.New(f.Pos(len(p.src)), source.EParse, "%s", msg)
		}
		return source.New(f.Pos(off-1), source.EParse, "%s", msg)
	}
	if err != nil {
		return source.New(f.Pos(0), source.EParse, "%s", err.Error())
	}
	return source.New(f.Pos(len(p.src)), source.EParse, "invalid JSON")
}

// jsonCursor maps increasing byte offsets to positions in time linear in
// the text (source.File would count runes from the line start each time,
// which is quadratic on a long one-line document).
type jsonCursor struct {
	src       []byte
	file      string
	off       int // offset reached
	line, col int // position of off
}

// pos returns the position of off, which must not lie before the last
// offset asked for.
func (c *jsonCursor) pos(off int) source.Pos {
	if off > len(c.src) {
		off = len(c.src)
	}
	if off < c.off {
		return source.NewFile(c.file, c.src).Pos(off)
	}
	for c.off < off {
		b := c.src[c.off]
		switch {
		case b == '\n':
			c.line++
			c.col = 1
			c.off++
		case b < utf8.RuneSelf:
			c.col++
			c.off++
		default:
			_, w := utf8.DecodeRune(c.src[c.off:])
			c.col++
			c.off += w
		}
	}
	return source.Pos{File: c.file, Line: c.line, Col: c.col}
}
