package manifest

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"smith/source"
)

// dumpDecoded prints a decoded document: every set field with its value and
// position (line:col), maps in document order, one field per line.
func dumpDecoded(v any) string {
	var b strings.Builder
	dumpValue(&b, "", reflect.ValueOf(v))
	return b.String()
}

var (
	posType  = reflect.TypeOf(source.Pos{})
	freeType = reflect.TypeOf(Free{})
)

func lc(p source.Pos) string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// dumpLeaf prints the wrapper types; it reports false for other types.
func dumpLeaf(v reflect.Value) (string, bool) {
	switch x := v.Interface().(type) {
	case String:
		return fmt.Sprintf("%q @%s", x.V, lc(x.Pos)), true
	case Number:
		return fmt.Sprintf("%v @%s", x.V, lc(x.Pos)), true
	case Bool:
		return fmt.Sprintf("%v @%s", x.V, lc(x.Pos)), true
	case Scalar:
		return fmt.Sprintf("%q string=%v @%s", x.Str, x.IsString, lc(x.Pos)), true
	case StringList:
		return fmt.Sprintf("%s @%s", dumpStrings(x.V), lc(x.Pos)), true
	case StringOrList:
		return fmt.Sprintf("%s @%s", dumpStrings(x.V), lc(x.Pos)), true
	case StringMap:
		var parts []string
		for _, e := range x.V {
			parts = append(parts, fmt.Sprintf("%q@%s: %q@%s", e.Key, lc(e.KeyPos), e.Val.V, lc(e.Val.Pos)))
		}
		return fmt.Sprintf("{%s} @%s", strings.Join(parts, ", "), lc(x.Pos)), true
	case Free:
		return fmt.Sprintf("%s @%s", x.V.AppendJSON(nil), lc(x.V.Pos)), true
	case source.Pos:
		return "@" + lc(x), true
	}
	return "", false
}

func dumpStrings(l []String) string {
	var parts []string
	for _, s := range l {
		parts = append(parts, fmt.Sprintf("%q@%s", s.V, lc(s.Pos)))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func dumpValue(b *strings.Builder, ind string, v reflect.Value) {
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f, fv := t.Field(i), v.Field(i)
		if fv.Kind() == reflect.Pointer && !fv.IsNil() && fv.Type().Elem().Kind() == reflect.Struct {
			if _, ok := dumpLeaf(fv.Elem()); ok {
				fv = fv.Elem() // a rare scalar of Block or Transition, dumped as if inline
			}
		}
		if fv.IsZero() {
			continue
		}
		if s, ok := dumpLeaf(fv); ok {
			fmt.Fprintf(b, "%s%s: %s\n", ind, f.Name, s)
			continue
		}
		switch fv.Kind() {
		case reflect.String, reflect.Int:
			fmt.Fprintf(b, "%s%s: %v\n", ind, f.Name, fv.Interface())
		case reflect.Pointer:
			fmt.Fprintf(b, "%s%s:\n", ind, f.Name)
			dumpValue(b, ind+"  ", fv)
		case reflect.Slice:
			for j := 0; j < fv.Len(); j++ {
				fmt.Fprintf(b, "%s%s[%d]:\n", ind, f.Name, j)
				dumpValue(b, ind+"  ", fv.Index(j))
			}
		case reflect.Map:
			if fv.Type().Elem().Kind() == reflect.Slice {
				continue // Parallel.Branches: dumped in document order from Order
			}
			keys := fv.MapKeys()
			sort.Slice(keys, func(i, j int) bool {
				return fv.MapIndex(keys[i]).Elem().FieldByName("Order").Int() < fv.MapIndex(keys[j]).Elem().FieldByName("Order").Int()
			})
			for _, k := range keys {
				fmt.Fprintf(b, "%s%s[%q]:\n", ind, f.Name, k.String())
				dumpValue(b, ind+"  ", fv.MapIndex(k))
			}
		default:
			fmt.Fprintf(b, "%s%s: ?%v\n", ind, f.Name, fv.Kind())
		}
	}
}

// TestDecodeGolden loads every testdata/*.yaml and *.json input and compares
// the printed result with NAME.decode.golden.
func TestDecodeGolden(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("testdata/*.yaml")
	more, _ := filepath.Glob("testdata/*.json")
	files = append(files, more...)
	if len(files) == 0 {
		t.Fatal("no inputs in testdata")
	}
	for _, file := range files {
		stem := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
		t.Run(stem+filepath.Ext(file), func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			wf, mf, ds := Load(filepath.Base(file), src)
			var b strings.Builder
			for _, d := range ds {
				b.WriteString(d.Format() + "\n")
			}
			if wf != nil {
				b.WriteString(dumpDecoded(wf))
			}
			if mf != nil {
				b.WriteString(dumpDecoded(mf))
			}
			checkGolden(t, strings.TrimSuffix(file, filepath.Ext(file))+".decode.golden", []byte(b.String()))
		})
	}
}

