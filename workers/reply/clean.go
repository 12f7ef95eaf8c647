package reply

import (
	"encoding/json"
	"path"
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"smith/lang"
)

// The heuristic cleaner of AI replies (CONTRACT.md section 9, seed 003). The
// functions here never fail: a reply they cannot improve comes back trimmed.
//
// A fenced block is a run of lines opened by a line of three or more
// backticks or tildes (indentation allowed) with an optional info string
// ("json", "go") and closed by a line holding only at least as many of the
// same character. A block that is never closed runs to the end of the text,
// as truncated replies are common.

// signalLine is a signal on a line of its own (CONTRACT.md 7.1).
var signalLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(lang.SignalPattern) })

// chattyInterjections start a conversational preamble line when a
// punctuation mark follows them ("Sure! ...", "Of course, ...").
var chattyInterjections = [...]string{
	"sure", "sure thing", "of course", "certainly", "absolutely", "okay", "ok", "alright",
	"all right", "great", "perfect", "no problem", "got it", "understood", "done",
}

// chattyOpeners start a conversational preamble line whatever follows them.
var chattyOpeners = [...]string{
	"here is", "here's", "here are", "below is", "below are", "happy to", "as requested",
	"i've", "i have", "i'll", "i will", "i'd be happy",
}

// chattyClosers start a conversational postscript line ("Let me know if ...").
var chattyClosers = [...]string{
	"let me know", "please let me know", "hope this helps", "i hope this", "hope that helps",
	"i hope that", "feel free", "if you have any", "if you need", "if you'd like", "if you want",
	"happy coding", "good luck", "enjoy", "is there anything else", "cheers", "would you like",
}

// maxChattyLine is the longest line the cleaner treats as chatter.
const maxChattyLine = 300

// jsonScanBudgetFactor bounds the bytes ExtractJSON scans, as a multiple of
// the input length (plus jsonScanBudgetBase), so that text full of
// unbalanced brackets cannot make it quadratic.
const (
	jsonScanBudgetFactor = 32
	jsonScanBudgetBase   = 1 << 20
)

// A fenceBlock is one fenced code block of a text.
type fenceBlock struct {
	info       string // the first word of the info string, lowercased ("json", "go", "")
	body       string // the lines between the fences, joined with "\n"
	start, end int    // line indexes of the opening fence and of the closing fence (len(lines) when unclosed)
	closed     bool
}

// SplitLines splits s into lines, dropping the "\r" of "\r\n".
func SplitLines(s string) []string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// fenceOpen reports whether line opens a fence, with its marker character,
// its length and the info string's first word.
func fenceOpen(line string) (ch byte, n int, info string, ok bool) {
	t := strings.TrimLeft(line, " \t")
	if len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return 0, 0, "", false
	}
	ch = t[0]
	for n < len(t) && t[n] == ch {
		n++
	}
	if n < 3 {
		return 0, 0, "", false
	}
	rest := strings.TrimSpace(t[n:])
	if ch == '`' && strings.ContainsRune(rest, '`') {
		return 0, 0, "", false // inline code such as ```x``` on one line
	}
	if f := strings.Fields(rest); len(f) > 0 {
		info = strings.ToLower(f[0])
	}
	return ch, n, info, true
}

// fenceClose reports whether line closes a fence opened with n of ch.
func fenceClose(line string, ch byte, n int) bool {
	t := strings.TrimSpace(line)
	if len(t) < n {
		return false
	}
	for i := 0; i < len(t); i++ {
		if t[i] != ch {
			return false
		}
	}
	return true
}

// fencedBlocks returns the fenced blocks of lines, in order.
func fencedBlocks(lines []string) []fenceBlock {
	var blocks []fenceBlock
	for i := 0; i < len(lines); i++ {
		ch, n, info, ok := fenceOpen(lines[i])
		if !ok {
			continue
		}
		b := fenceBlock{info: info, start: i, end: len(lines)}
		for j := i + 1; j < len(lines); j++ {
			if fenceClose(lines[j], ch, n) {
				b.end, b.closed = j, true
				break
			}
		}
		b.body = strings.Join(lines[i+1:b.end], "\n")
		blocks = append(blocks, b)
		i = b.end
	}
	return blocks
}

// startsWithWord reports whether s (lowercase) starts with the phrase w
// followed by something that is not part of a word.
func startsWithWord(s, w string) bool {
	if !strings.HasPrefix(s, w) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(s[len(w):])
	return len(s) == len(w) || !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_')
}

// normalizeQuotes replaces typographic apostrophes, which models like to use
// in "Here’s", with the ASCII one.
func normalizeQuotes(s string) string {
	return strings.NewReplacer("\u2019", "'", "\u2018", "'").Replace(s)
}

