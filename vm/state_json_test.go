package vm

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	"smith/workers/step"
)

// reflectJSON is what the store wrote before State.AppendJSON: an
// encoding/json Encoder with HTML escaping off, without its newline.
func reflectJSON(t testing.TB, v any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// checkStateJSON fails unless s.AppendJSON writes what encoding/json does.
func checkStateJSON(t testing.TB, name string, s *State) {
	t.Helper()
	want := "prefix" + reflectJSON(t, s)
	got, err := s.AppendJSON([]byte("prefix"))
	if err != nil {
		t.Fatalf("%s: AppendJSON() error %v", name, err)
	}
	if string(got) != want {
		t.Fatalf("%s: AppendJSON() =\n%s\nwant (encoding/json)\n%s", name, got, want)
	}
}

func TestStateAppendJSON(t *testing.T) {
	t.Parallel()
	odd := "<a&b> \"q\" \\ \t\n\r\b\f\x00\x1f\x7f é \xff\xfe \u2028\u2029 😀 \xed\xa0\x80"
	typical := &State{
		RunID: "r1", WorkflowName: "demo", WorkflowPath: "/w/demo.yaml", ProgramHash: "abc",
		Status: StatusRunning, StartedAt: "2026-11-25T20:00:00Z", CurrentStep: "Build", Phase: PhaseStart,
		Signal: SigSuccess, Context: map[string]any{"target": "all", "n": 3.0, "list": []any{"a", 1.5, nil, true}},
		Stats:   Stats{TotalTokensUsed: 120, TotalLinesWritten: 7},
		Payload: []step.Segment{{ID: "1", Type: "output", Content: "hello\nworld", Timestamp: "t"}},
		Steps: map[string]*StepResult{
			"Build": {Status: StepCompleted, Output: "ok", Lines: []string{"ok"}, JSON: map[string]any{"k": "v"}, Duration: 0.25, Attempts: 1},
			"Test":  {Status: StepFailed, ExitCode: 1, Error: &StepError{Code: "E_X", Message: "boom"}, Duration: 1e-7},
			"Gone":  nil,
		},
		ReturnStack: []ReturnFrame{{ReturnBlock: "M", Node: "Sub", Saved: true, SavedPayload: []step.Segment{}}},
		LoopStack:   []LoopFrame{{Loop: "L", Index: 1, Total: 3, Items: []any{"a", "b", "c"}, Elapsed: 2}},
		Visits:      map[string]int{"Build": 1, "Test": 2},
		Threads: map[string]*Thread{"0": {Status: ThreadCompleted, Record: &Iteration{Index: 0, Item: "a"}},
			"1": nil},
		Sessions: map[string]step.Session{"engineer": {Provider: "claude", ID: "s1", Turns: 2}},
		Seq:      9, EventSeq: 12,
	}
	for name, s := range map[string]*State{
		"empty":   {},
		"typical": typical,
		"empty collections": {Context: map[string]any{}, Payload: []step.Segment{}, Steps: map[string]*StepResult{},
			ReturnStack: []ReturnFrame{}, LoopStack: []LoopFrame{}, Visits: map[string]int{}, ChangePlan: []string{},
			Threads: map[string]*Thread{}, Sessions: map[string]step.Session{}},
		"odd strings": {RunID: odd, Context: map[string]any{odd: odd, "": odd}, ChangePlan: []string{odd},
			Steps: map[string]*StepResult{odd: {Output: odd, Lines: []string{odd, ""}, JSON: odd}}},
		"floats": {LoopStack: []LoopFrame{{Elapsed: 1e21}, {Elapsed: -1e-6}, {Elapsed: 123456789.125}, {Elapsed: 5e-324}},
			Context: map[string]any{"max": math.MaxFloat64, "small": 1e-7, "neg": math.Copysign(0, -1), "int": 1 << 53}},
	} {
		checkStateJSON(t, name, s)
	}
}

func TestStateAppendJSONError(t *testing.T) {
	t.Parallel()
	for _, s := range []*State{
		{Context: map[string]any{"nan": math.NaN()}},
		{Steps: map[string]*StepResult{"A": {Duration: math.Inf(1)}}},
		{LoopStack: []LoopFrame{{Items: []any{func() {}}}}},
	} {
		if _, err := json.Marshal(s); err == nil {
			t.Fatalf("encoding/json encodes %+v", s)
		}
		if _, err := s.AppendJSON(nil); err == nil {
			t.Errorf("AppendJSON(%+v) succeeded, encoding/json fails", s)
		}
	}
}

// TestStateAppendJSONMatchesReflection compares State.AppendJSON with
// encoding/json on states whose fields are filled at random, every field of
// every nested type included (nil and empty slices and maps, maps of
// several keys, values of type any of many types): a field added to State
// or to a type it holds fails here until AppendJSON writes it.
func TestStateAppendJSONMatchesReflection(t *testing.T) {
	t.Parallel()
	for seed := int64(0); seed < 2000; seed++ {
		r := rand.New(rand.NewSource(seed))
		s := &State{}
		fillRandom(reflect.ValueOf(s).Elem(), r, 0, seed%3 == 0)
		checkStateJSON(t, "seed "+strconv.FormatInt(seed, 10), s)
	}
}

// TestAppendJSONEveryField checks that the random fill sets every field of
// State's and Delta's types somewhere (so that the comparisons with
// encoding/json cover them) by walking the types with reflect.
func TestAppendJSONEveryField(t *testing.T) {
	t.Parallel()
	for _, ty := range []reflect.Type{reflect.TypeFor[State](), reflect.TypeFor[Delta]()} {
		set := map[string]bool{}
		for seed := int64(0); seed < 60; seed++ {
			v := reflect.New(ty).Elem()
			fillRandom(v, rand.New(rand.NewSource(seed)), 0, true)
			markSet(v, set)
		}
		seen := map[reflect.Type]bool{}
		var walk func(reflect.Type)
		walk = func(ty reflect.Type) {
			switch ty.Kind() {
			case reflect.Pointer, reflect.Slice, reflect.Map:
				walk(ty.Elem())
			case reflect.Struct:
				if seen[ty] {
					return
				}
				seen[ty] = true
				for i := 0; i < ty.NumField(); i++ {
					f := ty.Field(i)
					if !f.IsExported() || f.Tag.Get("json") == "-" {
						continue
					}
					if !set[ty.String()+"."+f.Name] {
						t.Errorf("the random values never set %s.%s", ty, f.Name)
					}
					walk(f.Type)
				}
			}
		}
		walk(ty)
	}
}

// markSet records in set the struct fields (Type.Field) v holds non-zero.
func markSet(v reflect.Value, set map[string]bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			markSet(v.Elem(), set)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			markSet(v.Index(i), set)
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			markSet(it.Value(), set)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() && !v.Field(i).IsZero() {
				set[v.Type().String()+"."+v.Type().Field(i).Name] = true
				markSet(v.Field(i), set)
			}
		}
	}
}

