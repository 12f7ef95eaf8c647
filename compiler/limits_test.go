package compiler

import (
	"fmt"
	"strings"
	"testing"

	"smith/manifest"
)

// limitSamples write a document whose key (of the object named) has the
// value val, on line 7: a workflow or a manifest.
var limitSamples = map[string]func(key, val string) (name, src string){
	"Defaults": func(key, val string) (string, string) {
		return "w.yaml", "version: \"1.0\"\nname: t\nstrict_flow: false\nsteps:\n  - {name: S, set_context: {a: 1}}\ndefaults:\n  " + key + ": " + val + "\n"
	},
	"Step": func(key, val string) (string, string) {
		return "w.yaml", "version: \"1.0\"\nname: t\nstrict_flow: false\nsteps:\n  - name: S\n    command: [\"true\"]\n    " + key + ": " + val + "\n"
	},
	"Retry": func(key, val string) (string, string) {
		return "w.yaml", "version: \"1.0\"\nname: t\nstrict_flow: false\nsteps:\n  - name: S\n    command: [\"true\"]\n    retry: {" + key + ": " + val + "}\n"
	},
	"WaitFor": func(key, val string) (string, string) {
		return "w.yaml", "version: \"1.0\"\nname: t\nstrict_flow: false\nsteps:\n  - name: S\n    command: [\"true\"]\n    wait_for: {glob: \"x/*\", " + key + ": " + val + "}\n"
	},
	"ForEach": func(key, val string) (string, string) {
		return "w.yaml", "version: \"1.0\"\nname: t\nstrict_flow: false\nsteps:\n  - name: S\n    for_each:\n      " + key + ": " + val + "\n      items: [1]\n      steps: [{name: In, command: [\"true\"]}]\n"
	},
	"Parallel": func(key, val string) (string, string) {
		return "w.yaml", "version: \"1.0\"\nname: t\nstrict_flow: false\nsteps:\n  - name: S\n    parallel:\n      " + key + ": " + val + "\n      branches: {B: [{name: In, command: [\"true\"]}]}\n"
	},
	"WorkerDef": func(key, val string) (string, string) {
		return "m.json", "{\"version\": \"1\", \"entry\": \"Node:N\",\n\"nodes\": {\"Node:N\": {\"entry_block\": \"Block:A\", \"blocks\": {\n\"Block:A\": {\"worker\": \"Internal:TestRunner\", \"transitions\": [{\"on_signal\": \"SIGNAL:FAIL_DEFAULT\", \"action\": \"END\"}]}}}},\n\"config\": {\"test_command\": [\"true\"]},\n\"workers\": {\n\"Command:Unused\": {\"command\": [\"true\"],\n\"" + key + "\": " + val + "}}}\n"
	},
	"Block": func(key, val string) (string, string) {
		return "m.json", "{\"version\": \"1\", \"entry\": \"Node:N\",\n\"config\": {\"test_command\": [\"true\"]},\n\"nodes\": {\"Node:N\": {\"entry_block\": \"Block:A\", \"blocks\": {\n\"Block:A\": {\"worker\": \"Internal:TestRunner\",\n\"transitions\": [{\"on_signal\": \"SIGNAL:FAIL_DEFAULT\", \"action\": \"END\"}],\n\n\"" + key + "\": " + val + "}}}}}\n"
	},
}

// TestLimitsChecked: built from the limit tags of manifest's types, it
// writes every limited key with values just outside its range and expects
// exactly one diagnostic, the compiler's E_SCHEMA naming the range, at the
// value, even where no step or block uses the value (a defaults entry, a
// worker no block runs); and no diagnostic for the bounds themselves. A
// limit the compiler does not check fails here.
func TestLimitsChecked(t *testing.T) {
	t.Parallel()
	for _, k := range manifest.LimitedKeys() {
		obj, key, _ := strings.Cut(k, ".")
		lim := manifest.LimitOf(obj, key)
		if lim.Any {
			continue
		}
		sample := limitSamples[obj]
		if sample == nil {
			t.Errorf("%s: add a document with a %s to limitSamples", k, obj)
			continue
		}
		bad := []float64{lim.Min - 1}
		good := []float64{lim.Min + 1}
		if lim.MinExclusive {
			bad = append(bad, lim.Min)
		} else {
			good = append(good, lim.Min)
		}
		if lim.Int {
			bad = append(bad, lim.Min+0.5, lim.IntMax()+1)
			good = append(good, lim.IntMax())
		} else if lim.HasMax {
			bad = append(bad, lim.Max+1)
			good = append(good, lim.Max)
		}
		for _, v := range bad {
			name, src := sample(key, fmt.Sprint(v))
			_, ds := lowerSource(name, []byte(src), Options{ChecksOnly: true})
			want := fmt.Sprintf("must be %s, got %s", lim.Broken(v), num(v))
			if len(ds) != 1 || !strings.Contains(ds[0].Msg, want) || ds[0].Pos.Line != 7 {
				t.Errorf("%s: %v: diagnostics\n%s\nwant one at line 7: ... %s", k, v, ds, want)
			}
		}
		for _, v := range good {
			name, src := sample(key, fmt.Sprint(v))
			if _, ds := lowerSource(name, []byte(src), Options{ChecksOnly: true}); len(ds) > 0 {
				t.Errorf("%s: %v: diagnostics\n%s\nwant none", k, v, ds)
			}
		}
	}
}