// looksLikeProse reports whether line could be chatter rather than content:
// it does not start like code, JSON, markup or a fence.
func looksLikeProse(line string) bool {
	t := strings.TrimSpace(line)
	if t == "" || len(t) > maxChattyLine {
		return false
	}
	switch t[0] {
	case '{', '[', '`', '~', '#', '/', '<', '-', '*', '"', '\'', '(', '@', '|', '>':
		return false
	}
	return true
}

// isPreambleLine reports whether line is a conversational opener. next is
// the next non-blank line ("" at the end).
func isPreambleLine(line, next string) bool {
	if !looksLikeProse(line) || strings.ContainsAny(line, "{[") {
		return false // a line that carries a JSON value is kept
	}
	t := strings.ToLower(normalizeQuotes(strings.TrimSpace(line)))
	for _, w := range chattyInterjections {
		if rest, ok := strings.CutPrefix(t, w); ok && rest != "" && strings.ContainsRune("!,.:;", rune(rest[0])) {
			return true
		}
	}
	for _, w := range chattyOpeners {
		if startsWithWord(t, w) {
			return true
		}
	}
	// "The updated function:" right before a fence or a JSON value.
	if strings.HasSuffix(t, ":") && strings.Contains(t, " ") {
		n := strings.TrimSpace(next)
		if _, _, _, ok := fenceOpen(n); ok || strings.HasPrefix(n, "{") || strings.HasPrefix(n, "[") {
			return true
		}
	}
	return false
}

// isPostscriptLine reports whether line is a conversational closer.
func isPostscriptLine(line string) bool {
	if !looksLikeProse(line) {
		return false
	}
	t := strings.ToLower(normalizeQuotes(strings.TrimSpace(line)))
	for _, w := range chattyClosers {
		if startsWithWord(t, w) {
			return true
		}
	}
	return false
}

