package manifest

import (
	"encoding/json"
	"strconv"

	"smith/source"
)

// A Kind is the kind of a document value.
type Kind uint8

// Kinds of document values.
const (
	KNull Kind = iota
	KBool
	KNumber
	KString
	KList
	KMap
)

// String names the kind as JSON Schema does.
func (k Kind) String() string {
	return [...]string{"null", "boolean", "number", "string", "array", "object"}[k]
}

// A Value is one node of a document tree (YAML or JSON) with its position.
// Both readers produce Value trees; the typed structs of types.go are decoded
// from them, and schema validation runs over them.
type Value struct {
	Kind Kind
	Bool bool // next to Kind: a Value is 112 bytes, a size class, not 120
	Pos  source.Pos
	// Str is the string value, or the literal text of a number or boolean.
	Str  string
	Num  float64
	List []*Value
	// Map holds an object's entries in document order.
	Map []MapEntry
}

// A MapEntry is one key of an object.
type MapEntry struct {
	Key    string
	KeyPos source.Pos
	Val    *Value
}

// Get returns the value of key in an object, or nil.
func (v *Value) Get(key string) *Value {
	if v == nil || v.Kind != KMap {
		return nil
	}
	for _, e := range v.Map {
		if e.Key == key {
			return e.Val
		}
	}
	return nil
}

// Interface converts the tree to plain Go values: nil, bool, json.Number,
// string, []any, map[string]any. It is what schema validation sees.
func (v *Value) Interface() any {
	if v == nil {
		return nil
	}
	switch v.Kind {
	case KBool:
		return v.Bool
	case KNumber:
		if v.Str != "" {
			if _, err := strconv.ParseFloat(v.Str, 64); err == nil {
				return json.Number(v.Str)
			}
		}
		return json.Number(strconv.FormatFloat(v.Num, 'g', -1, 64))
	case KString:
		return v.Str
	case KList:
		out := make([]any, len(v.List))
		for i, e := range v.List {
			out[i] = e.Interface()
		}
		return out
	case KMap:
		out := make(map[string]any, len(v.Map))
		for _, e := range v.Map {
			out[e.Key] = e.Val.Interface()
		}
		return out
	}
	return nil
}

// MarshalJSON writes the tree as JSON with object keys in document order, so
// that the same document always gives the same bytes.
func (v *Value) MarshalJSON() ([]byte, error) {
	return v.AppendJSON(nil), nil
}

// AppendJSON appends the canonical JSON text of v (document key order).
func (v *Value) AppendJSON(b []byte) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	switch v.Kind {
	case KBool:
		return strconv.AppendBool(b, v.Bool)
	case KNumber:
		if n, ok := v.Interface().(json.Number); ok {
			return append(b, n...)
		}
		return append(b, '0')
	case KString:
		s, _ := json.Marshal(v.Str)
		return append(b, s...)
	case KList:
		b = append(b, '[')
		for i, e := range v.List {
			if i > 0 {
				b = append(b, ',')
			}
			b = e.AppendJSON(b)
		}
		return append(b, ']')
	case KMap:
		b = append(b, '{')
		for i, e := range v.Map {
			if i > 0 {
				b = append(b, ',')
			}
			k, _ := json.Marshal(e.Key)
			b = append(b, k...)
			b = append(b, ':')
			b = e.Val.AppendJSON(b)
		}
		return append(b, '}')
	}
	return append(b, "null"...)
}
