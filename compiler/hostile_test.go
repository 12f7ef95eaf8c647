package compiler

import (
	"strings"
	"testing"

	"smith/source"
)

// TestBlockIDsNameFiles: a manifest's block and node ids name log files and
// artifact folders, so smithc check rejects an empty one and one with a '/'
// (issue 8, point 11).
func TestBlockIDsNameFiles(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"", "a/b", `a\b`, ".", ".."} {
		src := `{"version": "1", "entry": "Main",
  "workers": {"Command:A": {"command": ["true"]}},
  "nodes": {"Main": {"entry_block": "ID", "blocks": {"ID": {"worker": "Command:A", "transitions": [
    {"on_signal": "SIGNAL:SUCCESS", "action": "END"}, {"on_signal": "SIGNAL:FAIL_DEFAULT", "action": "FAIL:x"}]}}}}}`
		src = strings.ReplaceAll(src, `"ID"`, strconvQuote(id))
		ds := compileForCheck("m.json", []byte(src))
		found := false
		for _, d := range ds {
			if d.Severity == source.SevError && strings.Contains(d.Msg, "block id") {
				found = true
			}
		}
		if !found {
			t.Errorf("block id %q: no error, got %v", id, ds)
		}
	}
}

func strconvQuote(s string) string {
	return `"` + strings.ReplaceAll(s, `\`, `\\`) + `"`
}

// TestStepFieldsChecked: every field the VM resolves in ${steps.S.FIELD}
// passes smithc check (signal and attempts did not), including stderr,
// started_at and ended_at (CONTRACT 12.5); an unknown field still fails
// (issue 8, point 12). vm's TestStepFieldTable checks the VM side of the
// one table, lang.StepFields.
func TestStepFieldsChecked(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"exit_code", "output", "stderr", "lines", "json", "duration", "status", "signal", "attempts", "started_at", "ended_at", "validation_error", "iterations", "nope"} {
		src := `version: "1.0"
name: f
steps:
  - name: A
    command: ["true"]
    output_capture: json
    on: {success: {goto: B}, failure: {error: "A failed"}}
  - name: B
    command: ["echo", "${steps.A.` + f + `}"]
    on: {success: {goto: _end}, failure: {error: "B failed"}}
`
		ds := compileForCheck("f.yaml", []byte(src))
		if f == "nope" {
			if !ds.HasErrors() {
				t.Errorf("${steps.A.nope} passed the check")
			}
			continue
		}
		if ds.HasErrors() {
			t.Errorf("${steps.A.%s}: %v", f, ds)
		}
	}
}
