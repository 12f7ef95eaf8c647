package compiler

import (
	"strconv"
	"strings"
	"testing"
)

// TestMalformedRefHidesNone: a malformed reference is reported and left
// out, and the string's other references are still checked, each at its own
// line:col, in every field that takes references: one check reports every
// reference's own diagnostic.
func TestMalformedRefHidesNone(t *testing.T) {
	t.Parallel()
	const (
		head = "version: \"1.0\"\nname: refs\n"
		refs = `${NOPE_X} ${VAR:-x} ${steps.Missing.output}`
		end  = "    on: {success: {end: true}, failure: {end: true}}\n"
	)
	// The diagnostics of refs when its first character is at line:col.
	want := func(file string, line, col int) string {
		at := func(off int) string {
			return file + ":" + strconv.Itoa(line) + ":" + strconv.Itoa(col+off) + ": error: "
		}
		return at(0) + "E_VAR_MISSING: unknown variable 'NOPE_X': Smith substitutes ${...} itself; for a shell variable write $${NOPE_X} (Smith turns $$ into $), for the environment use ${env.NOPE_X} with NOPE_X in env_allow\n" +
			at(15) + "E_PARSE: malformed reference '${VAR:-x}': unexpected ':' (expected '.', '[' or '}'); this looks like shell syntax, which Smith does not evaluate: to leave it to a shell write $${VAR:-x} (Smith turns $$ into $); for a default value, list the reference in allow_missing_vars\n" +
			at(20) + "E_VAR_MISSING: unknown step 'Missing' in '${steps.Missing.output}'\n"
	}
	tests := []struct {
		name, file, src, want string
	}{
		{"command", "w.yaml", head + "steps:\n  - name: A\n    command: [\"echo\", \"" + refs + "\"]\n" + end,
			want("w.yaml", 5, 24)},
		{"prompt", "w.yaml", head + "steps:\n  - name: A\n    provider: mock\n    prompt: \"" + refs + "\"\n" + end,
			want("w.yaml", 6, 14)},
		{"when", "w.yaml", head + "steps:\n  - name: A\n    command: [\"true\"]\n    when: {equals: {left: \"" + refs + "\", right: x}}\n" + end,
			want("w.yaml", 6, 28)},
		{"env value", "w.yaml", head + "steps:\n  - name: A\n    command: [\"true\"]\n    env: {X: \"" + refs + "\"}\n" + end,
			want("w.yaml", 6, 15)},
		{"output_file", "w.yaml", head + "steps:\n  - name: A\n    command: [\"true\"]\n    output_file: \"" + refs + "\"\n" + end,
			want("w.yaml", 6, 19)},
		{"error message", "w.yaml", head + "steps:\n  - name: A\n    command: [\"true\"]\n    on: {success: {end: true}, failure: {error: \"" + refs + "\"}}\n",
			want("w.yaml", 6, 50)},
		{"for_each.items", "w.yaml", head + "steps:\n  - name: L\n    for_each:\n      items: \"${a b} ${steps.Missing.output}\"\n      as: f\n      steps:\n" +
			"        - name: B\n          command: [\"echo\", \"${f}\"]\n          on: {always: {end: true}}\n" + end,
			"w.yaml:6:18: error: E_PARSE: malformed reference '${a b}': unexpected ' ' (expected '.', '[' or '}')\n" +
				"w.yaml:6:22: error: E_VAR_MISSING: unknown step 'Missing' in '${steps.Missing.output}'\n"},
		// A provider template: its well-formed keys are still checked, and
		// still count as keys of the provider (max is no unused default).
		{"provider template", "w.yaml", head + "providers:\n  shim:\n    command: [\"shim\", \"${nope} ${a b} ${PROMPT} ${max}\"]\n    defaults: {max: 1}\n" +
			"steps:\n  - name: A\n    provider: shim\n    prompt: hi\n" + end,
			"w.yaml:5:24: error: E_TEMPLATE_KEY: provider 'shim' uses template key 'nope' that neither its defaults nor provider_params define\n" +
				"w.yaml:5:35: error: E_PARSE: malformed reference '${a b}': unexpected ' ' (expected '.', '[' or '}')\n"},
		{"manifest command", "m.json", `{"version": "1", "entry": "Node:Main",
"workers": {"Command:A": {"command": ["echo", "` + refs + `"]}},
"nodes": {"Node:Main": {"entry_block": "A", "blocks": {"A": {"worker": "Command:A", "transitions": [
  {"on_signal": "SIGNAL:SUCCESS", "action": "END"}, {"on_signal": "SIGNAL:FAIL_DEFAULT", "action": "END"}]}}}}}
`, want("m.json", 2, 48)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b strings.Builder
			for _, d := range compileForCheck(tt.file, []byte(tt.src)) {
				b.WriteString(d.Format() + "\n")
			}
			if got := b.String(); got != tt.want {
				t.Errorf("check of\n%s\n= %s\nwant %s", tt.src, got, tt.want)
			}
		})
	}
}
