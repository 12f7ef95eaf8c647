package compiler

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"smith/compiler/ir"
	"smith/manifest"
)

// lowerText lowers an inline document and returns ir.Print's text and the
// diagnostics, one formatted per line.
func lowerText(t *testing.T, name, src string, opt Options) (string, string) {
	t.Helper()
	p, ds := lowerSource(name, []byte(src), opt)
	var b bytes.Buffer
	if p != nil {
		if err := ir.Print(&b, p); err != nil {
			t.Fatalf("ir.Print: %v", err)
		}
	}
	var d strings.Builder
	for _, x := range ds {
		d.WriteString(x.Format() + "\n")
	}
	return b.String(), d.String()
}

// transitionLines returns the "on SIG -> ACTION" lines of block id (a
// block's own transitions are indented one level below its line).
func transitionLines(text, id string) string {
	var out []string
	byIndent := map[int]string{} // indent -> the last block line at that indent
	for _, line := range strings.Split(text, "\n") {
		trim := strings.TrimSpace(line)
		ind := len(line) - len(strings.TrimLeft(line, " "))
		switch {
		case strings.HasPrefix(trim, "block "):
			name, _, _ := strings.Cut(strings.TrimPrefix(trim, "block \""), "\"")
			byIndent[ind] = name
		case strings.HasPrefix(trim, "on ") && byIndent[ind-2] == id:
			out = append(out, strings.TrimPrefix(trim, "on "))
		}
	}
	return strings.Join(out, "; ")
}

func TestLowerWorkflowTransitions(t *testing.T) {
	t.Parallel()
	const head = "version: \"1.0\"\nname: w\n"
	tests := []struct {
		name  string
		src   string
		block string
		want  string
		diags string
	}{
		{
			name:  "non-strict defaults",
			src:   head + "strict_flow: false\nsteps:\n  - name: A\n    command: [a]\n  - name: B\n    command: [b]\n",
			block: "A",
			want: `SIGNAL:SUCCESS -> JUMP "B"; SIGNAL:FAILURE -> FAIL "step 'A' failed"; SIGNAL:TIMEOUT -> FAIL "step 'A' failed"; ` +
				`SIGNAL:SKIPPED -> JUMP "B"; SIGNAL:VALIDATION_FAIL -> FAIL "step 'A' failed"; SIGNAL:MAX_VISITS -> FAIL "step 'A' failed"; ` +
				`SIGNAL:FAIL_DEFAULT -> FAIL "step 'A' failed"`,
		},
		{
			name:  "non-strict last step ends",
			src:   head + "strict_flow: false\nsteps:\n  - name: A\n    command: [a]\n",
			block: "A",
			want: `SIGNAL:SUCCESS -> END; SIGNAL:FAILURE -> FAIL "step 'A' failed"; SIGNAL:TIMEOUT -> FAIL "step 'A' failed"; ` +
				`SIGNAL:SKIPPED -> END; SIGNAL:VALIDATION_FAIL -> FAIL "step 'A' failed"; SIGNAL:MAX_VISITS -> FAIL "step 'A' failed"; ` +
				`SIGNAL:FAIL_DEFAULT -> FAIL "step 'A' failed"`,
		},
		{
			name:  "always covers every outcome without a handler",
			src:   head + "steps:\n  - name: A\n    command: [a]\n    on: {timeout: {goto: B}, always: {goto: _end}}\n  - name: B\n    command: [b]\n    on: {always: {end: true}}\n",
			block: "A",
			want: `SIGNAL:SUCCESS -> END; SIGNAL:FAILURE -> END; SIGNAL:TIMEOUT -> JUMP "B"; SIGNAL:SKIPPED -> JUMP "B"; ` +
				`SIGNAL:VALIDATION_FAIL -> END; SIGNAL:MAX_VISITS -> END; SIGNAL:FAIL_DEFAULT -> END`,
		},
		{
			name:  "timeout, validation_fail and max_visits fall back to failure",
			src:   head + "steps:\n  - name: A\n    command: [a]\n    on: {success: {goto: _start}, failure: {error: boom}, skipped: {goto: _error}, max_visits: {end: true}}\n",
			block: "A",
			want: `SIGNAL:SUCCESS -> JUMP "A"; SIGNAL:FAILURE -> FAIL "boom"; SIGNAL:TIMEOUT -> FAIL "boom"; SIGNAL:SKIPPED -> FAIL "step 'A' failed"; ` +
				`SIGNAL:VALIDATION_FAIL -> FAIL "boom"; SIGNAL:MAX_VISITS -> END; SIGNAL:FAIL_DEFAULT -> FAIL "boom"`,
		},
		{
			name:  "loop body defaults",
			src:   head + "strict_flow: false\nsteps:\n  - name: L\n    for_each:\n      items: [1]\n      steps:\n        - name: A\n          command: [a]\n        - name: B\n          command: [b]\n",
			block: "B",
			want: `SIGNAL:SUCCESS -> LOOP_NEXT; SIGNAL:FAILURE -> LOOP_FAIL; SIGNAL:TIMEOUT -> LOOP_FAIL; SIGNAL:SKIPPED -> LOOP_NEXT; ` +
				`SIGNAL:VALIDATION_FAIL -> LOOP_FAIL; SIGNAL:MAX_VISITS -> LOOP_FAIL; SIGNAL:FAIL_DEFAULT -> LOOP_FAIL`,
		},
		{
			name:  "strict flow reports missing handlers and falls back",
			src:   head + "steps:\n  - name: A\n    command: [a]\n",
			block: "A",
			want: `SIGNAL:SUCCESS -> END; SIGNAL:FAILURE -> FAIL "step 'A' failed"; SIGNAL:TIMEOUT -> FAIL "step 'A' failed"; ` +
				`SIGNAL:SKIPPED -> END; SIGNAL:VALIDATION_FAIL -> FAIL "step 'A' failed"; SIGNAL:MAX_VISITS -> FAIL "step 'A' failed"; ` +
				`SIGNAL:FAIL_DEFAULT -> FAIL "step 'A' failed"`,
			diags: "w.yaml:4:5: error: E_STRICT_FLOW: step 'A' has no on.failure handler (strict_flow requires on.success and on.failure, or on.always)\n" +
				"w.yaml:4:5: error: E_STRICT_FLOW: step 'A' has no on.success handler (strict_flow requires on.success and on.failure, or on.always)\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			text, diags := lowerText(t, "w.yaml", tt.src, Options{})
			if got := transitionLines(text, tt.block); got != tt.want {
				t.Errorf("LowerWorkflow(%q) block %s = %v, want %v", tt.src, tt.block, got, tt.want)
			}
			if diags != tt.diags {
				t.Errorf("LowerWorkflow(%q) diagnostics = %v, want %v", tt.src, diags, tt.diags)
			}
		})
	}
}

