package goldenfile

import (
	"strings"
	"testing"
)

func TestFirstDiff(t *testing.T) {
	tests := []struct{ got, want, has string }{
		{"a\nb\n", "a\nb\n", ""},
		{"a\nx\n", "a\nb\n", "line 2"},
		{"a", "a\nb", "(end)"},
	}
	for _, tt := range tests {
		d := FirstDiff(tt.got, tt.want)
		if (tt.has == "") != (d == "") || !strings.Contains(d, tt.has) {
			t.Errorf("FirstDiff(%q, %q) = %q, want one naming %q", tt.got, tt.want, d, tt.has)
		}
	}
}
