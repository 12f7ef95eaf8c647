package text

import "unicode/utf8"

// AppendJSONString appends s as a JSON string as encoding/json writes it
// (json.Marshal with html, an Encoder with HTML escaping off without): its
// appendString, copied. Control characters are escaped (\b \f \n \r \t
// or \u00XX), invalid UTF-8 becomes \ufffd, U+2028 and U+2029 are escaped,
// and with html so are <, > and &.
func AppendJSONString(b []byte, s string, html bool) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if safe[c] && (!html || htmlSafe[c]) {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(append(b, s[start:i]...), `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(append(b, s[start:]...), '"')
}

// safe holds the ASCII bytes written as they are; htmlSafe those that
// HTML escaping leaves too (a table, not comparisons: the live log quotes
// megabytes of a step's output).
var safe, htmlSafe = func() (s, h [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		s[c] = c != '"' && c != '\\'
		h[c] = c != '<' && c != '>' && c != '&'
	}
	return
}()
