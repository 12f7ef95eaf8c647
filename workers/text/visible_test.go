package text

import "testing"

func TestVisible(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text, 'quoted' and é", "plain text, 'quoted' and é"},
		{"two\nlines\tand a tab", "two\nlines\tand a tab"},
		{"API Error: \x1b]0;PWNED\x07 busy", `API Error: \x1b]0;PWNED\x07 busy`},
		{"\x1b]52;c;cm0gLXJmIH4K\x07", `\x1b]52;c;cm0gLXJmIH4K\x07`},
		{"\x1b[31mred\x1b[0m\r\x00\x7f", `\x1b[31mred\x1b[0m\x0d\x00\x7f`},
		{"c1 \u009b31m csi", `c1 \u009b31m csi`},
	}
	for _, tt := range tests {
		if got := Visible(tt.in); got != tt.want {
			t.Errorf("Visible(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
