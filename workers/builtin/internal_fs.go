package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"smith/lang"
	"smith/source"
	"smith/workers/reply"
	"smith/workers/step"
	"smith/workers/steprun"
)

// The file workers: Internal:FileSystemWriter, Internal:DocumentationWriter
// and Internal:PreambleValidator.
//
// A write segment's content is JSON: {"filePath": "...", "fileContent": "..."}
// or a list of such objects. Content that is not JSON as a whole is looked
// at through the cleaner (CleanReply, then ExtractJSON), so a fenced or chatty
// reply still works. Every path of every segment is parsed and confined
// (CONTRACT.md section 2, relative to the worktree path, which a path may
// not leave either) before anything is written: one bad segment or path
// fails the step and no file is written; a path violation is E_PATH_ESCAPE.
// Then the files are written in order, each atomically; the first failed
// write stops the loop (later files are not written). A written file always
// ends with a newline; LinesWritten counts the newlines written.

// filePerm is the mode of files the writers create.
const filePerm = 0o644

// maxPreambleFile bounds how much of a file PreambleValidator reads.
const maxPreambleFile = 1 << 20

// A fileWrite is one file to write.
type fileWrite struct {
	rel     string // as the model wrote it
	abs     string // confined
	content string // cleaned
}

// A fileEntry is one element of a write segment's content.
type fileEntry struct {
	FilePath    *string `json:"filePath"`
	FileContent *string `json:"fileContent"`
}

// runFileSystemWriter is Internal:FileSystemWriter: it writes every
// CODE_OUTPUT and DOCUMENTATION_OUTPUT segment, with markdown fences
// stripped from each file's content (ExtractCode; a markdown file only loses
// a fence that wraps all of it).
func runFileSystemWriter(_ context.Context, _ Env, req *step.Request) step.Result {
	if res, ok := replyPayload(req, step.SegCodeOutput); !ok {
		return res
	}
	return writeSegments(req, []string{step.SegCodeOutput, step.SegDocOutput}, reply.CleanFile)
}

// runDocumentationWriter is Internal:DocumentationWriter: like
// FileSystemWriter for DOCUMENTATION_OUTPUT segments, with the chatty text
// before the document removed (CleanReply, then CleanPreamble).
func runDocumentationWriter(_ context.Context, _ Env, req *step.Request) step.Result {
	if res, ok := replyPayload(req, step.SegDocOutput); !ok {
		return res
	}
	return writeSegments(req, []string{step.SegDocOutput}, func(_, s string) string {
		return reply.CleanPreamble(reply.Clean(s))
	})
}

// writeSegments writes the files of every segment whose type is in types.
func writeSegments(req *step.Request, types []string, clean func(rel, content string) string) step.Result {
	l := &segmentList{req: req}
	wt, err := worktreePath(req)
	if err != nil {
		return l.fail(lang.SigFailure, step.SegError, err)
	}
	var writes []fileWrite
	for i, seg := range req.Payload {
		if !slices.Contains(types, seg.Type) {
			continue
		}
		entries, err := parseFileEntries(seg.Content)
		if err != nil {
			return l.fail(lang.SigFailure, step.SegError, fmt.Errorf("segment %d (%s): %w", i+1, seg.Type, err))
		}
		for _, e := range entries {
			abs, err := req.Dirs.ResolveIn(wt, *e.FilePath)
			if err != nil {
				if steprun.IsEscape(err) {
					return l.fail(lang.SigFailure, step.SegError, &source.Error{Code: source.EPathEscape, Msg: fmt.Sprintf("segment %d (%s): %v; no file was written", i+1, seg.Type, err)})
				}
				return l.fail(lang.SigFailure, step.SegError, &source.Error{Code: source.EExec, Msg: fmt.Sprintf("segment %d (%s): %v", i+1, seg.Type, err)})
			}
			if rel, rerr := filepath.Rel(wt, abs); rerr != nil || !filepath.IsLocal(rel) {
				return l.fail(lang.SigFailure, step.SegError, &source.Error{Code: source.EPathEscape, Msg: fmt.Sprintf("segment %d (%s): path '%s' leaves the worktree; no file was written", i+1, seg.Type, *e.FilePath)})
			}
			writes = append(writes, fileWrite{rel: *e.FilePath, abs: abs, content: clean(*e.FilePath, *e.FileContent)})
		}
	}
	lines := 0
	for _, w := range writes {
		data := w.content
		if data != "" && !strings.HasSuffix(data, "\n") {
			data += "\n"
		}
		if err := req.Dirs.WriteFile(w.abs, []byte(data), filePerm); err != nil {
			se := &source.Error{Code: source.EExec, Msg: fmt.Sprintf("write '%s': %s", w.rel, ioErrText(err))}
			if steprun.IsEscape(err) { // a link appeared after the check
				se = &source.Error{Code: source.EPathEscape, Msg: fmt.Sprintf("write '%s': %v", w.rel, err)}
			}
			res := l.fail(lang.SigFailure, step.SegError, se)
			res.LinesWritten = lines
			return res
		}
		lines += strings.Count(data, "\n")
	}
	res := l.result(lang.SigSuccess, 0, nil)
	res.LinesWritten = lines
	res.Output = fmt.Sprintf("wrote %d file(s), %d line(s)", len(writes), lines)
	return res
}