// setFields records "Type.Field" for every non-zero field in the tree v.
func setFields(v reflect.Value, seen map[string]bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			setFields(v.Elem(), seen)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			setFields(v.Index(i), seen)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			setFields(v.MapIndex(k), seen)
		}
	case reflect.Struct:
		t := v.Type()
		if t == posType || t == freeType {
			return
		}
		for i := 0; i < t.NumField(); i++ {
			if !v.Field(i).IsZero() {
				seen[t.Name()+"."+t.Field(i).Name] = true
			}
			setFields(v.Field(i), seen)
		}
	}
}

// allFields lists "Type.Field" for every field of every struct type of this
// package reachable from t (Value and source.Pos are not entered).
func allFields(t reflect.Type, out map[string]bool, done map[reflect.Type]bool) {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map:
		allFields(t.Elem(), out, done)
	case reflect.Struct:
		if done[t] || t == posType || t == freeType {
			return
		}
		done[t] = true
		for i := 0; i < t.NumField(); i++ {
			out[t.Name()+"."+t.Field(i).Name] = true
			allFields(t.Field(i).Type, out, done)
		}
	}
}

// TestDecodeEveryField checks that the rich inputs set every field of every
// type, so that a field the decoder forgets fails the test.
func TestDecodeEveryField(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		file string
		typ  reflect.Type
	}{
		{"workflow", "testdata/workflow_rich.yaml", reflect.TypeOf(Workflow{})},
		{"manifest", "testdata/manifest_rich.json", reflect.TypeOf(Manifest{})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			wf, mf, ds := Load(tt.file, src)
			if len(ds) > 0 {
				t.Fatalf("Load(%q) diagnostics:\n%v", tt.file, ds)
			}
			seen := map[string]bool{}
			if wf != nil {
				setFields(reflect.ValueOf(wf), seen)
			} else {
				setFields(reflect.ValueOf(mf), seen)
			}
			all := map[string]bool{}
			allFields(tt.typ, all, map[reflect.Type]bool{})
			var missing []string
			for f := range all {
				if !seen[f] {
					missing = append(missing, f)
				}
			}
			sort.Strings(missing)
			if len(missing) > 0 {
				t.Errorf("Load(%q) leaves fields unset: %v", tt.file, missing)
			}
		})
	}
}

// TestFreeIsCopied checks that a decoded Free value equals its subtree of
// the document but shares none of its values: the tree's scalars are
// carved from slabs shared with the rest of the tree, which a Free kept by
// reference would keep alive.
func TestFreeIsCopied(t *testing.T) {
	src := []byte(`{"version": "1", "entry": "Node:A",
  "workers": {"W": {"provider": "mock", "provider_params": {"model": "m", "n": [1, true, null, {"k": "v"}]}}},
  "nodes": {"Node:A": {"entry_block": "Block:X", "static_memory": {"rules": "r", "list": ["a", "b"], "empty": [], "obj": {}},
    "blocks": {"Block:X": {"worker": "W", "transitions": [{"on_signal": "SIGNAL:FAIL_DEFAULT", "action": "END"}]}}}}}`)
	tree, ds := ParseJSON("m.json", src)
	if len(ds) > 0 {
		t.Fatal(ds)
	}
	inTree := map[*Value]bool{}
	var walk func(v *Value, visit func(*Value))
	walk = func(v *Value, visit func(*Value)) {
		visit(v)
		for _, e := range v.List {
			walk(e, visit)
		}
		for _, e := range v.Map {
			walk(e.Val, visit)
		}
	}
	walk(tree, func(v *Value) { inTree[v] = true })
	mf := DecodeManifest("m.json", tree)
	for _, c := range []struct {
		name string
		got  *Value
		want *Value
	}{
		{"static_memory", mf.Nodes["Node:A"].StaticMemory.V, tree.Get("nodes").Get("Node:A").Get("static_memory")},
		{"provider_params", mf.Workers["W"].ProviderParams.V, tree.Get("workers").Get("W").Get("provider_params")},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: decoded %s, want %s", c.name, c.got.AppendJSON(nil), c.want.AppendJSON(nil))
		}
		walk(c.got, func(v *Value) {
			if inTree[v] {
				t.Errorf("%s: value %s at %s is the tree's own", c.name, v.AppendJSON(nil), v.Pos)
			}
		})
	}
}
