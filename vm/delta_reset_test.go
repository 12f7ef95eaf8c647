package vm

import (
	"reflect"
	"testing"
)

// TestDeltaReset fills every field of a Delta and checks that reset
// clears each one and keeps the arrays of Steps, Reset and LoopStack: a
// field added to Delta and forgotten in reset fails here.
func TestDeltaReset(t *testing.T) {
	var d Delta
	v := reflect.ValueOf(&d).Elem()
	for i := 0; i < v.NumField(); i++ {
		fill(t, v.Type().Field(i).Name, v.Field(i))
	}
	steps, reset, loops := cap(d.Steps), cap(d.Reset), cap(d.LoopStack)
	d.reset()
	for i := 0; i < v.NumField(); i++ {
		f, name := v.Field(i), v.Type().Field(i).Name
		switch name {
		case "Steps", "Reset", "LoopStack":
			if f.Len() != 0 {
				t.Errorf("reset left %s with %d elements", name, f.Len())
			}
		default:
			if !f.IsZero() {
				t.Errorf("reset left %s = %v", name, f.Interface())
			}
		}
	}
	if cap(d.Steps) != steps || cap(d.Reset) != reset || cap(d.LoopStack) != loops {
		t.Errorf("reset dropped the arrays: caps %d %d %d, want %d %d %d", cap(d.Steps), cap(d.Reset), cap(d.LoopStack), steps, reset, loops)
	}
}

// fill sets v, of any kind a Delta field has, to a non-zero value.
func fill(t *testing.T, name string, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int:
		v.SetInt(1)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 4))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			fill(t, name+"."+v.Type().Field(i).Name, v.Field(i))
		}
	default:
		t.Fatalf("fill: Delta.%s has kind %s: teach fill and reset about it", name, v.Kind())
	}
}
