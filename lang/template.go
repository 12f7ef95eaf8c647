package lang

import (
	"strings"

	"smith/source"
)

// A Template is a string value split into literal text and ${...}
// references (CONTRACT section 3.1), parsed once by manifest and carried
// as it is through the compiler into the program the VM substitutes.
// Literal parts are never empty and never adjacent; an empty string has no
// parts.
type Template struct {
	Parts []Part `json:"parts,omitempty"`
}

// A Part is one piece of a template: exactly one of Lit and Ref is set.
// A literal part already has $$ unescaped and ${{...}} kept verbatim.
type Part struct {
	Lit string `json:"lit,omitempty"`
	Ref *Ref   `json:"ref,omitempty"`
}

// A Ref is one ${...} reference, or one allow_missing_vars entry.
type Ref struct {
	// Path[0] is the root (item, the loop's as name, loop, steps, context,
	// env, run, agent); it is never an index. Path is never empty.
	Path []PathElem `json:"path"`
	// Raw is the canonical text of the path without ${}: keys joined by
	// '.', indexes as [n] in decimal ("steps.S.json.files[0]"). Two
	// references to the same value have the same Raw, which is how
	// allow_missing_vars entries are matched.
	Raw string `json:"raw"`
	// Pos is the position of the '$' (of the first character for
	// manifest.ParseRef).
	Pos source.Pos `json:"pos"`
}

// A PathElem is one step of a reference path: a key (".name") or an
// integer index ("[n]").
type PathElem struct {
	Key     string `json:"key,omitempty"`   // the key; empty when IsIndex
	Index   int    `json:"index,omitempty"` // the index; 0 unless IsIndex
	IsIndex bool   `json:"is_index,omitempty"`
}

// Root returns the first element of the path ("steps" for ${steps.S.output}).
func (r *Ref) Root() string { return r.Path[0].Key }

// Lit returns a template holding only the literal s.
func Lit(s string) Template {
	if s == "" {
		return Template{}
	}
	return Template{Parts: []Part{{Lit: s}}}
}

// IsLiteral reports whether t has no references.
func (t Template) IsLiteral() bool {
	for _, p := range t.Parts {
		if p.Ref != nil {
			return false
		}
	}
	return true
}

// Literal returns the concatenated literal text of t: the string's value
// when t.IsLiteral().
func (t Template) Literal() string {
	switch len(t.Parts) {
	case 0:
		return ""
	case 1:
		return t.Parts[0].Lit
	}
	var b strings.Builder
	for _, p := range t.Parts {
		b.WriteString(p.Lit)
	}
	return b.String()
}

// Refs returns the references of t in source order.
func (t Template) Refs() []*Ref {
	var refs []*Ref
	for _, p := range t.Parts {
		if p.Ref != nil {
			refs = append(refs, p.Ref)
		}
	}
	return refs
}

// Whole returns the reference when t is exactly one reference and nothing
// else, so that a typed value (a list for for_each.items) can be
// substituted; otherwise nil.
func (t Template) Whole() *Ref {
	if len(t.Parts) == 1 {
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
