package manifest

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// A Limit is the range of a numeric key, written once as the limit tag of
// its field in types.go: the compiler checks it (Broken), the generated
// schemas carry it (minimum, exclusiveMinimum, maximum) and the reference
// docs state it (Rule). The tag is one of
//
//	limit:"int LO.."      an integer of at least LO (and at most
//	                      math.MaxInt32, the bound of every integer)
//	limit:"int LO..HI"    an integer from LO to HI
//	limit:"LO.."          a number of at least LO
//	limit:">LO"           a number greater than LO
//	limit:"-"             any number
//
// and every numeric field has one (TestNumberKeysLimited).
type Limit struct {
	Any          bool    // any number: no limit
	Int          bool    // an integer
	Min          float64 // the least value
	MinExclusive bool    // the value must be greater than Min
	Max          float64 // the greatest value, when HasMax
	HasMax       bool
}

// IntMax is the greatest integer lim allows: Max, or math.MaxInt32.
func (lim Limit) IntMax() float64 {
	if lim.HasMax {
		return lim.Max
	}
	return math.MaxInt32
}

// Rule says what lim allows: "an integer from 1 to 60000", "greater
// than 0" ("" for any number).
func (lim Limit) Rule() string {
	switch {
	case lim.Any:
		return ""
	case lim.Int && lim.HasMax:
		return "an integer from " + bound(lim.Min) + " to " + bound(lim.Max)
	case lim.Int:
		return "an integer of at least " + bound(lim.Min)
	case lim.HasMax && !lim.MinExclusive:
		return "from " + bound(lim.Min) + " to " + bound(lim.Max)
	case lim.HasMax:
		return "greater than " + bound(lim.Min) + " and at most " + bound(lim.Max)
	case lim.MinExclusive:
		return "greater than " + bound(lim.Min)
	}
	return "at least " + bound(lim.Min)
}

// Broken returns the rule v breaks ("" when lim allows v): Rule, or for
// an integer beyond math.MaxInt32 the whole range.
func (lim Limit) Broken(v float64) string {
	if lim.Any {
		return ""
	}
	if lim.Int {
		switch {
		case v > lim.IntMax():
			return "an integer from " + bound(lim.Min) + " to " + bound(lim.IntMax())
		case v != math.Trunc(v) || v < lim.Min:
			return lim.Rule()
		}
		return ""
	}
	ok := v >= lim.Min
	if lim.MinExclusive {
		ok = v > lim.Min
	}
	if lim.HasMax {
		ok = ok && v <= lim.Max
	}
	if !ok {
		return lim.Rule()
	}
	return ""
}

// bound prints a limit's bound in full (2147483647, not 2.147483647e+09).
func bound(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// LimitOf returns the limit of key in object (a type of types.go: Step,
// WaitFor, Block, ...). It panics for a key without a limit tag: a bug.
func LimitOf(object, key string) Limit {
	lim, ok := limits()[object+"."+key]
	if !ok {
		panic(fmt.Sprintf("internal error: %s.%s has no limit tag", object, key))
	}
	return lim
}

// limits is the table of the limit tags of the types reached from
// Workflow and Manifest, keyed "Object.key", read once.
var limits = sync.OnceValue(func() map[string]Limit {
	out := map[string]Limit{}
	eachKey(func(t reflect.Type, f reflect.StructField, key string) {
		if tag, ok := f.Tag.Lookup("limit"); ok {
			lim, err := parseLimit(tag)
			if err != nil {
				panic(fmt.Sprintf("internal error: %s.%s: %v", t.Name(), f.Name, err))
			}
			out[t.Name()+"."+key] = lim
		}
	})
	return out
})

// eachKey calls fn for every field with a document key of the types
// reached from Workflow and Manifest, visiting each type once.
func eachKey(fn func(t reflect.Type, f reflect.StructField, key string)) {
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			if key, _, _ := strings.Cut(f.Tag.Get("json"), ","); key != "" && key != "-" {
				fn(t, f, key)
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeFor[Workflow]())
	walk(reflect.TypeFor[Manifest]())
}

// parseLimit reads a limit tag (see Limit).
func parseLimit(tag string) (Limit, error) {
	var lim Limit
	if tag == "-" {
		return Limit{Any: true}, nil
	}
	rest, isInt := strings.CutPrefix(tag, "int ")
	lim.Int = isInt
	var lo, hi string
	if s, ok := strings.CutPrefix(rest, ">"); ok && !isInt {
		lo, lim.MinExclusive = s, true
	} else if l, h, ok := strings.Cut(rest, ".."); ok {
		lo, hi = l, h
	} else {
		return lim, fmt.Errorf("limit tag %q is none of int LO.., int LO..HI, LO.., >LO, -", tag)
	}
	var err error
	if lim.Min, err = strconv.ParseFloat(lo, 64); err != nil {
		return lim, fmt.Errorf("limit tag %q: %v", tag, err)
	}
	if hi != "" {
		if lim.Max, err = strconv.ParseFloat(hi, 64); err != nil {
			return lim, fmt.Errorf("limit tag %q: %v", tag, err)
		}
		lim.HasMax = true
	}
	return lim, nil
}

// LimitedKeys returns the keys with a limit tag, "Object.key", sorted.
func LimitedKeys() []string {
	keys := make([]string, 0, len(limits()))
	for k := range limits() {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
