package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"smith/source"
)

// A MockEntry is one reply of a mock script.
type MockEntry struct {
	Match    string `json:"match,omitempty"`     // a regexp (RE2) the prompt must match; "" = any prompt
	Reply    string `json:"reply"`               // the reply text
	ExitCode int    `json:"exit_code,omitempty"` // as a CLI's exit code: 1 and 124 are retried
	Signal   string `json:"signal,omitempty"`    // a signal for the result ("SIGNAL:" is added when missing)
	// Turn, when set, answers only the Turn-th call of the agent's session
	// (session: continue; 1 = the call that starts it).
	Turn int `json:"turn,omitempty"`
	re   *regexp.Regexp
}

// Matches reports whether the entry answers prompt: it has no match, or its
// match matches prompt.
func (e *MockEntry) Matches(prompt string) bool {
	return e.re == nil || e.re.MatchString(prompt)
}

// MatchesTurn reports whether the entry answers the turn-th call of a
// session (0: the call continues no session): it names no turn, or that
// one.
func (e *MockEntry) MatchesTurn(turn int) bool {
	return e.Turn == 0 || e.Turn == turn
}

// ParseScript reads a mock script: a JSON array of entries when its first
// non-blank character is '[', else the YAML subset of parseScriptYAML. Each
// entry's match is compiled.
func ParseScript(src string) ([]MockEntry, error) {
	var entries []MockEntry
	if strings.HasPrefix(strings.TrimSpace(src), "[") && !isEmptyYAMLList(src) {
		dec := json.NewDecoder(strings.NewReader(src))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&entries); err != nil {
			return nil, err
		}
	} else {
		var err error
		if entries, err = parseScriptYAML(src); err != nil {
			return nil, err
		}
	}
	for i := range entries {
		if entries[i].Match == "" {
			continue
		}
		re, err := regexp.Compile(entries[i].Match)
		if err != nil {
			return nil, fmt.Errorf("entry %d: match: %w", i+1, err)
		}
		entries[i].re = re
	}
	return entries, nil
}

// isEmptyYAMLList reports whether src is "[]" with YAML comments.
func isEmptyYAMLList(src string) bool {
	var b bytes.Buffer
	for line := range strings.SplitSeq(src, "\n") {
		if t := strings.TrimSpace(line); !strings.HasPrefix(t, "#") {
			b.WriteString(t)
		}
	}
	return b.String() == "[]"
}

// parseScriptYAML reads the YAML subset that mock scripts use: a block
// sequence of flat mappings whose keys are match, reply, exit_code, signal and
// turn.
// Values are plain scalars (a " #" starts a comment), 'single-quoted' (a
// doubled quote is a quote), "double-quoted" (with the escapes \n, \t, \",
// \\ and the other escapes Go and YAML share), each optionally followed by a
// comment, or
// block scalars introduced by |, |-, |+, >, >- or >+. Blank lines, comment
// lines, a "---" line and an empty "[]" are allowed; anchors, flow mappings,
// nested collections and tabs for indentation are not.
func parseScriptYAML(src string) ([]MockEntry, error) {
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	entries := []MockEntry{}
	itemIndent, keyIndent := -1, -1
	for i := 0; i < len(lines); {
		line := lines[i]
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") || t == "---" || t == "[]" && len(entries) == 0 {
			i++
			continue
		}
		if strings.HasPrefix(strings.TrimLeft(line, " "), "\t") {
			return nil, fmt.Errorf("line %d: tabs are not allowed for indentation", i+1)
		}
		ind := indentOf(line)
		if t == "-" || strings.HasPrefix(t, "- ") {
			if itemIndent >= 0 && ind != itemIndent {
				return nil, fmt.Errorf("line %d: list item indented by %d, want %d", i+1, ind, itemIndent)
			}
			itemIndent = ind
			entries = append(entries, MockEntry{})
			rest := strings.TrimLeft(t[1:], " ")
			if rest == "" {
				keyIndent = -1
				i++
				continue
			}
			keyIndent = ind + len(t) - len(rest)
			next, err := parseYAMLKey(lines, i, keyIndent, rest, &entries[len(entries)-1])
			if err != nil {
				return nil, err
			}
			i = next
			continue
		}
		if len(entries) == 0 {
			return nil, fmt.Errorf("line %d: expected a list item '- key: value'", i+1)
		}
		if keyIndent < 0 && ind > itemIndent {
			keyIndent = ind
		}
		if ind != keyIndent {
			return nil, fmt.Errorf("line %d: key indented by %d, want %d", i+1, ind, keyIndent)
		}
		next, err := parseYAMLKey(lines, i, keyIndent, t, &entries[len(entries)-1])
		if err != nil {
			return nil, err
		}
		i = next
	}
	return entries, nil
}

// indentOf counts the leading spaces of line.
func indentOf(line string) int { return len(line) - len(strings.TrimLeft(line, " ")) }

