package manifest

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestLoadChoosesFormat(t *testing.T) {
	t.Parallel()
	yamlSrc := "version: \"1.0\"\nname: t\nsteps:\n  - {name: A, command: [a]}\n"
	jsonSrc := `{"version": "1", "entry": "N", "nodes": {"N": {"entry_block": "B", "blocks": {"B": {"worker": "w", "transitions": []}}}}}`
	tests := []struct {
		name     string
		file     string
		src      string
		manifest bool
	}{
		{"yaml extension", "flow.yaml", yamlSrc, false},
		{"yml extension", "flow.YML", yamlSrc, false},
		{"json extension", "workflows.json", jsonSrc, true},
		{"sniffed object", "workflows.txt", "\n  " + jsonSrc, true},
		{"sniffed yaml", "flow", yamlSrc, false},
		{"json text in a .yaml file is a workflow", "flow.yaml", `{"version": "1.0", "name": "t", "steps": []}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			wf, mf, ds := Load(tt.file, []byte(tt.src))
			if len(ds) > 0 {
				t.Fatalf("Load(%q) diagnostics:\n%s", tt.file, showDiags(ds))
			}
			if got := mf != nil; got != tt.manifest || (wf != nil) == tt.manifest {
				t.Errorf("Load(%q) = workflow %v, manifest %v, want manifest %v", tt.file, wf != nil, mf != nil, tt.manifest)
			}
		})
	}
}

func TestLoadStopsOrDecodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		file    string
		src     string
		decoded bool
		want    string // the first diagnostic
	}{
		{"syntax error stops", "w.yaml", "a: [\n", false, "w.yaml:1:4: error: E_PARSE: unclosed list: the [ here has no closing ] before the end of the document (the YAML parser: did not find expected node content)"},
		{"top level list stops", "w.yaml", "- a\n", false, "w.yaml:1:1: error: E_SCHEMA: the top level must be an object, found array"},
		{"json syntax error stops", "m.json", "{", false, "m.json:1:2: error: E_PARSE: the document ends too early: expected more (a string, a list or an object is not closed)"},
		{"schema error still decodes", "w.yaml", "version: 1\nname: t\nsteps: []\n", true, "w.yaml:1:10: error: E_SCHEMA: 'version' must be a string, found number; quote it: \"1\""},
		{"manifest schema error still decodes", "m.json", `{"version": "1", "entry": "N", "nodes": 3}`, true, "m.json:1:41: error: E_SCHEMA: 'nodes' must be an object, found number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			wf, mf, ds := Load(tt.file, []byte(tt.src))
			if decoded := wf != nil || mf != nil; decoded != tt.decoded {
				t.Errorf("Load(%q) decoded = %v, want %v", tt.src, decoded, tt.decoded)
			}
			if len(ds) == 0 || ds[0].Format() != tt.want {
				t.Errorf("Load(%q) =\n%s\nwant first\n%s", tt.src, showDiags(ds), tt.want)
			}
		})
	}
}

// wrongShapes gives every key of the workflow a value of the wrong shape.
const wrongShapes = `version: [1]
name: {a: 1}
strict_flow: "yes"
secrets: a
env_allow: {a: 1}
providers: [1]
agents: {a: 1, b: {provider: {x: 1}, inbox: []}}
schemas: {a: 1}
steps:
  - 1
  - name: [x]
    command: a
    provider: 1
    worker: [1]
    for_each: {items: 1, as: [], steps: {}}
    when: {all: 1, any: [1, {not: 2}], not: [], equals: 1, exit_code: {value: a}, number: {left: {}}}
    on: {success: 1, failure: {goto: 1, end: "x"}}
    retry: [1]
    env: {A: 1}
    depends_on: {inject: "x", required: 1}
    wait_for: 1
    timeout: true
    prompt_transport: {mode: 1, argv_template: a}
`

func TestLoadWrongShapesDoNotPanic(t *testing.T) {
	t.Parallel()
	wf, ds := LoadWorkflow("w.yaml", []byte(wrongShapes))
	if wf == nil {
		t.Fatalf("LoadWorkflow(wrong shapes) = nil, want a (mostly empty) workflow")
	}
	if len(ds) < 20 {
		t.Errorf("LoadWorkflow(wrong shapes) = %d diagnostics, want at least 20:\n%s", len(ds), showDiags(ds))
	}
	for _, d := range ds {
		if d.Code != "E_SCHEMA" || !d.Pos.IsValid() || d.Msg != strings.ToLower(d.Msg[:1])+d.Msg[1:] || strings.HasSuffix(d.Msg, ".") {
			t.Errorf("LoadWorkflow(wrong shapes) diagnostic %q: want E_SCHEMA, a position, lowercase, no period", d.Format())
		}
	}
	if len(wf.Steps) != 1 || wf.Steps[0].Name.Set || wf.Steps[0].Timeout.Set {
		t.Errorf("LoadWorkflow(wrong shapes) decoded wrong-shaped values: %+v", wf.Steps)
	}
}

func FuzzLoadWorkflow(f *testing.F) {
	rich, err := os.ReadFile("testdata/workflow_rich.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{string(rich), wrongShapes, positionsYAML, billionLaughs(), "steps: [{name: a, when: {not: {not: {}}}}]", "{}", ""} {
		f.Add([]byte(s))
	}
	vr := mustValidator(NewWorkflowValidator())
	f.Fuzz(func(t *testing.T, src []byte) {
		wf, ds := loadWorkflow(vr, "f.yaml", src)
		if wf == nil && !ds.HasErrors() {
			t.Fatalf("LoadWorkflow(%q) = nil without an error", src)
		}
	})
}

func FuzzLoadManifest(f *testing.F) {
	rich, err := os.ReadFile("testdata/manifest_rich.json")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{string(rich), positionsJSON, `{"nodes": {"N": {"blocks": {"B": {"transitions": [1, {}]}}}}}`, `{"a": 1, "a": 2}`, "[", "{}", ""} {
		f.Add([]byte(s))
	}
	vr := mustValidator(NewManifestValidator())
	f.Fuzz(func(t *testing.T, src []byte) {
		mf, ds := loadManifest(vr, "f.json", src)
		if mf == nil && !ds.HasErrors() {
			t.Fatalf("LoadManifest(%q) = nil without an error", src)
		}
	})
}

func ExampleLoadWorkflow() {
	src := `version: "1.0"
name: demo
steps:
  - name: Prep
    comand: ["make"]
  - name: Build
    command: ["go", "build", "./..."]
    timeout: "60"
`
	wf, ds := LoadWorkflow("flow.yaml", []byte(src))
	for _, d := range ds {
		fmt.Println(d.Format())
	}
	fmt.Println(len(wf.Steps), wf.Steps[1].Name.V, wf.Steps[1].Command.V[0].Pos)
	// Output:
	// flow.yaml:5:5: error: E_SCHEMA: unknown key 'comand' in step 'Prep' (did you mean 'command'?)
	// flow.yaml:8:15: error: E_SCHEMA: 'timeout' must be a number, found string
	// 2 Build flow.yaml:7:16
}

func ExampleLoadManifest() {
	src := `{"version": "1", "entry": "Main",
 "nodes": {"Main": {"entry_block": "Go", "blocks": {
   "Go": {"worker": "Internal:RunBuilder", "transitions": [{"on_signal": "SIGNAL:SUCCESS", "action": "END"}]}}}}}`
	mf, ds := LoadManifest("workflows.json", []byte(src))
	fmt.Println(len(ds))
	b := mf.Nodes["Main"].Blocks["Go"]
	fmt.Println(b.Worker.V, b.Transitions[0].Action.V, b.Transitions[0].Action.Pos)
	// Output:
	// 0
	// Internal:RunBuilder END workflows.json:3:103
}

func ExampleWorkflowSchema() {
	s := string(WorkflowSchema())
	fmt.Println(strings.Contains(s, `"$schema": "https://json-schema.org/draft/2020-12/schema"`))
	// Output: true
}
