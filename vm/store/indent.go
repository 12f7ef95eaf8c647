package store

import "bytes"

// indentJSON appends src, compact JSON as encoding/json writes it, to dst
// indented as json.Indent(dst, src, "", "  ") indents it, in one pass
// without json.Indent's scanner, which was two thirds of a snapshot's CPU
// (a snapshot indents the whole state). ok is false for a text that is not
// of that form (a space outside a string, brackets that do not pair, a
// string left open); the caller then indents with json.Indent, which also
// says what is wrong. deepest is JSONDepth(src), found on the way.
func indentJSON(dst, src []byte) (out []byte, deepest int, ok bool) {
	depth := 0
	open := false // after '{' or '[', before the first element
	for i := 0; i < len(src); i++ {
		c := src[i]
		wasOpen := open
		open = false
		if wasOpen && c != '}' && c != ']' {
			dst = newlineIndent(dst, depth)
		}
		switch c {
		case '"':
			end := stringEnd(src, i)
			if end < 0 {
				return dst, deepest, false
			}
			dst = append(dst, src[i:end]...)
			i = end - 1
		case '{', '[':
			dst = append(dst, c)
			depth++
			deepest = max(deepest, depth)
			open = true
		case '}', ']':
			if depth == 0 {
				return dst, deepest, false
			}
			depth--
			if !wasOpen {
				dst = newlineIndent(dst, depth)
			}
			dst = append(dst, c)
		case ',':
			dst = append(dst, ',')
			dst = newlineIndent(dst, depth)
		case ':':
			dst = append(dst, ':', ' ')
		case ' ', '\t', '\n', '\r':
			return dst, deepest, false
		default: // a number, true, false or null: up to the next delimiter
			j := i + 1
			for j < len(src) && !delim[src[j]] {
				j++
			}
			dst = append(dst, src[i:j]...)
			i = j - 1
		}
	}
	return dst, deepest, depth == 0 && !open
}

// newlineIndent appends a newline and depth levels of two spaces.
func newlineIndent(dst []byte, depth int) []byte {
	dst = append(dst, '\n')
	for range depth {
		dst = append(dst, ' ', ' ')
	}
	return dst
}

// delim marks the bytes that end a number or a literal.
var delim = [256]bool{',': true, ']': true, '}': true, ':': true, ' ': true, '\t': true, '\n': true, '\r': true, '"': true, '[': true, '{': true}

// stringEnd is the index just past the string that starts at src[i] (a
// quote), or -1 if it is not closed.
func stringEnd(src []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(src[j:], '"')
		if k < 0 {
			return -1
		}
		j += k
		// The quote ends the string unless an odd run of backslashes escapes it.
		n := 0
		for p := j - 1; p > i && src[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return j + 1
		}
		j++
	}
}
