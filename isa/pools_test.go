package isa

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// poolLayout pins the layout of the pool types (pools.go) for Version:
// the .smbc encoding follows the Go types, so a change to them is a change
// of the format.
const (
	poolLayoutVersion = 5
	poolLayout        = "8f2062234c55d4cd8e3265c4880618784ea545d6ce61d19428ed305dfbd716c2"
)

// layout describes the encoded layout of t: every encoded field's name and
// kind, recursively, each struct type once.
func layout(t reflect.Type, seen map[reflect.Type]bool, b *strings.Builder) error {
	switch t.Kind() {
	case reflect.Bool, reflect.String, reflect.Int, reflect.Int64, reflect.Uint8, reflect.Uint32, reflect.Float64:
		b.WriteString(t.Kind().String())
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Bool {
			return fmt.Errorf("%s: a list of bools has no encoding (a true element is zero bytes)", t)
		}
		b.WriteString("[]")
		return layout(t.Elem(), seen, b)
	case reflect.Pointer:
		b.WriteString("*")
		return layout(t.Elem(), seen, b)
	case reflect.Struct:
		b.WriteString(t.Name())
		if seen[t] {
			return nil
		}
		seen[t] = true
		b.WriteString("{")
		for _, i := range poolFields(map[reflect.Type][]int{}, t) {
			f := t.Field(i)
			b.WriteString(f.Name + " ")
			if err := layout(f.Type, seen, b); err != nil {
				return err
			}
			b.WriteString("; ")
		}
		b.WriteString("}")
	default:
		return fmt.Errorf("%s: kind %s has no pool encoding", t, t.Kind())
	}
	return nil
}

func TestPoolLayout(t *testing.T) {
	var b strings.Builder
	if err := layout(reflect.TypeFor[Program](), map[reflect.Type]bool{}, &b); err != nil {
		t.Fatalf("the pool types cannot be encoded: %v", err)
	}
	sum := sha256.Sum256([]byte(b.String()))
	got := hex.EncodeToString(sum[:])
	if got != poolLayout || Version != poolLayoutVersion {
		t.Errorf("the pool types or Version changed: layout %s, Version %d; pinned: layout %s, Version %d.\n"+
			"A change to the pool types changes the .smbc format: bump Version, then set poolLayout and poolLayoutVersion in pools_test.go.\nlayout: %s",
			got, Version, poolLayout, poolLayoutVersion, b.String())
	}
}
