package manifest

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"smith/source"
)

// explainJSON rewrites the syntax errors of ParseJSON, which speak as
// encoding/json does ("invalid character ']' looking for beginning of
// value"), into what was expected and what was found, in words, with a hint
// for the usual slips (a trailing comma, single quotes, a missing comma).
func explainJSON(src []byte, ds source.Diagnostics) source.Diagnostics {
	for i, d := range ds {
		if d.Code == source.EParse {
			ds[i].Msg = jsonWords(d, src)
		}
	}
	return ds
}

// jsonContexts are encoding/json's contexts of an invalid character and
// what was expected there.
var jsonContexts = [...]struct{ context, expected string }{
	{"looking for beginning of value", "a value (a string in double quotes, a number, an object, a list, true, false or null)"},
	{"looking for beginning of object key string", "a key in double quotes"},
	{"after object key:value pair", "',' or '}' after a value in an object"},
	{"after object key", "':' after the key"},
	{"after array element", "',' or ']' after an element of a list"},
	{"after top-level value", "the end of the document after its object"},
	{"in string literal", "no control character inside a string (write a newline as \\n, a tab as \\t)"},
	{"in string escape code", "an escape after the backslash: \\\", \\\\, \\/, \\b, \\f, \\n, \\r, \\t or \\uXXXX"},
	{"in \\u hexadecimal character escape", "four hexadecimal digits after \\u"},
	{"after decimal point in numeric literal", "a digit after the decimal point"},
	{"in exponent of numeric literal", "a digit in the exponent"},
	{"in numeric literal", "a digit"},
}

// jsonWords is the message of syntax error d in words; other messages
// stay as they are.
func jsonWords(d source.Diagnostic, src []byte) string {
	msg := d.Msg
	if msg == "unexpected end of JSON input" {
		if len(bytes.TrimSpace(src)) == 0 {
			return "the document is empty: expected a JSON object"
		}
		return "the document ends too early: expected more (a string, a list or an object is not closed)"
	}
	if bytes.HasPrefix(src, []byte("\ufeff")) && offsetOf(src, d.Pos) == 0 {
		return "the document starts with a byte-order mark (U+FEFF): save it as UTF-8 without one"
	}
	rest, ok := strings.CutPrefix(msg, "invalid character ")
	if !ok {
		return msg
	}
	found, context, ok := cutQuoted(rest)
	if !ok {
		return msg
	}
	at := offsetOf(src, d.Pos)
	if found == "' '" && at == len(src)-1 && (len(src) == 0 || src[len(src)-1] != ' ') {
		found = "the end of the document"
	}
	expected := ""
	if lit, ok := strings.CutPrefix(context, "in literal "); ok {
		word, _, _ := strings.Cut(lit, " ")
		expected = "the literal " + word + " (true, false and null are written in lower case)"
	}
	for _, c := range jsonContexts {
		if expected == "" && context == c.context {
			expected = c.expected
		}
	}
	if expected == "" {
		return msg
	}
	out := "expected " + expected + ", found " + found
	prev := lastNonBlank(src, at)
	switch {
	case (found == "']'" || found == "'}'") && prev == ',':
		out += ": a trailing comma before it? JSON allows none"
	case found == `'\''`:
		out += ": JSON strings and keys use double quotes"
	case found == `'"'` && strings.HasPrefix(context, "after "):
		out += ": a missing comma before it?"
	case found == "'/'" && at+1 < len(src) && (src[at+1] == '/' || src[at+1] == '*'):
		out += ": JSON allows no comments"
	}
	return out
}

// cutQuoted splits "'c' rest" (encoding/json's quoting of a character) into
// the quoted character and the rest.
func cutQuoted(s string) (quoted, rest string, ok bool) {
	if !strings.HasPrefix(s, "'") {
		return "", "", false
	}
	for i := 1; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			continue
		}
		if s[i] == '\'' {
			return s[:i+1], strings.TrimPrefix(s[i+1:], " "), true
		}
	}
	return "", "", false
}

// offsetOf is the byte offset of pos in src (-1 when it is not found).
func offsetOf(src []byte, pos source.Pos) int {
	line := 1
	start := 0
	for line < pos.Line {
		i := bytes.IndexByte(src[start:], '\n')
		if i < 0 {
			return -1
		}
		start += i + 1
		line++
	}
	// Columns count characters.
	col := 1
	for i := start; i < len(src); {
		if col == pos.Col {
			return i
		}
		_, n := utf8.DecodeRune(src[i:])
		i += n
		col++
	}
	if col == pos.Col {
		return len(src)
	}
	return -1
}

// lastNonBlank is the last byte before offset at that is not a blank (0
// when none).
func lastNonBlank(src []byte, at int) byte {
	for i := min(at, len(src)) - 1; i >= 0; i-- {
		switch src[i] {
		case ' ', '\t', '\r', '\n':
		default:
			return src[i]
		}
	}
	return 0
}
