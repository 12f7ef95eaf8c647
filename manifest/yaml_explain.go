package manifest

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// A yamlMistake is where a YAML document that the library refused goes
// wrong, and what is wrong there, in words.
type yamlMistake struct {
	line, col int // 1-based
	msg       string
}

// keyLine matches a line that starts a mapping entry ("key:" then a blank
// or the end), after an optional sequence dash.
var keyLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:- +)?(?:"[^"]*"|'[^']*'|[^\s#"'{}\[\],][^:#]*?) *:(?: |$)`)
})

// explainYAML looks, in a document the YAML library refused, for the
// mistakes people make most, where they are: a tab in the indentation, a
// quoted string that is never closed, a line indented more or less than
// its siblings. The library reports where it gave up, often lines later
// ("did not find expected key" at the start of the enclosing list). ok is
// false when none of them is found.
func explainYAML(src []byte) (yamlMistake, bool) {
	lines := strings.Split(strings.ReplaceAll(string(src), "\r\n", "\n"), "\n")
	if m, ok := findTab(lines); ok {
		return m, true
	}
	if m, ok := findUnclosedQuote(lines); ok {
		return m, true
	}
	if m, ok := findUnclosedFlow(lines); ok {
		return m, true
	}
	return findBadIndent(lines)
}

// indentOf counts the leading spaces of l.
func indentOf(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }

// blank reports whether l holds nothing but blanks or a comment.
func blank(l string) bool {
	t := strings.TrimSpace(l)
	return t == "" || strings.HasPrefix(t, "#")
}

// findTab finds the first line indented with a tab.
func findTab(lines []string) (yamlMistake, bool) {
	for i, l := range lines {
		lead := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if j := strings.IndexByte(lead, '\t'); j >= 0 && strings.TrimSpace(l) != "" {
			return yamlMistake{i + 1, j + 1, "a tab in the indentation: YAML indents with spaces only; replace the tab with spaces"}, true
		}
	}
	return yamlMistake{}, false
}

// findUnclosedQuote finds a quoted scalar that is not closed on its line
// and runs into a line that starts a new entry (a string that spans lines
// is rare in a workflow; one whose quote is missing swallows what follows).
func findUnclosedQuote(lines []string) (yamlMistake, bool) {
	for i, l := range lines {
		q, col := openQuote(l)
		if q == 0 {
			continue
		}
		next := i + 1
		for next < len(lines) && strings.TrimSpace(lines[next]) == "" {
			next++
		}
		if next == len(lines) || keyLine().MatchString(strings.TrimSpace(lines[next])) && indentOf(lines[next]) <= indentOf(l)+2 {
			return yamlMistake{i + 1, col, fmt.Sprintf("unclosed quote: the string that starts with %c here has no closing %c on its line", q, q)}, true
		}
	}
	return yamlMistake{}, false
}

// findUnclosedFlow finds a flow list ([) or object ({) opened as a value
// that is not closed before a line that starts an entry no deeper than
// the opening line's own key, or before the end: the library gives up on
// a later line ("did not find expected ',' or ']'").
func findUnclosedFlow(lines []string) (yamlMistake, bool) {
	for i, l := range lines {
		col := openFlow(l)
		if col == 0 {
			continue
		}
		depth := flowDepth(stripFlowComment(l[col-1:]))
		if depth <= 0 {
			continue
		}
		keyInd := indentOf(l)
		for t := l[keyInd:]; strings.HasPrefix(t, "- "); {
			rest := strings.TrimLeft(t[1:], " ")
			keyInd += len(t) - len(rest)
			t = rest
		}
		open, close, what := l[col-1], byte(']'), "list"
		if open == '{' {
			close, what = '}', "object"
		}
		before := "the end of the document"
		for j := i + 1; j <= len(lines) && depth > 0; j++ {
			if j == len(lines) {
				return yamlMistake{i + 1, col, fmt.Sprintf("unclosed %s: the %c here has no closing %c before %s", what, open, close, before)}, true
			}
			nl := lines[j]
			if blank(nl) {
				continue
			}
			if indentOf(nl) <= keyInd && keyLine().MatchString(strings.TrimSpace(nl)) {
				before = fmt.Sprintf("line %d", j+1)
				return yamlMistake{i + 1, col, fmt.Sprintf("unclosed %s: the %c here has no closing %c before %s", what, open, close, before)}, true
			}
			depth += flowDepth(stripFlowComment(nl))
		}
	}
	return yamlMistake{}, false
}

// openFlow returns the 1-based column of a flow collection that line l
// opens as a value (at its start, after '- ' or after ': '), 0 when none.
// A comment or a quoted or plain scalar first ends the scan.
func openFlow(l string) int {
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case c == ' ':
		case c == '[' || c == '{':
			return i + 1
		case c == '-' && (i+1 == len(l) || l[i+1] == ' '):
		default:
			// A key: the value starts after its ': '.
			k := keyLine().FindString(l[i:])
			if k == "" || strings.HasPrefix(strings.TrimSpace(l[i:]), "- ") {
				return 0
			}
			i += len(k) - 1
		}
	}
	return 0
}

// stripFlowComment cuts a comment (' #' outside quotes) off a line of
// flow content.
func stripFlowComment(s string) string {
	cut := len(s)
	outsideQuotes(s, func(i int, c byte) bool {
		if c == '#' && (i == 0 || s[i-1] == ' ') {
			cut = i
			return false
		}
		return true
	})
	return s[:cut]
}

// outsideQuotes calls f with each byte of s that is outside a quoted
// string (and is not a quote), and its index, until f returns false.
func outsideQuotes(s string, f func(i int, c byte) bool) {
	var q byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case q == '"' && c == '\\':
			i++
		case q != 0:
			if c == q {
				q = 0
			}
		case c == '"' || c == '\'':
			q = c
		default:
			if !f(i, c) {
				return
			}
		}
	}
}

