package isa

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"unicode/utf8"
)

// The pools section encodes the Program's data (every field but Code and
// Pos, the fields tagged json:"-") by walking its Go types, in field order:
//
//	struct   uvarint bitmap: bit i set when the i-th encoded field is not
//	         zero; then the value of every set field, in order (a set bool
//	         is true and has no bytes)
//	string   uvarint index into the strings section
//	int      varint; uint8, uint32: uvarint
//	float64  uvarint of the IEEE bits with their bytes reversed (small
//	         integers take a few bytes); NaN and infinities are refused
//	slice    uvarint length, then the elements (an empty slice is zero)
//	pointer  the value pointed to (a nil pointer is zero)
//
// A value is zero when its encoding would carry nothing: false, "", 0, an
// empty slice, a nil pointer, a struct whose fields are all zero. Decoding
// leaves zero fields at their zero value, so every empty slice decodes as
// nil. The layout follows the types: changing a pool type changes the
// format, which bumps Version (TestPoolLayout pins it).

// A poolWriter encodes pool values and collects the strings they use.
type poolWriter struct {
	b      []byte
	strs   []string
	strIdx map[string]int
	fields map[reflect.Type][]int
	err    error // the first value that cannot be encoded
}

func newPoolWriter() *poolWriter {
	return &poolWriter{strIdx: map[string]int{}, fields: map[reflect.Type][]int{}}
}

// str returns the index of s in the strings section, adding it at its first
// use. A string that is not valid UTF-8 has each bad byte replaced by
// U+FFFD, as encoding/json does, so that every decoded string is valid.
func (w *poolWriter) str(s string) uint64 {
	if !utf8.ValidString(s) {
		s = validUTF8(s)
	}
	i, ok := w.strIdx[s]
	if !ok {
		i = len(w.strs)
		w.strIdx[s] = i
		w.strs = append(w.strs, s)
	}
	return uint64(i)
}

func validUTF8(s string) string {
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return string(b)
}

// poolFields returns the indices of t's encoded fields: exported, not
// tagged json:"-".
func poolFields(cache map[reflect.Type][]int, t reflect.Type) []int {
	if fs, ok := cache[t]; ok {
		return fs
	}
	var fs []int
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.IsExported() && f.Tag.Get("json") != "-" {
			fs = append(fs, i)
		}
	}
	if len(fs) > 63 {
		panic(fmt.Sprintf("internal error: pool type %s has %d fields, the bitmap holds 63", t, len(fs)))
	}
	cache[t] = fs
	return fs
}

// isZero reports whether v encodes as nothing.
func (w *poolWriter) isZero(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Bool:
		return !v.Bool()
	case reflect.String:
		return v.Len() == 0
	case reflect.Int, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint8, reflect.Uint32:
		return v.Uint() == 0
	case reflect.Float64:
		return math.Float64bits(v.Float()) == 0
	case reflect.Slice:
		return v.Len() == 0
	case reflect.Pointer:
		return v.IsNil()
	case reflect.Struct:
		for _, i := range poolFields(w.fields, v.Type()) {
			if !w.isZero(v.Field(i)) {
				return false
			}
		}
		return true
	}
	panic(fmt.Sprintf("internal error: pool value of unsupported kind %s", v.Type()))
}

// value appends v's encoding.
func (w *poolWriter) value(v reflect.Value) {
	switch v.Kind() {
	case reflect.Bool:
		// a set bool is its bitmap bit
	case reflect.String:
		w.b = binary.AppendUvarint(w.b, w.str(v.String()))
	case reflect.Int, reflect.Int64:
		w.b = binary.AppendVarint(w.b, v.Int())
	case reflect.Uint8, reflect.Uint32:
		w.b = binary.AppendUvarint(w.b, v.Uint())
	case reflect.Float64:
		f := v.Float()
		if (math.IsNaN(f) || math.IsInf(f, 0)) && w.err == nil {
			w.err = fmt.Errorf("unsupported value: %v", f)
		}
		w.b = binary.AppendUvarint(w.b, bits.ReverseBytes64(math.Float64bits(f)))
	case reflect.Slice:
		w.b = binary.AppendUvarint(w.b, uint64(v.Len()))
		for i := 0; i < v.Len(); i++ {
			w.value(v.Index(i))
		}
	case reflect.Pointer:
		w.value(v.Elem())
	case reflect.Struct:
		fs := poolFields(w.fields, v.Type())
		var set uint64
		for j, i := range fs {
			if !w.isZero(v.Field(i)) {
				set |= 1 << j
			}
		}
		w.b = binary.AppendUvarint(w.b, set)
		for j, i := range fs {
			if set&(1<<j) != 0 {
				w.value(v.Field(i))
			}
		}
	default:
		panic(fmt.Sprintf("internal error: pool value of unsupported kind %s", v.Type()))
	}
}

// A poolReader decodes what a poolWriter wrote.
type poolReader struct {
	reader
	strs   []string
	fields map[reflect.Type][]int
}

func (r *poolReader) str() (string, error) {
	i, err := r.uvarint()
	if err != nil {
		return "", err
	}
	if i >= uint64(len(r.strs)) {
		return "", badCode("%s: string index %d is out of range: %d strings", r.what, i, len(r.strs))
	}
	return r.strs[i], nil
}

// value decodes into v, which is zero and settable.
func (r *poolReader) value(v reflect.Value, depth int) error {
	if depth > maxPoolDepth {
		return badCode("%s: values nested deeper than %d", r.what, maxPoolDepth)
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.String:
		s, err := r.str()
		if err != nil {
			return err
		}
		v.SetString(s)
	case reflect.Int, reflect.Int64:
		n, err := r.varint()
		if err != nil {
			return err
		}
		v.SetInt(int64(n))
	case reflect.Uint8, reflect.Uint32:
		n, err := r.uvarint()
		if err != nil {
			return err
		}
		if v.OverflowUint(n) {
			return badCode("%s: number %d is too large for %s", r.what, n, v.Type())
		}
		v.SetUint(n)
	case reflect.Float64:
		n, err := r.uvarint()
		if err != nil {
			return err
		}
		f := math.Float64frombits(bits.ReverseBytes64(n))
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return badCode("%s: number %v is not finite", r.what, f)
		}
		v.SetFloat(f)
	case reflect.Slice:
		n, err := r.uvarint()
		if err != nil {
			return err
		}
		if n == 0 || n > uint64(len(r.b)) { // every element takes at least one byte
			return badCode("%s: %d elements in %d bytes", r.what, n, len(r.b))
		}
		s := reflect.MakeSlice(v.Type(), int(n), int(n))
		for i := 0; i < int(n); i++ {
			if err := r.value(s.Index(i), depth+1); err != nil {
				return err
			}
		}
		v.Set(s)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		if err := r.value(p.Elem(), depth+1); err != nil {
			return err
		}
		v.Set(p)
	case reflect.Struct:
		fs := poolFields(r.fields, v.Type())
		set, err := r.uvarint()
		if err != nil {
			return err
		}
		if set>>len(fs) != 0 {
			return badCode("%s: field bitmap %#x names fields %s does not have", r.what, set, v.Type())
		}
		for j, i := range fs {
			if set&(1<<j) != 0 {
				if err := r.value(v.Field(i), depth+1); err != nil {
					return err
				}
			}
		}
	default:
		panic(fmt.Sprintf("internal error: pool value of unsupported kind %s", v.Type()))
	}
	return nil
}

// maxPoolDepth bounds the nesting of decoded values (conditions and
// values nest), so that a hostile file cannot exhaust the stack.
const maxPoolDepth = 10000
