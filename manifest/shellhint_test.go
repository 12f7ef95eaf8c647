package manifest

import (
	"strings"
	"testing"

	"smith/source"
)

// TestShellSyntaxHint: a reference written in shell syntax is an E_PARSE
// that says how to leave it to the shell; other malformed references are
// not mistaken for it.
func TestShellSyntaxHint(t *testing.T) {
	for _, tt := range []struct {
		text string
		hint bool
	}{
		{"${VAR:-x}", true}, {"${VAR:=x}", true}, {"${VAR:+x}", true},
		{"${VAR:?unset}", true}, {"${#VAR}", true}, {"${!VAR}", true}, {"${VAR%.txt}", true},
		{"${VAR#pre}", true}, {"${VAR/a/b}", true}, {"${VAR:0:2}", true},
		{"${a[-1]}", false}, {"${steps.}", false}, {"${ }", false},
	} {
		_, ds := ParseTemplate("echo "+tt.text, source.Pos{File: "f.yaml", Line: 1, Col: 1})
		if len(ds) == 0 {
			t.Errorf("%s: no diagnostic", tt.text)
			continue
		}
		msg := ds[0].Msg
		if got := strings.Contains(msg, "write $"+tt.text+" (Smith turns $$ into $)"); got != tt.hint {
			t.Errorf("%s: hint %v, want %v: %s", tt.text, got, tt.hint, msg)
		}
	}
}