// FuzzStateAppendJSON: whatever a state.json decodes to, AppendJSON writes
// what encoding/json does. Seeded from the states in testdata.
func FuzzStateAppendJSON(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.state.golden")
	more, _ := filepath.Glob("testdata/prompts/*.state.json")
	for _, name := range append(files, more...) {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for seed := int64(0); seed < 5; seed++ {
		s := &State{}
		fillRandom(reflect.ValueOf(s).Elem(), rand.New(rand.NewSource(seed)), 0, true)
		f.Add([]byte(reflectJSON(f, s)))
	}
	f.Add([]byte(`{"context":{"a":[1,{"b":null}],"\u2028":"\ud800"},"steps":{"A":{"json":1e-7,"iterations":[{"item":[]}]}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var s State
		if json.Unmarshal(data, &s) != nil {
			return
		}
		checkStateJSON(t, "fuzz", &s)
	})
}

// typicalState is the state of a run after 20 steps: results with some
// output, a payload segment and a visit count each, a little context.
func typicalState() *State {
	s := &State{RunID: "20261125-200000-abcd", WorkflowName: "demo", WorkflowPath: "/home/u/wf/demo.yaml",
		ProgramHash: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", Status: StatusRunning,
		StartedAt: "2026-11-25T20:00:00.123456789Z", CurrentStep: "Step20", Phase: PhaseDispatch, Signal: SigSuccess,
		Context: map[string]any{"target": "all", "retries": 3.0, "files": []any{"a.go", "b.go"}},
		Stats:   Stats{TotalTokensUsed: 1234, TotalLinesWritten: 56},
		Payload: []step.Segment{}, Steps: map[string]*StepResult{}, ReturnStack: []ReturnFrame{}, LoopStack: []LoopFrame{},
		Visits: map[string]int{}, Workspace: "/home/u/project", Seq: 40, EventSeq: 81}
	for i := 1; i <= 20; i++ {
		name := "Step" + strconv.Itoa(i)
		out := "building package " + name + "\nok  \tsmith/" + name + "\t0.123s\nPASS"
		s.Steps[name] = &StepResult{Status: StepCompleted, Output: out, Lines: []string{"ok", name}, Duration: 0.123 * float64(i),
			Attempts: 1, Signal: SigSuccess, Visits: 1, StartedAt: "2026-11-25T20:00:01Z", EndedAt: "2026-11-25T20:00:02Z"}
		s.Payload = append(s.Payload, step.Segment{ID: strconv.Itoa(i), Type: "output", Content: out, Timestamp: "2026-11-25T20:00:02Z"})
		s.Visits[name] = 1
	}
	return s
}

// BenchmarkStateJSON encodes a 20-step state by hand (AppendJSON, as the
// store does) and by encoding/json (as it did before).
func BenchmarkStateJSON(b *testing.B) {
	s := typicalState()
	checkStateJSON(b, "typical", s)
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			var err error
			if buf, err = s.AppendJSON(buf[:0]); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(len(buf)))
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(s); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(buf.Len()))
	})
}
