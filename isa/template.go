package isa

import (
	"strings"

	"smith/source"
)

// A Template is a string with ${...} references, pre-parsed by the
// compiler. The VM substitutes it; it never parses source text.
type Template struct {
	Parts []TPart `json:"parts,omitempty"`
}

// A TPart is literal text (with $$ already unescaped and ${{...}} kept
// verbatim) or one reference.
type TPart struct {
	Lit string `json:"lit,omitempty"`
	Ref *Ref   `json:"ref,omitempty"`
}

// A Ref is one ${...} reference: a root name, then keys and indexes.
type Ref struct {
	Path []PathElem `json:"path"`
	// Raw is the canonical text without ${}, as allow_missing_vars lists it.
	Raw string     `json:"raw"`
	Pos source.Pos `json:"pos"`
}

// A PathElem is one key or [index] of a reference.
type PathElem struct {
	Key     string `json:"key,omitempty"`
	Index   int    `json:"index,omitempty"`
	IsIndex bool   `json:"is_index,omitempty"`
}

// Lit returns a template holding only the literal s.
func Lit(s string) Template {
	if s == "" {
		return Template{}
	}
	return Template{Parts: []TPart{{Lit: s}}}
}

// IsLiteral reports whether t holds no reference.
func (t Template) IsLiteral() bool {
	for _, p := range t.Parts {
		if p.Ref != nil {
			return false
		}
	}
	return true
}

// Literal returns the concatenated literal parts.
func (t Template) Literal() string {
	if len(t.Parts) == 1 {
		return t.Parts[0].Lit
	}
	var s string
	for _, p := range t.Parts {
		s += p.Lit
	}
	return s
}

// Whole returns the reference when t is exactly one reference (a typed
// value may then be substituted), else nil.
func (t Template) Whole() *Ref {
	if len(t.Parts) == 1 && t.Parts[0].Ref != nil {
		return t.Parts[0].Ref
	}
	return nil
}

// Source returns t as source text that parses back to t: literal text
// with every '$' written as "$$" (except in a ${{...}} passthrough, which
// is kept as it is), and each reference as ${Raw}. Listings and messages
// that cannot substitute t show it this way.
func (t Template) Source() string {
	var b strings.Builder
	for _, p := range t.Parts {
		if p.Ref != nil {
			b.WriteString("${" + p.Ref.Raw + "}")
			continue
		}
		writeLitSource(&b, p.Lit)
	}
	return b.String()
}

// writeLitSource writes literal text as template source: '$' doubled,
// except for a complete ${{...}} passthrough.
func writeLitSource(b *strings.Builder, s string) {
	for {
		i := strings.IndexByte(s, '$')
		if i < 0 {
			b.WriteString(s)
			return
		}
		b.WriteString(s[:i])
		s = s[i:]
		if strings.HasPrefix(s, "${{") {
			if j := strings.Index(s[3:], "}}"); j >= 0 {
				b.WriteString(s[:3+j+2])
				s = s[3+j+2:]
				continue
			}
		}
		b.WriteString("$$")
		s = s[1:]
	}
}

// TKind is the kind of a TValue.
type TKind uint8

// TValue kinds.
const (
	TNull TKind = iota
	TBool
	TNumber
	TString
	TList
	TMap
)

// A TValue is a document value whose strings are templates (set_context
// values, provider_params, context, for_each items).
type TValue struct {
	Kind TKind    `json:"kind"`
	Bool bool     `json:"bool,omitempty"`
	Num  string   `json:"num,omitempty"` // the number's JSON text
	Str  Template `json:"str,omitzero"`
	List []TValue `json:"list,omitempty"`
	Map  []Field  `json:"map,omitempty"` // document order
}

// A Field is one key of a TValue map (or a set_context entry, whose key may
// be a dotted path).
type Field struct {
	Key string `json:"key"`
	Val TValue `json:"val"`
}