// parseYAMLKey reads "key: value" (text) from lines[i], plus the lines of a
// block scalar, sets the key in e and returns the next line's index.
func parseYAMLKey(lines []string, i, keyIndent int, text string, e *MockEntry) (int, error) {
	key, val, ok := strings.Cut(text, ":")
	if !ok || val != "" && val[0] != ' ' {
		return 0, fmt.Errorf("line %d: expected 'key: value'", i+1)
	}
	key, val = strings.TrimSpace(key), strings.TrimSpace(val)
	next := i + 1
	var s string
	switch {
	case strings.HasPrefix(val, "|") || strings.HasPrefix(val, ">"):
		header, _, _ := strings.Cut(val, " #")
		header = strings.TrimSpace(header)
		if len(header) > 2 || len(header) == 2 && header[1] != '-' && header[1] != '+' {
			return 0, fmt.Errorf("line %d: unsupported block scalar header '%s'", i+1, header)
		}
		s, next = blockScalar(lines, i+1, keyIndent, header)
	case strings.HasPrefix(val, `"`):
		end := closingQuote(val, '"')
		if end < 0 {
			end = len(val)
		}
		q, err := strconv.Unquote(val[:end])
		if err != nil {
			return 0, fmt.Errorf("line %d: bad double-quoted string %s", i+1, val)
		}
		if !onlyComment(val[end:]) {
			return 0, fmt.Errorf("line %d: unexpected text after the quoted string: %s", i+1, val[end:])
		}
		s = q
	case strings.HasPrefix(val, "'"):
		end := closingQuote(val, '\'')
		if end < 2 {
			return 0, fmt.Errorf("line %d: unterminated single-quoted string", i+1)
		}
		if !onlyComment(val[end:]) {
			return 0, fmt.Errorf("line %d: unexpected text after the quoted string: %s", i+1, val[end:])
		}
		s = strings.ReplaceAll(val[1:end-1], "''", "'")
	default:
		if k := strings.Index(val, " #"); k >= 0 {
			val = strings.TrimSpace(val[:k])
		}
		s = val
	}
	switch key {
	case "match":
		e.Match = s
	case "reply":
		e.Reply = s
	case "signal":
		e.Signal = s
	case "exit_code", "turn":
		n, err := strconv.Atoi(s)
		if err != nil {
			return 0, fmt.Errorf("line %d: %s '%s' is not an integer", i+1, key, s)
		}
		if key == "turn" {
			e.Turn = n
		} else {
			e.ExitCode = n
		}
	default:
		return 0, fmt.Errorf("line %d: unknown key '%s'%s", i+1, key,
			source.DidYouMean(key, []string{"match", "reply", "exit_code", "signal", "turn"}))
	}
	return next, nil
}

// closingQuote returns the index just past the quote q that closes the
// string val opens (a backslash escapes in "...", a doubled quote is a
// quote in '...'), or -1 when none does.
func closingQuote(val string, q byte) int {
	for k := 1; k < len(val); k++ {
		switch {
		case q == '"' && val[k] == '\\':
			k++
		case val[k] == q && q == '\'' && k+1 < len(val) && val[k+1] == '\'':
			k++
		case val[k] == q:
			return k + 1
		}
	}
	return -1
}

// onlyComment reports whether rest, the text after a quoted value, is
// empty or a comment (blanks, then '#').
func onlyComment(rest string) bool {
	t := strings.TrimLeft(rest, " ")
	return t == "" || len(t) < len(rest) && t[0] == '#'
}

// blockScalar reads the lines of a block scalar that start at lines[i] and
// are indented deeper than keyIndent. header is |, |-, |+, > , >- or >+.
func blockScalar(lines []string, i, keyIndent int, header string) (string, int) {
	var body []string
	blockIndent := -1
	j := i
	for ; j < len(lines); j++ {
		l := lines[j]
		if strings.TrimSpace(l) == "" {
			body = append(body, "")
			continue
		}
		ind := indentOf(l)
		if ind <= keyIndent || blockIndent >= 0 && ind < blockIndent {
			break
		}
		if blockIndent < 0 {
			blockIndent = ind
		}
		body = append(body, l[blockIndent:])
	}
	trailing := 0
	for len(body) > 0 && body[len(body)-1] == "" {
		body = body[:len(body)-1]
		trailing++
	}
	// The trailing blank lines that belong to the next key are not consumed.
	next := j - trailing
	var text string
	if header[0] == '|' {
		text = strings.Join(body, "\n")
	} else {
		text = foldLines(body)
	}
	chomp := byte(0)
	if len(header) == 2 {
		chomp = header[1]
	}
	switch {
	case text == "" && chomp != '+':
	case chomp == '-':
	case chomp == '+':
		text += "\n" + strings.Repeat("\n", trailing)
	default:
		text += "\n"
	}
	return text, next
}

// foldLines folds the lines of a > block: neighbouring non-empty lines are
// joined with a space, each empty line between them becomes a newline, and
// the breaks around lines indented more than the block are kept.
func foldLines(body []string) string {
	var b strings.Builder
	for k, l := range body {
		if k > 0 {
			prev := body[k-1]
			switch {
			case l == "":
				b.WriteByte('\n')
			case prev == "":
			case strings.HasPrefix(l, " ") || strings.HasPrefix(prev, " "):
				b.WriteByte('\n')
			default:
				b.WriteByte(' ')
			}
		}
		b.WriteString(l)
	}
	return b.String()
}
