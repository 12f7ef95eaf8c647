package vm

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"reflect"
	"testing"
	"time"
)

// TestDeltaAppendJSONMatchesReflection compares Delta.AppendJSON with
// encoding/json (HTML escaping off, as the store encodes) on deltas whose
// fields are filled at random, every field of every nested type included:
// a field added to Delta or to a type it holds fails here until
// AppendJSON writes it.
func TestDeltaAppendJSONMatchesReflection(t *testing.T) {
	t.Parallel()
	for seed := int64(0); seed < 3000; seed++ {
		r := rand.New(rand.NewSource(seed))
		d := &Delta{}
		full := seed%3 == 0 // every pointer, slice and map set
		fillRandom(reflect.ValueOf(d).Elem(), r, 0, full)
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(d); err != nil {
			t.Fatal(err)
		}
		got, err := d.AppendJSON([]byte("prefix"))
		if err != nil {
			t.Fatalf("seed %d: AppendJSON() error %v", seed, err)
		}
		if w := "prefix" + string(bytes.TrimSuffix(want.Bytes(), []byte("\n"))); string(got) != w {
			t.Fatalf("seed %d: AppendJSON() =\n%s\nwant (encoding/json)\n%s", seed, got, w)
		}
	}
}

var randomStrings = []string{"", "plain", "Step_1", "<b>&amp;</b>", `quote " and \ back`, "tab\tnew\nline\x01",
	"ünïcødé", "line\u2028sep", "bad \xff byte", "SIGNAL:SUCCESS", "2026-11-25T20:00:00.123456789Z"}

var randomFloats = []float64{0, 1.5, -2.25, 1e-7, 1e21, -3.5e-9, 123456789.125, 1e20, 0.000001}

// fillRandom sets v (settable) to a random value of its type; full sets
// every pointer, slice and map.
func fillRandom(v reflect.Value, r *rand.Rand, depth int, full bool) {
	if depth > 6 {
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(randomStrings[r.Intn(len(randomStrings))])
	case reflect.Int, reflect.Int64:
		v.SetInt([]int64{0, 1, -7, 42, 1 << 40}[r.Intn(5)])
	case reflect.Bool:
		v.SetBool(r.Intn(2) == 0)
	case reflect.Float64:
		v.SetFloat(randomFloats[r.Intn(len(randomFloats))])
	case reflect.Pointer:
		if full || r.Intn(2) == 0 {
			p := reflect.New(v.Type().Elem())
			fillRandom(p.Elem(), r, depth+1, full)
			v.Set(p)
		}
	case reflect.Slice:
		n := r.Intn(3)
		if full {
			n = 1 + r.Intn(2)
		} else if n == 0 && r.Intn(2) == 0 {
			v.Set(reflect.MakeSlice(v.Type(), 0, 0)) // empty, not nil
			return
		}
		if n == 0 {
			return
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := 0; i < n; i++ {
			fillRandom(s.Index(i), r, depth+1, full)
		}
		v.Set(s)
	case reflect.Map:
		n := r.Intn(4)
		if full {
			n = 1 + r.Intn(4)
		}
		if n == 0 {
			return
		}
		m := reflect.MakeMap(v.Type())
		for i := 0; i < n; i++ {
			k := reflect.New(v.Type().Key()).Elem()
			fillRandom(k, r, depth+1, full)
			e := reflect.New(v.Type().Elem()).Elem()
			fillRandom(e, r, depth+1, full)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Interface:
		switch r.Intn(12) {
		case 0:
		case 1:
			v.Set(reflect.ValueOf(randomStrings[r.Intn(len(randomStrings))]))
		case 2:
			v.Set(reflect.ValueOf(randomFloats[r.Intn(len(randomFloats))]))
		case 3:
			v.Set(reflect.ValueOf(map[string]any{"k": "<v>", "n": 1.0, "z": []any{true, nil}}))
		case 4:
			v.Set(reflect.ValueOf([]any{"a&b", 2.0}))
		case 5:
			v.Set(reflect.ValueOf(true))
		case 6:
			v.Set(reflect.ValueOf(map[string]any{"b": map[string]any{"\xff": nil, "a": []any{}}, "a": map[string]any(nil), "\u2028": []any(nil)}))
		case 7:
			v.Set(reflect.ValueOf([]string{"x", "<y>"}))
		case 8:
			v.Set(reflect.ValueOf(json.RawMessage(` { "raw" : [1, "<&>"] } `)))
		case 9:
			v.Set(reflect.ValueOf([]any{1, int64(-2), float32(0.1), json.Number("12.5"), []string(nil), map[string]int{"z": 1, "a": 2}}))
		case 10:
			v.Set(reflect.ValueOf(time.Date(2026, 11, 25, 20, 0, 0, 123456789, time.UTC)))
		case 11:
			v.Set(reflect.ValueOf(randomFloats[r.Intn(len(randomFloats))] * 1e9))
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fillRandom(v.Field(i), r, depth+1, full)
			}
		}
	default:
		panic("fillRandom: kind " + v.Kind().String())
	}
}
