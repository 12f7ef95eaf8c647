package text

import "testing"

func TestExcerpt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		in        string
		n         int
		truncated bool
		want      string
		wantCut   bool
	}{
		{"short", "hello", 8, false, "hello", false},
		{"exact", "hello", 5, false, "hello", false},
		{"long", "hello world", 5, false, "hello\n[truncated]", true},
		{"flagged", "hello", 8, true, "hello\n[truncated]", true},
		{"two-byte rune at cut", "abé", 3, false, "ab\n[truncated]", true},
		{"four-byte rune at cut", "a😀b", 3, false, "a\n[truncated]", true},
		{"four-byte rune fits", "a😀b", 5, false, "a😀\n[truncated]", true},
		{"rune just before cut", "éé", 2, false, "é\n[truncated]", true},
		{"empty flagged", "", 4, true, "\n[truncated]", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, cut := Excerpt([]byte(tt.in), tt.n, tt.truncated)
			if got != tt.want || cut != tt.wantCut {
				t.Errorf("Excerpt([]byte(%q), %d, %v) = %q, %v, want %q, %v", tt.in, tt.n, tt.truncated, got, cut, tt.want, tt.wantCut)
			}
			got, cut = Excerpt(tt.in, tt.n, tt.truncated)
			if got != tt.want || cut != tt.wantCut {
				t.Errorf("Excerpt(%q, %d, %v) = %q, %v, want %q, %v", tt.in, tt.n, tt.truncated, got, cut, tt.want, tt.wantCut)
			}
		})
	}
}
