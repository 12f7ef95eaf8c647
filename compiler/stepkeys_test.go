package compiler

import (
	"reflect"
	"strings"
	"testing"

	"smith/manifest"
	"smith/source"
)

// stepKeySamples are a value of each type of a step's field, in YAML, for
// TestStepKeysChecked.
var stepKeySamples = map[reflect.Type]string{
	reflect.TypeFor[manifest.String]():           `"in.txt"`,
	reflect.TypeFor[manifest.Number]():           `5`,
	reflect.TypeFor[manifest.Bool]():             `true`,
	reflect.TypeFor[manifest.StringList]():       `["x"]`,
	reflect.TypeFor[manifest.StringMap]():        `{A: b}`,
	reflect.TypeFor[manifest.Free]():             `{a: 1}`,
	reflect.TypeFor[*manifest.PromptTransport](): `{mode: stdin}`,
	reflect.TypeFor[*manifest.Retry]():           `{attempts: 2}`,
	reflect.TypeFor[*manifest.WaitFor]():         `{glob: "x/*"}`,
	reflect.TypeFor[*manifest.DependsOn]():       `{required: [x]}`,
}

// TestStepKeysChecked: built from the step tags of manifest.Step, it sets
// each key that only a provider step reads, and each key that only a step
// running a process reads, on a step of every kind, and expects the
// compiler's E_SCHEMA error at the key's value exactly where the kind
// does not read the key. A key tagged so that the compiler does not check
// it fails here.
func TestStepKeysChecked(t *testing.T) {
	t.Parallel()
	kinds := []struct {
		kind, yaml string
		process    bool // runs a process
		provider   bool
	}{
		{"command", `command: ["true"]`, true, false},
		{"worker", `worker: Internal:TestRunner`, true, false},
		{"provider", `provider: mock`, true, true},
		{"agent", `agent: A`, true, true},
		{"for_each", `for_each: {items: [1], steps: [{name: In, command: ["true"]}]}`, false, false},
		{"set_context", `set_context: {a: 1}`, false, false},
		{"send", `send: {to: A, content: hi}`, false, false},
		{"parallel", `parallel: {branches: {B: [{name: In, command: ["true"]}]}}`, false, false},
	}
	fields := map[string]reflect.Type{}
	st := reflect.TypeFor[manifest.Step]()
	for i := range st.NumField() {
		key, _, _ := strings.Cut(st.Field(i).Tag.Get("json"), ",")
		fields[key] = st.Field(i).Type
	}
	classes := []struct {
		class, msg string
		applies    func(process, provider bool) bool
	}{
		{manifest.StepProvider, "is read only by a provider step", func(_, provider bool) bool { return provider }},
		{manifest.StepProcess, "applies to a step that runs a process (command, provider or worker)", func(process, _ bool) bool { return process }},
	}
	for _, c := range classes {
		keys := manifest.StepKeys(c.class)
		if len(keys) == 0 {
			t.Fatalf("no step key is tagged step:%q", c.class)
		}
		for _, k := range keys {
			sample, ok := stepKeySamples[fields[k.Key]]
			if !ok {
				t.Errorf("step key %s: add a sample value of type %s to stepKeySamples", k.Key, fields[k.Key])
				continue
			}
			for _, kd := range kinds {
				src := "version: \"1.0\"\nname: t\nstrict_flow: false\nsecrets: [TOKEN]\nagents: {A: {provider: mock}}\nsteps:\n  - name: S\n    " +
					kd.yaml + "\n    " + k.Key + ": " + sample + "\n"
				_, ds := lowerSource("w.yaml", []byte(src), Options{})
				var got []source.Diagnostic
				for _, d := range ds {
					if strings.Contains(d.Msg, c.msg) {
						got = append(got, d)
					}
				}
				if c.applies(kd.process, kd.provider) {
					if len(got) > 0 {
						t.Errorf("%s on a %s step: %s, but the kind reads it", k.Key, kd.kind, got[0].Format())
					}
					continue
				}
				want := "'" + k.Key + "' " + c.msg
				if len(got) != 1 || got[0].Code != source.ESchema || got[0].Pos.Line != 9 || !strings.HasPrefix(got[0].Msg, want) {
					t.Errorf("%s on a %s step: got %v, want one E_SCHEMA at line 9: %s...", k.Key, kd.kind, got, want)
				}
			}
		}
	}
}