// ioErrText describes a failed write: the reason, then the operation and
// the path (relative to BASE) that failed.
func ioErrText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Sprintf("%v (%s %s)", pe.Err, pe.Op, pe.Path)
	}
	return err.Error()
}

// parseFileEntries reads a write segment's content: one {filePath,
// fileContent} object or a list of them.
func parseFileEntries(content string) ([]fileEntry, error) {
	text, ok := reply.JSONText(content)
	if !ok {
		return nil, errors.New("content is not JSON: want {\"filePath\": ..., \"fileContent\": ...} or a list of them")
	}
	var entries []fileEntry
	switch text[0] {
	case '[':
		if err := json.Unmarshal([]byte(text), &entries); err != nil {
			return nil, fmt.Errorf("content is not a list of {\"filePath\", \"fileContent\"} objects: %v", err)
		}
	case '{':
		var e fileEntry
		if err := json.Unmarshal([]byte(text), &e); err != nil {
			return nil, fmt.Errorf("content is not a {\"filePath\", \"fileContent\"} object: %v", err)
		}
		entries = []fileEntry{e}
	default:
		return nil, errors.New("content is not a {\"filePath\", \"fileContent\"} object or a list of them")
	}
	for i, e := range entries {
		switch {
		case e.FilePath == nil || *e.FilePath == "":
			return nil, fmt.Errorf("file %d has no 'filePath'", i+1)
		case strings.HasSuffix(*e.FilePath, "/") || path.Base(*e.FilePath) == "." || path.Base(*e.FilePath) == "..":
			return nil, fmt.Errorf("file %d ('%s') names a folder, not a file", i+1, *e.FilePath)
		case strings.IndexByte(*e.FilePath, 0) >= 0:
			return nil, source.Errorf(source.EExec, "file %d has a NUL byte in its 'filePath', which no file name can hold", i+1)
		case e.FileContent == nil:
			return nil, fmt.Errorf("file %d ('%s') has no 'fileContent'", i+1, *e.FilePath)
		}
		for part := range strings.SplitSeq(*e.FilePath, "/") {
			if len(part) > nameMax {
				return nil, source.Errorf(source.EExec, "file %d ('%.40s...'): a name in its path is %d bytes; a file system takes at most %d", i+1, *e.FilePath, len(part), nameMax)
			}
		}
	}
	return entries, nil
}

// nameMax is the longest name of one file or folder the file systems
// Smith runs on take (NAME_MAX): a longer one is refused with the other
// entries' checks, before any file of the segments is written.
const nameMax = 255

