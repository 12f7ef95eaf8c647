package shellcomp

import (
	"bytes"
	"strings"
	"testing"
)

// TestRun: the table's command runs with the rest of the arguments; help,
// version, no arguments and an unknown command (with the nearest name)
// are answered by Run itself.
func TestRun(t *testing.T) {
	p := Program{Name: "prog", Commands: []Command{{Name: "check"}, {Name: "build"}}}
	for _, tt := range []struct {
		args           []string
		status         int
		stdout, stderr string
	}{
		{[]string{"build", "x"}, 7, "ran 1 [x]", ""},
		{nil, 2, "", "USAGE"},
		{[]string{"--help"}, 0, "USAGE", ""},
		{[]string{"help"}, 0, "USAGE", ""},
		{[]string{"help", "build"}, 7, "ran 1 [--help]", ""},
		{[]string{"help", "chek"}, 2, "", "prog: E_USAGE: unknown command \"chek\" (did you mean 'check'?)\n\nUSAGE"},
		{[]string{"version"}, 0, "prog v1\n", ""},
		{[]string{"chek"}, 2, "", "prog: E_USAGE: unknown command \"chek\" (did you mean 'check'?)\n\nUSAGE"},
		{[]string{"frobnicate"}, 2, "", "prog: E_USAGE: unknown command \"frobnicate\"\n\nUSAGE"},
	} {
		var out, errb bytes.Buffer
		st := p.Run(tt.args, "USAGE", "v1", &out, &errb, func(i int, rest []string) int {
			out.WriteString("ran " + string(rune('0'+i)) + " [" + strings.Join(rest, " ") + "]")
			return 7
		})
		if st != tt.status || out.String() != tt.stdout || errb.String() != tt.stderr {
			t.Errorf("Run(%q) = %d, %q, %q; want %d, %q, %q", tt.args, st, out.String(), errb.String(), tt.status, tt.stdout, tt.stderr)
		}
	}
}
