package manifest

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"smith/source"
)

func TestSchemaGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		generate func() []byte
		id       string
	}{
		{"workflow", generateWorkflowSchema, WorkflowSchemaID},
		{"manifest", generateManifestSchema, ManifestSchemaID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.generate()
			if again := tt.generate(); !bytes.Equal(got, again) {
				t.Fatalf("generate %s schema: differs between calls", tt.name)
			}
			var doc struct {
				Schema string `json:"$schema"`
				ID     string `json:"$id"`
			}
			if err := json.Unmarshal(got, &doc); err != nil {
				t.Fatalf("%sSchema() is not JSON: %v", tt.name, err)
			}
			if doc.Schema != "https://json-schema.org/draft/2020-12/schema" || doc.ID != tt.id {
				t.Errorf("%sSchema() $schema, $id = %q, %q, want draft 2020-12, %q", tt.name, doc.Schema, doc.ID, tt.id)
			}
			// The file is what WorkflowSchema and ManifestSchema return
			// and what documents are validated against.
			checkGolden(t, tt.name+".schema.json", got)
		})
	}
}

// TestSchemaAcceptsRichInputs validates the rich inputs with the printed
// schemas: no diagnostic at all.
func TestSchemaAcceptsRichInputs(t *testing.T) {
	t.Parallel()
	wv, err := NewWorkflowValidator()
	if err != nil {
		t.Fatal(err)
	}
	mv, err := NewManifestValidator()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		file  string
		parse func(string, []byte) (*Value, source.Diagnostics)
		vr    *Validator
	}{
		{"workflow", "testdata/workflow_rich.yaml", ParseYAML, wv},
		{"manifest", "testdata/manifest_rich.json", ParseJSON, mv},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			v, ds := tt.parse(tt.file, src)
			ds = append(ds, tt.vr.Validate(v)...)
			if len(ds) > 0 {
				t.Errorf("Validate(%q) =\n%s\nwant no diagnostics", tt.file, showDiags(ds))
			}
		})
	}
}

// wfPrefix starts every broken workflow below (lines 1-3).
const wfPrefix = "version: \"1.0\"\nname: t\nsteps:\n"

func TestSchemaRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		file string
		src  string
		want string
	}{
		{"unknown step key", "w.yaml", wfPrefix + "  - name: Prep\n    comand: [echo]\n",
			"w.yaml:5:5: error: E_SCHEMA: unknown key 'comand' in step 'Prep' (did you mean 'command'?)"},
		{"unknown top key", "w.yaml", wfPrefix + "  - {name: A, command: [a]}\nstrict_flwo: true\n",
			"w.yaml:5:1: error: E_SCHEMA: unknown key 'strict_flwo' in workflow (did you mean 'strict_flow'?)"},
		{"step key on an agent", "w.yaml", "version: \"1.0\"\nname: t\nagents:\n  a: {provider: mock, provider_params: {script: s.yaml}}\nsteps:\n  - {name: A, agent: a, prompt: hi}\n",
			"w.yaml:4:23: error: E_SCHEMA: unknown key 'provider_params' in agent 'a' ('provider_params' is a key of a step: give it on each step that names this agent)"},
		{"handler key on a step", "w.yaml", wfPrefix + "  - {name: A, command: [a], halt: true}\n",
			"w.yaml:4:29: error: E_SCHEMA: unknown key 'halt' in step 'A' ('halt' is a key of a handler: write it under on:, e.g. on: {success: {halt: ...}})"},
		{"custom signal in on", "w.yaml", wfPrefix + "  - name: A\n    provider: mock\n    prompt: hi\n    on: {APPROVED: {end: true}, success: {end: true}, failure: {end: true}}\n",
			"w.yaml:7:10: error: E_SCHEMA: unknown key 'APPROVED' in on of step 'A' (a custom signal goes under signals:, e.g. on: {signals: {\"SIGNAL:APPROVED\": {goto: ...}}})"},
		{"plural of a step key", "w.yaml", wfPrefix + "  - name: A\n    command: [a]\n    retries: {attempts: 2}\n",
			"w.yaml:6:5: error: E_SCHEMA: unknown key 'retries' in step 'A' (did you mean 'retry'?)"},
		{"plural of a defaults key", "w.yaml", "version: \"1.0\"\nname: t\ndefaults: {retries: {attempts: 2}}\nsteps:\n  - {name: A, command: [a]}\n",
			"w.yaml:3:12: error: E_SCHEMA: unknown key 'retries' in defaults (did you mean 'retry'?)"},
		{"a step key with its unit", "w.yaml", wfPrefix + "  - name: A\n    command: [a]\n    timeout_sec: 60\n",
			"w.yaml:6:5: error: E_SCHEMA: unknown key 'timeout_sec' in step 'A' (did you mean 'timeout'?)"},
		{"a retry key without its unit", "w.yaml", wfPrefix + "  - name: A\n    command: [a]\n    retry: {attempts: 2, backoff: 1}\n",
			"w.yaml:6:26: error: E_SCHEMA: unknown key 'backoff' in retry of step 'A' (did you mean 'backoff_sec'?)"},
		{"unknown key in send", "w.yaml", wfPrefix + "  - {name: A, send: {to: a, contnet: x}}\n",
			"w.yaml:4:29: error: E_SCHEMA: unknown key 'contnet' in send of step 'A' (did you mean 'content'?)"},
		{"unknown key without suggestion", "w.yaml", wfPrefix + "  - {name: A, command: [a], zzzzzz: 1}\n",
			"w.yaml:4:29: error: E_SCHEMA: unknown key 'zzzzzz' in step 'A'"},
		{"unknown key in nested object", "w.yaml", wfPrefix + "  - name: A\n    command: [a]\n    retry: {atempts: 2}\n",
			"w.yaml:6:13: error: E_SCHEMA: unknown key 'atempts' in retry of step 'A' (did you mean 'attempts'?)"},
		{"missing step name", "w.yaml", wfPrefix + "  - command: [a]\n",
			"w.yaml:4:5: error: E_SCHEMA: step is missing required key 'name'"},
		{"missing steps", "w.yaml", "version: \"1.0\"\nname: t\n",
			"w.yaml:1:1: error: E_SCHEMA: workflow is missing required key 'steps'"},
		{"bad permissions", "w.yaml", wfPrefix + "  - {name: A, provider: mock, permissions: write}\n",
			"w.yaml:4:44: error: E_SCHEMA: 'permissions' must be one of read, edit, full, found 'write'"},
		{"wrong type", "w.yaml", wfPrefix + "  - name: A\n    command: [a]\n    timeout: \"10\"\n",
			"w.yaml:6:15: error: E_SCHEMA: 'timeout' must be a number, found string"},
		{"wrong element type", "w.yaml", wfPrefix + "  - name: A\n    command: [a, 1]\n",
			"w.yaml:5:18: error: E_SCHEMA: 'command[1]' must be a string, found number; quote it: \"1\""},
		{"command as a string", "w.yaml", wfPrefix + "  - name: A\n    command: echo hi\n",
			"w.yaml:5:14: error: E_SCHEMA: 'command' must be an array, found string; write the arguments as a list (no shell runs it): [\"echo\", \"hi\"]"},
		{"shell command as a string", "w.yaml", wfPrefix + "  - name: A\n    command: echo hi > out.txt\n",
			"w.yaml:5:14: error: E_SCHEMA: 'command' must be an array, found string; write the arguments as a list (no shell runs it): [\"sh\", \"-c\", \"echo hi > out.txt\"]"},
		{"config command as a string", "w.yaml", wfPrefix + "  - {name: A, command: [a]}\nlint_command: golangci-lint run ./...\n",
			"w.yaml:5:15: error: E_SCHEMA: 'lint_command' must be an array, found string; write the arguments as a list (no shell runs it): [\"golangci-lint\", \"run\", \"./...\"]"},
		{"string or list", "w.yaml", wfPrefix + "  - name: A\n    provider: {x: 1}\n",
			"w.yaml:5:15: error: E_SCHEMA: 'provider' must be a string or an array, found object"},
		{"scalar operand", "w.yaml", wfPrefix + "  - name: A\n    command: [a]\n    when: {equals: {left: [1], right: b}}\n",
			"w.yaml:6:27: error: E_SCHEMA: 'left' must be a string, a number or a boolean, found array"},
		{"step not an object", "w.yaml", wfPrefix + "  - Prep\n",
			"w.yaml:4:5: error: E_SCHEMA: 'steps[0]' must be an object, found string"},
		{"two step kinds", "w.yaml", wfPrefix + "  - name: X\n    command: [a]\n    provider: claude\n",
			"w.yaml:4:5: error: E_SCHEMA: step 'X' must have exactly one of command, provider, worker, for_each, set_context, send, parallel (found command and provider)"},
		{"three step kinds", "w.yaml", wfPrefix + "  - {name: X, worker: Internal:TestRunner, command: [a], set_context: {}}\n",
			"w.yaml:4:5: error: E_SCHEMA: step 'X' must have exactly one of command, provider, worker, for_each, set_context, send, parallel (found command, worker and set_context)"},
		{"no step kind", "w.yaml", wfPrefix + "  - name: X\n",
			"w.yaml:4:5: error: E_SCHEMA: step 'X' must have exactly one of command, provider, worker, for_each, set_context, send, parallel (found none)"},
		{"bad output_capture", "w.yaml", wfPrefix + "  - {name: A, command: [a], output_capture: jsn}\n",
			"w.yaml:4:45: error: E_SCHEMA: 'output_capture' must be one of text, lines, json, found 'jsn' (did you mean 'json'?)"},
		{"bad transport mode", "w.yaml", wfPrefix + "  - {name: A, provider: p, prompt_transport: {mode: pipe}}\n",
			"w.yaml:4:53: error: E_SCHEMA: 'mode' must be one of argv, stdin, temp_file, found 'pipe'"},
		{"bad inject mode", "w.yaml", wfPrefix + "  - {name: A, provider: p, depends_on: {inject: {mode: lst}}}\n",
			"w.yaml:4:56: error: E_SCHEMA: 'mode' must be one of list, content, none, found 'lst' (did you mean 'list'?)"},
		{"bad inject type", "w.yaml", wfPrefix + "  - {name: A, provider: p, depends_on: {inject: yes}}\n",
			"w.yaml:4:49: error: E_SCHEMA: 'inject' must be a boolean or an object, found string"},
		{"unknown inject key", "w.yaml", wfPrefix + "  - {name: A, provider: p, depends_on: {inject: {mdoe: list}}}\n",
			"w.yaml:4:50: error: E_SCHEMA: unknown key 'mdoe' in inject of step 'A' (did you mean 'mode'?)"},
		{"bad op", "w.yaml", wfPrefix + "  - {name: A, command: [a], when: {exit_code: {step: A, op: gt, value: 0}}}\n",
			"w.yaml:4:61: error: E_SCHEMA: 'op' must be one of ==, !=, >, <, >=, <=, found 'gt'"},
		{"bad step name", "w.yaml", wfPrefix + "  - {name: \"my step\", command: [a]}\n",
			"w.yaml:4:13: error: E_SCHEMA: 'name' must match ^[A-Za-z_][A-Za-z0-9_-]*$, found 'my step'"},
		{"bad branch name", "w.yaml", wfPrefix + "  - name: P\n    parallel:\n      branches:\n        ok: [{name: A, command: [a]}]\n        \"b c\": [{name: B, command: [a]}]\n  - name: L\n    for_each: {items: [x], steps: [{name: C, command: [a]}]}\n",
			"w.yaml:8:9: error: E_SCHEMA: the name 'b c' in 'branches' must match ^[A-Za-z_][A-Za-z0-9_-]*$"},
		{"unknown predicate", "w.yaml", wfPrefix + "  - name: A\n    command: [a]\n    when: {stepok: B}\n",
			"w.yaml:6:12: error: E_SCHEMA: unknown key 'stepok' in condition of step 'A' (did you mean 'step_ok'?)"},
		{"two predicates", "w.yaml", wfPrefix + "  - name: A\n    command: [a]\n    when: {step_ok: B, env_set: X}\n",
			"w.yaml:6:11: error: E_SCHEMA: condition of step 'A' must have exactly one of step_ok, file_exists, equals, exit_code, env_set, contains, regex, number, all, any, not (found step_ok and env_set)"},
		{"nested condition", "w.yaml", wfPrefix + "  - name: A\n    command: [a]\n    when: {all: [{not: {number: {left: 1, op: \"<\"}}}]}\n",
			"w.yaml:6:33: error: E_SCHEMA: number of step 'A' is missing required key 'right'"},
		{"two handler kinds", "w.yaml", wfPrefix + "  - name: A\n    command: [a]\n    on: {success: {goto: B, end: true}}\n",
			"w.yaml:6:19: error: E_SCHEMA: handler 'success' of step 'A' must have exactly one of goto, end, error, halt (found goto and end)"},
		{"unknown outcome", "w.yaml", wfPrefix + "  - name: A\n    command: [a]\n    on: {sucess: {goto: B}}\n",
			"w.yaml:6:10: error: E_SCHEMA: unknown key 'sucess' in on of step 'A' (did you mean 'success'?)"},
		{"loop body step", "w.yaml", wfPrefix + "  - name: L\n    for_each:\n      items: [a]\n      steps:\n        - {name: B, commmand: [a]}\n",
			"w.yaml:8:21: error: E_SCHEMA: unknown key 'commmand' in step 'B' (did you mean 'command'?)"},
		{"several problems", "w.yaml", wfPrefix + "  - name: A\n    command: [a]\n    timeout: x\n  - {name: B}\n",
			"w.yaml:6:14: error: E_SCHEMA: 'timeout' must be a number, found string\n" +
				"w.yaml:7:5: error: E_SCHEMA: step 'B' must have exactly one of command, provider, worker, for_each, set_context, send, parallel (found none)"},
		{"manifest unknown key", "m.json", `{"version": "1", "entry": "N", "nodes": {}, "workrs": {}}`,
			"m.json:1:45: error: E_SCHEMA: unknown key 'workrs' in manifest (did you mean 'workers'?)"},
		{"manifest missing entry", "m.json", `{"version": "1", "nodes": {}}`,
			"m.json:1:1: error: E_SCHEMA: manifest is missing required key 'entry'"},
		{"block missing worker", "m.json", `{"version": "1", "entry": "N", "nodes": {"N": {"entry_block": "B", "blocks": {"B": {"transitions": []}}}}}`,
			"m.json:1:84: error: E_SCHEMA: block 'B' is missing required key 'worker'"},
		{"transition missing action", "m.json", `{"version": "1", "entry": "N", "nodes": {"N": {"entry_block": "B", "blocks": {"B": {"worker": "w", "transitions": [{"on_signal": "S"}]}}}}}`,
			"m.json:1:116: error: E_SCHEMA: transition of block 'B' is missing required key 'action'"},
		{"transition unknown key", "m.json", `{"version": "1", "entry": "N", "nodes": {"N": {"entry_block": "B", "blocks": {"B": {"worker": "w", "transitions": [{"on_signal": "S", "action": "END", "retrun_to": "C"}]}}}}}`,
			"m.json:1:152: error: E_SCHEMA: unknown key 'retrun_to' in transition of block 'B' (did you mean 'return_to'?)"},
		{"bad isolation", "m.json", `{"version": "1", "entry": "N", "nodes": {}, "config": {"isolation": "worktree"}}`,
			"m.json:1:70: error: E_SCHEMA: 'isolation' must be one of none, git-worktree, found 'worktree' (did you mean 'git-worktree'?)"},
		{"node entry_block type", "m.json", `{"version": "1", "entry": "N", "nodes": {"N": {"entry_block": 1, "blocks": {}}}}`,
			"m.json:1:63: error: E_SCHEMA: 'entry_block' must be a string, found number; quote it: \"1\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, ds := Load(tt.file, []byte(tt.src))
			if got := showDiags(ds); got != tt.want {
				t.Errorf("Load(%q) =\n%s\nwant\n%s", tt.src, got, tt.want)
			}
		})
	}
}

func BenchmarkLoadWorkflow(b *testing.B) {
	src, err := os.ReadFile("testdata/workflow_rich.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, ds := LoadWorkflow("w.yaml", src); len(ds) > 0 {
			b.Fatal(ds)
		}
	}
}