// runPreambleValidator is Internal:PreambleValidator. The payload's last
// segment names a file relative to the worktree path: its content is the
// path, a JSON string, or a JSON object with "filePath". The file's preamble
// (see extractPreamble) must have a non-empty id and description. Every
// failure, including a missing file or a path violation (whose Err is
// E_PATH_ESCAPE), is SIGNAL:VALIDATION_FAIL with a VALIDATION_ERROR segment,
// so the block's validation loop can ask for a fix.
func runPreambleValidator(_ context.Context, _ Env, req *step.Request) step.Result {
	// In YAML the previous step's reply names the file (CONTRACT 12.5).
	if res, ok := replyPayload(req, lang.DefaultOutputType); !ok {
		return res
	}
	l := &segmentList{req: req}
	invalid := func(format string, args ...any) step.Result {
		l.add(step.SegValidationError, reply.ValidationFailPrefix+fmt.Sprintf(format, args...))
		return l.result(lang.SigValidationFail, 0, nil)
	}
	wt, err := worktreePath(req)
	if err != nil {
		res := invalid("%v", err)
		res.Err = err
		return res
	}
	if len(req.Payload) == 0 {
		return invalid("the payload is empty; its last segment must name the file to check")
	}
	rel, ok := namedFile(req.Payload[len(req.Payload)-1].Content)
	if !ok {
		return invalid("the last segment does not name a file (a path, or JSON with \"filePath\")")
	}
	abs, err := req.Dirs.ResolveIn(wt, rel)
	if err != nil {
		if steprun.IsEscape(err) {
			res := invalid("%v", err)
			res.Err = &source.Error{Code: source.EPathEscape, Msg: err.Error()}
			return res
		}
		return invalid("file '%s': %v", rel, err)
	}
	f, err := req.Dirs.Open(abs)
	if err != nil {
		return invalid("file '%s' cannot be read: %s", rel, steprun.OSErrText(err))
	}
	data, err := io.ReadAll(io.LimitReader(f, maxPreambleFile))
	f.Close()
	if err != nil {
		return invalid("file '%s' cannot be read: %s", rel, steprun.OSErrText(err))
	}
	fields, found := extractPreamble(string(data))
	if !found {
		return invalid("file '%s' has no preamble (front matter between '---' lines, or a leading comment block)", rel)
	}
	p, err := reply.ValidatePreamble(fields)
	if err != nil {
		return l.fail(lang.SigValidationFail, step.SegValidationError, &source.Error{Code: source.EInternal, Msg: fmt.Sprintf("internal error: preamble schema: %v", err)})
	}
	if p != "" {
		return invalid("preamble of '%s': %s", rel, p)
	}
	res := l.result(lang.SigSuccess, 0, nil)
	res.Output = fmt.Sprintf("preamble of '%s' is valid", rel)
	return res
}

// namedFile reads the file name of a segment's content.
func namedFile(content string) (string, bool) {
	text := strings.TrimSpace(content)
	var v any
	if json.Unmarshal([]byte(text), &v) == nil {
		switch x := v.(type) {
		case string:
			text = x
		case map[string]any:
			text, _ = x["filePath"].(string)
		default:
			return "", false
		}
	} else if j, ok := reply.ExtractJSON(reply.Clean(content)); ok {
		var obj struct {
			FilePath string `json:"filePath"`
		}
		if json.Unmarshal([]byte(j), &obj) == nil && obj.FilePath != "" {
			text = obj.FilePath
		}
	}
	text = strings.TrimSpace(strings.Trim(strings.TrimSpace(text), "`"))
	if text == "" || strings.ContainsAny(text, "\n\r") {
		return "", false
	}
	return text, true
}

