package workers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"smith/source"
	"smith/workers/confine"
)

// mockCursors is the file under RUN_ROOT that remembers which script entries
// each step has consumed, so that a resumed run continues where it stopped.
const mockCursors = "mock-cursors.json"

// A mockEntry is one reply of a mock script.
type mockEntry struct {
	Match    string `json:"match,omitempty"`     // a regexp (RE2) the prompt must match; "" = any prompt
	Reply    string `json:"reply"`               // the reply text
	ExitCode int    `json:"exit_code,omitempty"` // as a CLI's exit code: 1 and 124 are retried
	Signal   string `json:"signal,omitempty"`    // a signal for the result ("SIGNAL:" is added when missing)
	re       *regexp.Regexp
}

// runMock answers a provider call without a process (CONTRACT.md 5.1). With
// provider_params script (a path relative to WORKSPACE, over the provider's
// defaults), the reply is the first entry of the script not yet consumed by
// this step whose match (if any) matches the prompt; that entry is then
// consumed. When no entry is left, or there is no script, the reply is the
// prompt itself. Tokens are the number of whitespace-separated words of the
// prompt plus those of the reply.
func (r *Registry) runMock(req *Request, pv provider, prompt, call string) callReply {
	script := ""
	for _, list := range [][]Param{pv.defaults, req.ProviderParams} {
		for _, kv := range list {
			if kv.Key == "script" {
				script = kv.Value
			}
		}
	}
	echo := callReply{text: req.Mask.String(prompt), tokens: 2 * len(strings.Fields(prompt))}
	if script == "" {
		return echo
	}
	abs, err := req.Dirs.Resolve(script)
	if err != nil {
		return callReply{exit: exitNotRun, err: escapeErr("mock script", err)}
	}
	data, err := readConfined(req, abs)
	if err != nil {
		return callReply{exit: exitNotRun, err: fileErr("mock script", script, err)}
	}
	entries, err := parseScript(data)
	if err != nil {
		return callReply{exit: exitNotRun, err: source.Errorf(source.EParse, "mock script '%s': %v", script, err)}
	}
	key := filepath.ToSlash(filepath.Clean(script)) + "#" + req.callKey()
	cursorMu.Lock()
	defer cursorMu.Unlock()
	cursors := map[string]*mockCursor{}
	if err := loadCursors(req.RunRoot, mockCursors, &cursors); err != nil {
		return callReply{exit: exitNotRun, err: source.Errorf(source.EExec, "mock: %v", err)}
	}
	cur := cursors[key]
	if cur == nil {
		cur = &mockCursor{}
		cursors[key] = cur
	}
	pick, seen := cur.Calls[call]
	if !seen || call == "" {
		pick = -1
		for i, e := range entries {
			if !slices.Contains(cur.Used, i) && (e.re == nil || e.re.MatchString(prompt)) {
				pick = i
				break
			}
		}
		if pick < 0 {
			return echo
		}
		cur.Used = append(cur.Used, pick)
		if call != "" {
			if cur.Calls == nil {
				cur.Calls = map[string]int{}
			}
			cur.Calls[call] = pick
		}
		if err := saveCursors(req.RunRoot, mockCursors, cursors); err != nil {
			return callReply{exit: exitNotRun, err: source.Errorf(source.EExec, "mock: %v", err)}
		}
	}
	e := entries[pick]
	rep := callReply{
		text:   req.Mask.String(e.Reply),
		exit:   e.ExitCode,
		tokens: len(strings.Fields(prompt)) + len(strings.Fields(e.Reply)),
	}
	if e.Signal != "" {
		rep.signal = e.Signal
		if !strings.HasPrefix(rep.signal, "SIGNAL:") {
			rep.signal = "SIGNAL:" + rep.signal
		}
	}
	return rep
}

// cursorMu serializes the cursor files and recordings of the threads of
// a parallel step (one process drives a run).
var cursorMu sync.Mutex

// callKey names the calls of one step for the mock, --record and
// --replay: the step, and in a thread of a parallel step its iteration
// index or branch name ("Work[2]"), so that each thread consumes its own
// replies whatever the order the threads run in.
func (req *Request) callKey() string {
	if req.Thread != "" {
		return req.Step + "[" + req.Thread + "]"
	}
	return req.Step
}

// A mockCursor is what a script has answered one step: the entries used,
// in order, and for each numbered call (see callID) the entry that answered
// it, which answers it again when it is repeated after a crash.
type mockCursor struct {
	Used  []int          `json:"used"`
	Calls map[string]int `json:"calls,omitempty"`
}

// loadCursors reads a cursor file RUN_ROOT/name (mock-cursors.json: for
// each "script#step", the indexes of the entries consumed, in order;
// replay-cursors.json: per step, the number of recordings used) into
// cursors. Without a RUN_ROOT, or before the first save, it leaves cursors
// empty.
func loadCursors[T any](runRoot, name string, cursors *T) error {
	if runRoot == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(runRoot, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read cursors: %w", err)
	}
	if err := json.Unmarshal(b, cursors); err != nil {
		return fmt.Errorf("read cursors %s: %w", name, err)
	}
	return nil
}

// saveCursors writes a cursor file atomically (json.Marshal sorts the keys).
func saveCursors(runRoot, name string, cursors any) error {
	if runRoot == "" {
		return nil
	}
	b, err := json.MarshalIndent(cursors, "", "  ")
	if err != nil {
		return fmt.Errorf("write cursors: %w", err)
	}
	return confine.WriteFileAtomic(filepath.Join(runRoot, name), append(b, '\n'), 0o644)
}

// parseScript reads a mock script: a JSON array of entries when its first
// non-blank character is '[', else the YAML subset of parseScriptYAML. Each
// entry's match is compiled.
func parseScript(src string) ([]mockEntry, error) {
	var entries []mockEntry
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
// sequence of flat mappings whose keys are match, reply, exit_code and signal.
// Values are plain scalars (a " #" starts a comment), 'single-quoted' (a
// doubled quote is a quote), "double-quoted" (with the escapes \n, \t, \",
// \\ and the other escapes Go and YAML share), or
// block scalars introduced by |, |-, |+, >, >- or >+. Blank lines, comment
// lines, a "---" line and an empty "[]" are allowed; anchors, flow mappings,
// nested collections and tabs for indentation are not.
func parseScriptYAML(src string) ([]mockEntry, error) {
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	entries := []mockEntry{}
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
			entries = append(entries, mockEntry{})
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
func parseYAMLKey(lines []string, i, keyIndent int, text string, e *mockEntry) (int, error) {
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
		q, err := strconv.Unquote(val)
		if err != nil {
			return 0, fmt.Errorf("line %d: bad double-quoted string %s", i+1, val)
		}
		s = q
	case strings.HasPrefix(val, "'"):
		if len(val) < 2 || !strings.HasSuffix(val, "'") {
			return 0, fmt.Errorf("line %d: unterminated single-quoted string", i+1)
		}
		s = strings.ReplaceAll(val[1:len(val)-1], "''", "'")
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
	case "exit_code":
		n, err := strconv.Atoi(s)
		if err != nil {
			return 0, fmt.Errorf("line %d: exit_code '%s' is not an integer", i+1, s)
		}
		e.ExitCode = n
	default:
		return 0, fmt.Errorf("line %d: unknown key '%s'%s", i+1, key,
			source.DidYouMean(key, []string{"match", "reply", "exit_code", "signal"}))
	}
	return next, nil
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
