package manifest

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"smith/source"
)

// The classes of a step's keys: the values of the step tag of the fields
// of Step (see Step).
const (
	StepKind     = "kind"     // one of the step's kinds
	StepProvider = "provider" // read only by a provider step
	StepProcess  = "process"  // read only by a step that runs a process
	StepAny      = "any"      // read by a step of any kind
)

// StepClasses are the values a step tag may have.
var StepClasses = []string{StepKind, StepProvider, StepProcess, StepAny}

// A StepKey is one key of a step and where Step holds it.
type StepKey struct {
	Key   string // the document key
	index int    // of its field in Step
	pos   []int  // of the Pos field of the object a pointer field points to; nil: a scalar field
}

// StepKeys returns the keys of a step whose fields are tagged
// step:"class", in field order. The table is read from the tags once.
func StepKeys(class string) []StepKey { return stepKeys()[class] }

var stepKeys = sync.OnceValue(func() map[string][]StepKey {
	out := map[string][]StepKey{}
	t := reflect.TypeFor[Step]()
	for i := range t.NumField() {
		f := t.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if key == "" || key == "-" {
			continue
		}
		class := f.Tag.Get("step")
		k := StepKey{Key: key, index: i}
		switch {
		case f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct:
			p, ok := f.Type.Elem().FieldByName("Pos")
			if !ok || p.Type != reflect.TypeFor[source.Pos]() {
				panic(fmt.Sprintf("internal error: step key %s: %s has no Pos", key, f.Type))
			}
			k.pos = p.Index
		case reflect.PointerTo(f.Type).Implements(reflect.TypeFor[present]()):
		default:
			panic(fmt.Sprintf("internal error: step key %s: type %s does not say whether it is set", key, f.Type))
		}
		out[class] = append(out[class], k)
	}
	return out
})

// Has reports whether s sets the key k, and the position of its value.
func (s *Step) Has(k StepKey) (source.Pos, bool) {
	v := reflect.ValueOf(s).Elem().Field(k.index)
	if k.pos == nil {
		return v.Addr().Interface().(present).present()
	}
	if v.IsNil() {
		return source.Pos{}, false
	}
	return *v.Elem().FieldByIndex(k.pos).Addr().Interface().(*source.Pos), true
}

// present is a value that says whether the document sets it, and where.
type present interface {
	present() (source.Pos, bool)
}

func (x *String) present() (source.Pos, bool)       { return x.Pos, x.Set }
func (x *Number) present() (source.Pos, bool)       { return x.Pos, x.Set }
func (x *Bool) present() (source.Pos, bool)         { return x.Pos, x.Set }
func (x *StringList) present() (source.Pos, bool)   { return x.Pos, x.Set }
func (x *StringOrList) present() (source.Pos, bool) { return x.Pos, x.Set }
func (x *StringMap) present() (source.Pos, bool)    { return x.Pos, x.Set }

func (x *Free) present() (source.Pos, bool) {
	if x.V == nil {
		return source.Pos{}, false
	}
	return x.V.Pos, true
}