// preambleField is one "key: value" (YAML-ish) or "@key value" (JSDoc) line.
var preambleField = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:@?([A-Za-z_][A-Za-z0-9_.-]*)\s*:\s*(.*)|@([A-Za-z_][A-Za-z0-9_-]*)(?:\s+(.*))?)$`)
})

// extractPreamble finds the preamble of a file and reads its fields. Leading
// blank lines, a byte order mark and a "#!" line are skipped; the preamble
// is then the first of:
//   - front matter: a "---" line, up to the next "---" or "..." line;
//   - a block comment: "/*" or "/**" up to "*/" (a leading "*" on each line
//     is dropped), or a Python docstring opened and closed by three quotes;
//   - a run of line comments: lines starting with "//" or "#".
//
// Its fields are "key: value" lines (YAML-ish: quotes around the value are
// dropped; "|" and ">" start a value made of the following lines) and
// "@key value" lines (JSDoc). Keys are lowercased; the first occurrence of a
// key wins. A line that is neither continues the previous field's value,
// joined with a space; a blank line ends it. found is false when the file has
// no preamble at all.
func extractPreamble(s string) (fields map[string]any, found bool) {
	lines := reply.SplitLines(strings.TrimPrefix(s, "\ufeff"))
	i := 0
	skipBlank := func() {
		for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
			i++
		}
	}
	skipBlank()
	if i < len(lines) && strings.HasPrefix(lines[i], "#!") {
		i++
		skipBlank()
	}
	if i >= len(lines) {
		return nil, false
	}
	body, ok := preambleBody(lines[i:])
	if !ok {
		return nil, false
	}
	return preambleFieldsOf(body), true
}

// preambleBody returns the text lines of the preamble that starts lines.
func preambleBody(lines []string) ([]string, bool) {
	first := strings.TrimSpace(lines[0])
	switch {
	case first == "---":
		for j := 1; j < len(lines); j++ {
			if t := strings.TrimRight(lines[j], " \t"); t == "---" || t == "..." {
				return lines[1:j], true
			}
		}
		return nil, false
	case strings.HasPrefix(first, "/*"):
		return delimitedComment(lines, "/*", "*/", true)
	case strings.HasPrefix(first, `"""`):
		return delimitedComment(lines, `"""`, `"""`, false)
	case strings.HasPrefix(first, "'''"):
		return delimitedComment(lines, "'''", "'''", false)
	case strings.HasPrefix(first, "//"), strings.HasPrefix(first, "#"):
		marker := first[:1]
		var body []string
		for _, l := range lines {
			t := strings.TrimSpace(l)
			if !strings.HasPrefix(t, marker) {
				break
			}
			body = append(body, strings.TrimLeft(t, marker))
		}
		return body, true
	}
	return nil, false
}

// delimitedComment returns the lines of a comment from open to close.
// stars drops a leading "*" on each line (JSDoc style).
func delimitedComment(lines []string, open, close string, stars bool) ([]string, bool) {
	var body []string
	rest := strings.TrimPrefix(strings.TrimSpace(lines[0]), open)
	if stars {
		rest = strings.TrimLeft(rest, "*")
	}
	for j := 0; j < len(lines); j++ {
		if j > 0 {
			rest = lines[j]
		}
		before, _, closed := strings.Cut(rest, close)
		t := strings.TrimSpace(before)
		if stars && j > 0 {
			t = strings.TrimSpace(strings.TrimPrefix(t, "*"))
		}
		body = append(body, t)
		if closed {
			return body, true
		}
	}
	return nil, false
}

// preambleFieldsOf reads the fields of a preamble's lines.
func preambleFieldsOf(body []string) map[string]any {
	fields := map[string]any{}
	current := "" // the key a continuation line extends; "" after a blank line
	for _, raw := range body {
		line := strings.TrimSpace(raw)
		if line == "" {
			current = ""
			continue
		}
		if m := preambleField().FindStringSubmatch(line); m != nil {
			key, value := m[1], m[2]
			if key == "" {
				key, value = m[3], m[4]
			}
			key = strings.ToLower(key)
			value = strings.TrimSpace(value)
			switch value {
			case "|", "|-", ">", ">-":
				value = ""
			}
			if _, seen := fields[key]; seen {
				current = ""
				continue
			}
			fields[key] = unquote(value)
			current = key
			continue
		}
		if current != "" {
			v, _ := fields[current].(string)
			fields[current] = strings.TrimSpace(v + " " + line)
		}
	}
	return fields
}

// unquote drops one pair of matching quotes around s.
func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

// replyPayload makes the reply of req.ReplyFrom the payload of a YAML
// writer, as one segment of type typ. It reports false, with the failed
// result, when the reply cannot be read.
func replyPayload(req *step.Request, typ string) (step.Result, bool) {
	if req.ReplyFrom == "" || req.RunRoot == "" {
		return step.Result{}, true
	}
	from := req.ReplyFrom
	if req.Thread != "" {
		from += "[" + req.Thread + "]" // the provider step of the same thread
	}
	b, err := os.ReadFile(steprun.ReplyPath(req.RunRoot, from))
	if err != nil {
		l := &segmentList{req: req}
		if errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("step '%s' left no reply to write (it did not succeed)", req.ReplyFrom)
		}
		return l.fail(lang.SigFailure, step.SegError, err), false
	}
	req.Payload = append(req.Payload, step.Segment{Type: typ, Content: string(b)})
	return step.Result{}, true
}
