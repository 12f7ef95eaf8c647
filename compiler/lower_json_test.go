package compiler

import (
	"strings"
	"testing"
)

func TestLowerManifest(t *testing.T) {
	t.Parallel()
	block := func(id, worker, transitions string) string {
		return `"` + id + `": {"worker": "` + worker + `", "transitions": [` + transitions + `]}`
	}
	// The config commands the internal workers run are set, after the
	// nodes (so that no position before them moves).
	doc := func(entry, nodes string) string {
		return `{"version": "1", "entry": "` + entry + `", "nodes": {` + nodes + `}, "config": {"test_command": ["t"], "lint_command": ["l"], "build_command": ["b"]}}`
	}
	tests := []struct {
		name  string
		src   string
		want  []string // lines ir.Print must contain
		diags string
	}{
		{
			name: "prefixes resolve either way",
			src: doc("Main", `"Node:Main": {"entry_block": "A", "blocks": {`+
				block("Block:A", "Internal:RunBuilder", `{"on_signal": "SIGNAL:SUCCESS", "action": "JUMP:B"}, {"on_signal": "SIGNAL:FAILURE", "action": "CALL:Sub"}`)+`, `+
				block("B", "Internal:RunLinter", `{"on_signal": "SIGNAL:FAIL_DEFAULT", "action": "JUMP:Block:B"}`)+`}}, `+
				`"Sub": {"entry_block": "Block:C", "blocks": {`+block("C", "Internal:UpdateChangePlan", `{"on_signal": "SIGNAL:SUCCESS", "action": "RETURN"}`)+`}}`),
			want: []string{
				`program "m" (manifest) entry "Block:A"`,
				`node "Node:Main" entry "Block:A" inherit=false`,
				`on SIGNAL:SUCCESS -> JUMP "B"`,
				`on SIGNAL:FAILURE -> CALL "Sub"`,
				`on SIGNAL:FAIL_DEFAULT -> JUMP "B"`,
				`node "Sub" entry "C" inherit=false`,
			},
		},
		{
			name: "entry may name a block",
			src: doc("Block:B", `"N": {"entry_block": "A", "blocks": {`+
				block("A", "Internal:RunBuilder", `{"on_signal": "SIGNAL:FAIL_DEFAULT", "action": "END"}`)+`, `+
				block("B", "Internal:RunBuilder", `{"on_signal": "SIGNAL:FAIL_DEFAULT", "action": "FAIL:no"}`)+`}}`),
			want: []string{`program "m" (manifest) entry "B"`, `on SIGNAL:FAIL_DEFAULT -> FAIL "no"`},
		},
		{
			name: "internal worker signals",
			src: doc("N", `"N": {"entry_block": "A", "blocks": {`+
				block("A", "Internal:PreambleValidator", `{"on_signal": "SIGNAL:FAIL_DEFAULT", "action": "END"}`)+`}}`),
			want: []string{`block "A" internal worker="Internal:PreambleValidator" signals=[SIGNAL:SUCCESS SIGNAL:VALIDATION_FAIL]`},
		},
		{
			name: "unknown jump target keeps the program whole",
			src: doc("N", `"N": {"entry_block": "A", "blocks": {`+
				block("A", "Internal:RunBuilder", `{"on_signal": "SIGNAL:SUCCESS", "action": "JUMP:Blok"}`)+`}}`),
			want:  []string{`on SIGNAL:SUCCESS -> FAIL "unresolved action 'JUMP:Blok'"`},
			diags: "m.json:1:182: error: E_UNKNOWN_TARGET: jump target 'Blok' is not a block\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			text, diags := lowerText(t, "m.json", tt.src, Options{})
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("LowerManifest(%q) = %v, want a line containing %v", tt.src, text, w)
				}
			}
			if diags != tt.diags {
				t.Errorf("LowerManifest(%q) diagnostics = %v, want %v", tt.src, diags, tt.diags)
			}
		})
	}
}

func TestLowerManifestNeverPanics(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
	}{
		{"no nodes", `{"version": "1", "entry": "N"}`},
		{"empty node", `{"version": "1", "entry": "N", "nodes": {"N": {}}}`},
		{"null block", `{"version": "1", "entry": "N", "nodes": {"N": {"entry_block": "A", "blocks": {"A": null}}}}`},
		{"wrong types", `{"version": "1", "entry": 3, "workers": {"W": 1}, "nodes": {"N": {"entry_block": [], "blocks": {"A": {"worker": 2, "transitions": [1, {"on_signal": 2}]}}}}}`},
		{"worker without kind", `{"version": "1", "entry": "N", "workers": {"W": {}}, "nodes": {"N": {"entry_block": "A", "blocks": {"A": {"worker": "W", "transitions": []}}}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, _ := lowerSource("m.json", []byte(tt.src), Options{})
			if p == nil {
				t.Errorf("LowerManifest(%q) = nil, want a program", tt.src)
			}
		})
	}
}
