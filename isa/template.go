package isa

import "smith/lang"

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
	Kind TKind         `json:"kind"`
	Bool bool          `json:"bool,omitempty"`
	Num  string        `json:"num,omitempty"` // the number's JSON text
	Str  lang.Template `json:"str,omitzero"`
	List []TValue      `json:"list,omitempty"`
	Map  []Field       `json:"map,omitempty"` // document order
}

// A Field is one key of a TValue map (or a set_context entry, whose key may
// be a dotted path).
type Field struct {
	Key string `json:"key"`
	Val TValue `json:"val"`
}