// openQuote returns the quote character of a quoted scalar that starts on
// line l and is still open at its end, with its column; 0 when none. A
// quote opens a scalar only where a value can start (the start of the line,
// after '- ' or ': ', and in a flow collection after '[', '{' or ','): in
// the middle of a plain scalar it is text. A comment ends the scan.
func openQuote(l string) (byte, int) {
	atStart, depth := true, 0
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case c == ' ':
		case c == '#' && (i == 0 || l[i-1] == ' '):
			return 0, 0
		case (c == '"' || c == '\'') && atStart:
			end := closeQuote(l, i)
			if end < 0 {
				return c, i + 1
			}
			i, atStart = end, false
		case c == '-' && atStart && (i+1 == len(l) || l[i+1] == ' '):
		case c == ':' && (i+1 == len(l) || l[i+1] == ' ' || depth > 0):
			atStart = true
		case (c == '[' || c == '{') && atStart:
			depth++
		case (c == ']' || c == '}') && depth > 0:
			depth--
		case c == ',' && depth > 0:
			atStart = true
		default:
			atStart = false
		}
	}
	return 0, 0
}

// closeQuote returns the index of the quote that closes the scalar opened
// at l[i], or -1 when the line ends first.
func closeQuote(l string, i int) int {
	q := l[i]
	for j := i + 1; j < len(l); j++ {
		switch {
		case q == '"' && l[j] == '\\':
			j++
		case l[j] == q && q == '\'' && j+1 < len(l) && l[j+1] == '\'':
			j++ // '' inside a single-quoted scalar
		case l[j] == q:
			return j
		}
	}
	return -1
}

// findBadIndent walks the document's entries by indentation and finds the
// first line indented deeper than its sibling when nothing above opened a
// block for it, or back to a column that no enclosing entry uses.
func findBadIndent(lines []string) (yamlMistake, bool) {
	var levels []int // indents of the open block collections, innermost last
	opens := false   // the last entry's value continues on the next lines
	prev := -1       // index of the last entry line
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if blank(l) {
			continue
		}
		ind, text := indentOf(l), strings.TrimSpace(l)
		switch {
		case len(levels) == 0:
			levels = append(levels, ind)
		case ind > levels[len(levels)-1]:
			if !opens {
				p := strings.TrimSpace(lines[prev])
				return yamlMistake{i + 1, ind + 1, fmt.Sprintf("bad indentation: this line is indented %d spaces, more than '%s' on line %d (%d spaces), whose value is already on its line; line it up with its siblings",
					ind, shorten(p), prev+1, indentOf(lines[prev]))}, true
			}
			levels = append(levels, ind)
		case ind < levels[len(levels)-1]:
			for len(levels) > 0 && levels[len(levels)-1] > ind {
				levels = levels[:len(levels)-1]
			}
			if len(levels) == 0 || levels[len(levels)-1] != ind {
				return yamlMistake{i + 1, ind + 1, fmt.Sprintf("bad indentation: this line is indented %d spaces, which lines up with no entry above it; indent it as the entries it belongs with", ind)}, true
			}
		}
		prev = i
		// What the line opens: a sequence item's own entries, a key with
		// no value on its line, a block scalar or a flow collection that
		// continues below.
		keyInd := ind
		for strings.HasPrefix(text, "- ") || text == "-" {
			if text == "-" {
				text = ""
				break
			}
			rest := strings.TrimLeft(text[1:], " ")
			keyInd += len(text) - len(rest)
			text = rest
			levels = append(levels, keyInd)
		}
		value := text
		if m := keyLine().FindString(text); m != "" {
			value = strings.TrimSpace(text[len(m):])
		} else if text != "" && ind == keyInd {
			opens = false // a scalar continuing a line above, or a flow value
			i = skipFlow(lines, i, text)
			continue
		}
		value = stripComment(value)
		switch {
		case value == "" || strings.HasPrefix(value, "&") && !strings.Contains(value, " ") || strings.HasPrefix(value, "!") && !strings.Contains(value, " "):
			opens = true
		case value[0] == '|' || value[0] == '>':
			opens = false
			for i+1 < len(lines) && (strings.TrimSpace(lines[i+1]) == "" || indentOf(lines[i+1]) > keyInd) {
				i++
			}
		default:
			opens = false
			i = skipFlow(lines, i, value)
		}
	}
	return yamlMistake{}, false
}

// skipFlow returns the index of the last line of the flow collection that
// value (on line i) opens, or i when it closes on its line.
func skipFlow(lines []string, i int, value string) int {
	if value == "" || value[0] != '[' && value[0] != '{' {
		return i
	}
	depth := flowDepth(value)
	for depth > 0 && i+1 < len(lines) {
		i++
		depth += flowDepth(lines[i])
	}
	return i
}

// flowDepth counts the brackets and braces s opens minus those it closes,
// outside quoted strings.
func flowDepth(s string) int {
	d := 0
	outsideQuotes(s, func(_ int, c byte) bool {
		switch c {
		case '[', '{':
			d++
		case ']', '}':
			d--
		}
		return true
	})
	return d
}

// stripComment removes a trailing comment from a plain value.
func stripComment(v string) string {
	if v == "" || v[0] == '"' || v[0] == '\'' {
		return v
	}
	if i := strings.Index(v, " #"); i >= 0 {
		v = v[:i]
	}
	if strings.HasPrefix(v, "#") {
		return ""
	}
	return strings.TrimSpace(v)
}

// shorten quotes at most 40 bytes of a line.
func shorten(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}