// trimBlankLines drops blank lines at both ends.
func trimBlankLines(lines []string) []string {
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// stripChatter removes conversational preamble lines at the start and
// postscript lines at the end.
func stripChatter(lines []string) []string {
	lines = trimBlankLines(lines)
	for len(lines) > 0 {
		next := ""
		if rest := trimBlankLines(lines[1:]); len(rest) > 0 {
			next = rest[0]
		}
		if !isPreambleLine(lines[0], next) {
			break
		}
		lines = trimBlankLines(lines[1:])
	}
	for len(lines) > 0 && isPostscriptLine(lines[len(lines)-1]) {
		lines = trimBlankLines(lines[:len(lines)-1])
	}
	return lines
}

// unwrapWholeFence returns the body of lines when they are exactly one fenced
// block (opening fence first, its closing fence last). A block opened as
// "markdown" or "md" only needs a closing fence on its last line: models
// wrap whole documents that contain fenced examples of their own that way.
func unwrapWholeFence(lines []string) ([]string, bool) {
	if len(lines) < 2 {
		return lines, false
	}
	blocks := fencedBlocks(lines)
	if len(blocks) == 0 || blocks[0].start != 0 {
		return lines, false
	}
	if b := blocks[0]; b.closed && b.end == len(lines)-1 {
		return lines[1 : len(lines)-1], true
	}
	ch, n, info, _ := fenceOpen(lines[0])
	if (info == "markdown" || info == "md") && fenceClose(lines[len(lines)-1], ch, n) {
		return lines[1 : len(lines)-1], true
	}
	return lines, false
}

// Clean removes the chat around an AI reply: surrounding whitespace,
// conversational preamble lines ("Sure! Here is the code:", "Of course.")
// and postscript lines ("Let me know if ...", "Hope this helps"), and then
// one markdown fence when the rest is exactly one fenced block. Everything
// else is kept as it is, including a trailing SIGNAL: line (see
// LastLineSignal).
func Clean(s string) string {
	lines := stripChatter(SplitLines(s))
	if body, ok := unwrapWholeFence(lines); ok {
		lines = trimBlankLines(body)
	}
	return strings.TrimRightFunc(strings.Join(lines, "\n"), unicode.IsSpace)
}

// ExtractJSON returns the first complete JSON object or array in s, skipping
// prose and fences, and reports whether there is one. A value inside a
// fenced block whose info string is "json" is preferred. Candidates are found
// with a bracket matcher that respects strings and escapes and are then
// checked with json.Valid, so "[1] of the docs" followed by a real object is
// skipped only when it is not valid JSON. The text is returned as it appears
// in s.
func ExtractJSON(s string) (string, bool) {
	for _, b := range fencedBlocks(SplitLines(s)) {
		if b.info == "json" || b.info == "jsonc" || b.info == "json5" {
			if v, ok := firstJSONValue(b.body); ok {
				return v, true
			}
		}
	}
	return firstJSONValue(s)
}

// firstJSONValue scans s for the first '{' or '[' that starts a valid JSON
// value.
func firstJSONValue(s string) (string, bool) {
	budget := jsonScanBudgetFactor*len(s) + jsonScanBudgetBase
	for i := 0; i < len(s); i++ {
		if s[i] != '{' && s[i] != '[' {
			continue
		}
		end, used := matchJSONBrackets(s, i)
		budget -= used
		if end > 0 {
			if json.Valid([]byte(s[i:end])) {
				return s[i:end], true
			}
			budget -= end - i
		}
		if budget < 0 {
			return "", false
		}
	}
	return "", false
}

// matchJSONBrackets follows the brackets of s from start (a '{' or '[') and
// returns the end of the value (exclusive), or 0 when the brackets do not
// match, a string holds a raw newline, or s ends first. used is the number of
// bytes looked at.
func matchJSONBrackets(s string, start int) (end, used int) {
	var stack []byte
	inString, escaped := false, false
	for j := start; j < len(s); j++ {
		c := s[j]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			case c == '\n':
				return 0, j - start + 1
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{':
			stack = append(stack, '}')
		case '[':
			stack = append(stack, ']')
		case '}', ']':
			if len(stack) == 0 || stack[len(stack)-1] != c {
				return 0, j - start + 1
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return j + 1, j - start + 1
			}
		}
	}
	return 0, len(s) - start
}

// JSONText returns s trimmed when it is one JSON value as a whole, else
// the first JSON value of the cleaned reply (ExtractJSON(Clean(s))), and
// whether there is one.
func JSONText(s string) (string, bool) {
	if text := strings.TrimSpace(s); json.Valid([]byte(text)) {
		return text, true
	}
	return ExtractJSON(Clean(s))
}

// ExtractCode returns the contents of the first fenced code block of s, or,
// when s has none, s without its leading blank lines and trailing white
// space. Indentation of the first line is kept.
func ExtractCode(s string) string {
	lines := SplitLines(s)
	if blocks := fencedBlocks(lines); len(blocks) > 0 {
		lines = strings.Split(blocks[0].body, "\n")
	}
	lines = trimBlankLines(lines)
	return strings.TrimRightFunc(strings.Join(lines, "\n"), unicode.IsSpace)
}

// CleanPreamble drops everything before the first line that starts with '#'
// (a markdown heading) or is exactly '---' (a rule or front matter), which is
// where chatty models start the real document. Without such a line it
// returns s trimmed.
func CleanPreamble(s string) string {
	lines := SplitLines(s)
	for i, l := range lines {
		if strings.HasPrefix(l, "#") || strings.TrimRight(l, " \t") == "---" {
			lines = lines[i:]
			break
		}
	}
	lines = trimBlankLines(lines)
	return strings.TrimRightFunc(strings.Join(lines, "\n"), unicode.IsSpace)
}

// LastLineSignal looks at the last non-empty line of s (CONTRACT.md 7.1).
// When it is exactly SIGNAL:NAME (NAME of A-Z, 0-9 and _), optionally
// wrapped in ** or `, it returns the signal, s without that line (trailing
// white space removed) and true. Otherwise it returns "", s and false.
func LastLineSignal(s string) (signal, rest string, ok bool) {
	body := strings.TrimRightFunc(s, unicode.IsSpace)
	start := strings.LastIndexByte(body, '\n') + 1
	line := strings.TrimSpace(body[start:])
	for _, w := range [...]string{"**", "`"} {
		if len(line) > 2*len(w) && strings.HasPrefix(line, w) && strings.HasSuffix(line, w) {
			line = strings.TrimSpace(line[len(w) : len(line)-len(w)])
			break
		}
	}
	if !signalLine().MatchString(line) {
		return "", s, false
	}
	return line, strings.TrimRightFunc(body[:start], unicode.IsSpace), true
}

// CleanFile strips the fences around the content of file rel taken from a
// reply: a markdown file only loses a fence that wraps all of it (its own
// fences are content); any other file is ExtractCode of it.
func CleanFile(rel, s string) string {
	switch strings.ToLower(path.Ext(rel)) {
	case ".md", ".markdown", ".mdx":
		lines := trimBlankLines(SplitLines(s))
		if body, ok := unwrapWholeFence(lines); ok {
			return strings.Join(body, "\n")
		}
		return strings.Join(lines, "\n")
	}
	return ExtractCode(s)
}
