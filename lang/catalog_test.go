package lang

import (
	"strings"
	"testing"
)

func TestParseLayer(t *testing.T) {
	tests := []struct {
		entry     string
		name, arg string
		ok        bool
	}{
		{"PAYLOAD", "PAYLOAD", "", true},
		{"PAYLOAD:CODE_OUTPUT", "PAYLOAD", "CODE_OUTPUT", true},
		{"PAYLOAD:LAST", "PAYLOAD", "LAST", true},
		{"CONTRACT", "CONTRACT", "", true},
		{"CONTRACT:x", "CONTRACT", "x", false},
		{"STATIC_MEMORY:rules", "STATIC_MEMORY", "rules", true},
		{"ARTIFACT:docs/a.md", "ARTIFACT", "docs/a.md", true},
		{"ARTIFACT", "ARTIFACT", "", false},
		{"PAYLOAD:", "PAYLOAD", "", false},
		{"METADATA", "METADATA", "", true},
		{"PAYLOADS", "PAYLOADS", "", false},
	}
	for _, tt := range tests {
		name, arg, _, ok := ParseLayer(tt.entry)
		if name != tt.name || arg != tt.arg || ok != tt.ok {
			t.Errorf("ParseLayer(%q) = %q, %q, %v; want %q, %q, %v", tt.entry, name, arg, ok, tt.name, tt.arg, tt.ok)
		}
	}
	if got, want := strings.Join(LayerForms(), ", "), "PAYLOAD, PAYLOAD:TYPE, PAYLOAD:LAST, CONTRACT, STATIC_MEMORY, STATIC_MEMORY:KEY, ARTIFACT:PATH, METADATA"; got != want {
		t.Errorf("LayerForms() = %s, want %s", got, want)
	}
	for _, l := range DefaultPayloadMerge {
		if _, _, _, ok := ParseLayer(l); !ok {
			t.Errorf("default layer %s does not parse", l)
		}
	}
}
