package text

import "unicode/utf8"

// truncatedMark follows an excerpt that is not the whole output.
const truncatedMark = "\n[truncated]"

// Excerpt returns the first n bytes of b (n is 8192 for state.json) followed
// by "\n[truncated]" when b is longer than n or truncated is true, and reports
// whether it cut anything. b is a string or a byte slice: a string is cut
// without copying its whole text (a step's output can be 1 MiB). The cut is
// moved back to a UTF-8 boundary, so a character is never split.
func Excerpt[T string | []byte](b T, n int, truncated bool) (string, bool) {
	if len(b) <= n && !truncated {
		return string(b), false
	}
	cut := min(max(n, 0), len(b))
	// Back up over at most UTFMax-1 continuation bytes; invalid input is cut as it is.
	for k := 0; k < utf8.UTFMax-1 && cut > 0 && cut < len(b) && !utf8.RuneStart(b[cut]); k++ {
		cut--
	}
	return string(b[:cut]) + truncatedMark, true
}