func TestLowerWorkflowSignals(t *testing.T) {
	t.Parallel()
	const head = "version: \"1.0\"\nname: w\nstrict_flow: false\nsteps:\n"
	tests := []struct {
		name string
		step string
		want string
	}{
		{"command", "  - name: A\n    command: [a]\n", `block "A" command worker="command" signals=[SIGNAL:SUCCESS SIGNAL:FAILURE SIGNAL:TIMEOUT]`},
		{"provider with schema, when, max_visits",
			"  - name: A\n    provider: [claude, codex]\n    prompt: x\n    validation_schema: CodeOnly\n    when: {env_set: X}\n    max_visits: 3\n",
			`block "A" provider worker="provider:claude,codex" ai when max_visits=3 signals=[SIGNAL:SUCCESS SIGNAL:FAILURE SIGNAL:TIMEOUT SIGNAL:VALIDATION_FAIL SIGNAL:SKIPPED SIGNAL:MAX_VISITS]`},
		{"set_context", "  - name: A\n    set_context: {k: v}\n", `block "A" set_context signals=[SIGNAL:SUCCESS SIGNAL:FAILURE]`},
		{"loop", "  - name: A\n    for_each: {items: [1], steps: [{name: B, command: [b]}]}\n", `block "A" loop signals=[SIGNAL:SUCCESS SIGNAL:FAILURE]`},
		{"internal worker", "  - name: A\n    worker: Internal:RunLinter\nlint_command: [lint]\n", `block "A" internal worker="Internal:RunLinter" signals=[SIGNAL:SUCCESS SIGNAL:FAILURE SIGNAL:TIMEOUT]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			text, diags := lowerText(t, "w.yaml", head+tt.step, Options{})
			if !strings.Contains(text, tt.want+" @ ") {
				t.Errorf("LowerWorkflow(%q) = %v, want a line %v", tt.step, text, tt.want)
			}
			if diags != "" {
				t.Errorf("LowerWorkflow(%q) diagnostics = %v, want none", tt.step, diags)
			}
		})
	}
}

func TestLowerWorkflowContextKeys(t *testing.T) {
	t.Parallel()
	src := "version: \"1.0\"\nname: w\nstrict_flow: false\nsteps:\n  - name: A\n    command: [\"${context.cli}\"]\n"
	tests := []struct {
		name  string
		opt   Options
		diags string
	}{
		{"unknown without the option", Options{}, "w.yaml:6:16: error: E_VAR_MISSING: unknown context key 'cli' (pass --context cli=VALUE or add it under context:)\n"},
		{"known from --context", Options{ContextKeys: []string{"cli"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, diags := lowerText(t, "w.yaml", src, tt.opt)
			if diags != tt.diags {
				t.Errorf("LowerWorkflow(%q, %v) diagnostics = %v, want %v", src, tt.opt, diags, tt.diags)
			}
		})
	}
}

func TestLowerWorkflowNeverPanics(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
	}{
		{"two kinds", "version: \"1.0\"\nname: w\nsteps:\n  - name: A\n    command: [a]\n    set_context: {a: 1}\n"},
		{"no kind", "version: \"1.0\"\nname: w\nsteps:\n  - name: A\n"},
		{"no name", "version: \"1.0\"\nname: w\nsteps:\n  - command: [a]\n"},
		{"null step", "version: \"1.0\"\nname: w\nsteps:\n  -\n"},
		{"wrong types", "version: \"1.0\"\nname: w\nsteps:\n  - name: A\n    command: a\n    on: 3\n    when: [1]\n    for_each: 7\n"},
		{"empty handlers", "version: \"1.0\"\nname: w\nsteps:\n  - name: A\n    command: [a]\n    on: {success: {}, failure: {end: false}}\n"},
		{"bad loop", "version: \"1.0\"\nname: w\nsteps:\n  - name: A\n    for_each: {items: 3}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, _ := lowerSource("w.yaml", []byte(tt.src), Options{})
			if p == nil {
				t.Errorf("LowerWorkflow(%q) = nil, want a program", tt.src)
			}
		})
	}
}

// wait_for.poll_ms is an integer from 1 to 60000: zero, a negative, a
// fraction and an absurdly long interval are refused at the value, with the
// range.
func TestLowerWaitForPollMsRange(t *testing.T) {
	t.Parallel()
	const want = "E_SCHEMA: wait_for.poll_ms must be an integer from 1 to 60000, got "
	for _, tt := range []struct{ val, got string }{
		{"0", "0"}, {"-5", "-5"}, {"2.5", "2.5"}, {"60001", "60001"}, {"100000000000", "1e+11"},
	} {
		src := "version: \"1.0\"\nname: t\nstrict_flow: false\nsteps:\n  - name: A\n    command: [a]\n    wait_for: {glob: \"x/*\", poll_ms: " + tt.val + "}\n"
		_, ds := lowerText(t, "w.yaml", src, Options{})
		if w := "w.yaml:7:38: error: " + want + tt.got + "\n"; ds != w {
			t.Errorf("poll_ms %s: diagnostics\n%s\nwant\n%s", tt.val, ds, w)
		}
	}
	// The key's limit (types.go, generated into the reference) states the
	// same range the checker enforces.
	ref, err := os.ReadFile("../docs/workflow-reference.md")
	if err != nil {
		t.Fatal(err)
	}
	if r := "An integer from 1 to 60000."; manifest.LimitOf("WaitFor", "poll_ms").Rule() != "an integer from 1 to 60000" || !strings.Contains(string(ref), "Milliseconds between looks. "+r) {
		t.Errorf("docs/workflow-reference.md does not give poll_ms's range %q", r)
	}
	for _, ok := range []string{"1", "500", "60000"} {
		src := "version: \"1.0\"\nname: t\nstrict_flow: false\nsteps:\n  - name: A\n    command: [a]\n    wait_for: {glob: \"x/*\", poll_ms: " + ok + "}\n"
		if _, ds := lowerText(t, "w.yaml", src, Options{}); ds != "" {
			t.Errorf("poll_ms %s: diagnostics\n%s\nwant none", ok, ds)
		}
	}
}
