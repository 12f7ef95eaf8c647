package text

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Visible returns s with its control characters other than line breaks and
// tabs written out as Go escapes (ESC as \x1b, a C1 control as \u009b), so
// that a line of Smith's own that quotes a model's or a CLI's text cannot
// retitle the terminal, write its clipboard (OSC 52), recolour it or move
// its cursor: the characters stay visible instead of acting.
func Visible(s string) string {
	i := strings.IndexFunc(s, isHidden)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for _, r := range s[i:] {
		switch {
		case !isHidden(r):
			b.WriteRune(r)
		case r < utf8.RuneSelf:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// isHidden reports whether r is a C0 or C1 control character, or DEL,
// other than a line feed or a tab.
func isHidden(r rune) bool {
	return (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f)
}
