package provider

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// A CLI's stdout is read as a stream (ReadReplyFrom): an agent that runs a
// chatty command or reads a big file makes its CLI print hundreds of MB of
// events around a short reply, so the stream is read one line at a time
// and only what the reply needs is kept (the CLI's stdoutReader): the
// memory a reply costs grows with the reply and with the longest line, not
// with the stream. A stdout that is one JSON document (gemini's or
// claude's --output-format json, perhaps spread over lines) is its reply:
// it is decoded whole.

// A stdoutReader reads the lines of one CLI call's stdout and keeps what
// the reply needs (the final message, tokens, cost, the session id, the
// error); a preset's newReader makes one per call.
type stdoutReader interface {
	// line reads one line, without its surrounding white space, never
	// empty, at off in the stdout (a line longer than maxLine is its
	// skeleton, its long strings placeholders, spanOf; off is then -1). The bytes are
	// the reader's only during the call.
	line(l []byte, off int64)
	// reply is the model's text and tokens, or the error the CLI
	// reported; doc is the whole stdout when it is one JSON value
	// (gjson.Result{} otherwise), stderr the CLI's stderr.
	reply(doc func() gjson.Result, stderr string) (CLIReply, *cliError)
	// session is the id of the session the stdout names, "" for none.
	session(doc func() gjson.Result) string
	// denied is what the CLI refused to do for lack of permission (in its
	// stdout or its stderr), "" for nothing.
	denied(doc func() gjson.Result, stderr string) string
}

// A stdoutScan is what every stdout's reading keeps besides the
// preset's: enough to tell whether the whole stdout is one JSON value,
// and its last meaningful line.
type stdoutScan struct {
	src      *io.SectionReader
	nonBlank int    // lines with something besides white space
	first    []byte // the first of them, trimmed
	// start and end are the offsets of the first and past the last byte
	// that is not white space: the trimmed stdout.
	start, end int64
	// last is the last line lastLine would pick (no stack frame, colour
	// or lone "}").
	last   []byte
	doc    gjson.Result
	docSet bool
}

// scanStdout reads src one line at a time, giving each to r (when not
// nil).
func scanStdout(src *io.SectionReader, r stdoutReader) *stdoutScan {
	s := &stdoutScan{src: src}
	// The mark of this stdout's placeholders, which no text of the model's
	// can know, so that no reply stands for another part of the stdout.
	mark := rand.Text()
	if m, ok := r.(interface{ setMark(string) }); ok {
		m.setMark(mark)
	}
	eachLine(io.NewSectionReader(src, 0, src.Size()), mark, func(raw []byte, off, size int64) {
		l := bytes.TrimSpace(raw)
		if len(l) == 0 {
			return
		}
		lead := int64(len(raw) - len(bytes.TrimLeftFunc(raw, unicode.IsSpace)))
		if s.nonBlank == 0 {
			s.first = append([]byte(nil), l...)
			s.start = off + lead
		}
		s.nonBlank++
		s.end = off + size - int64(len(raw)-len(bytes.TrimRightFunc(raw, unicode.IsSpace)))
		s.keepLast(l)
		if r != nil {
			at := off + lead
			if size != int64(len(raw)) {
				at = -1 // a skeleton: its bytes are not the stdout's
			}
			r.line(l, at)
		}
	})
	return s
}

// keepLast keeps l (a trimmed line) when lastLine would pick it.
func (s *stdoutScan) keepLast(l []byte) {
	if bytes.IndexByte(l, 0x1b) >= 0 {
		l = bytes.TrimSpace(ansiPattern().ReplaceAll(l, nil))
	}
	if len(l) > 0 && !bytes.HasPrefix(l, []byte("at ")) && !bytes.Equal(l, []byte("}")) {
		s.last = append(s.last[:0], l...)
		if cap(s.last) > 1<<20 && len(s.last) < 64<<10 {
			s.last = bytes.Clone(s.last) // keep no buffer of a long line
		}
	}
}

// lastLine is lastLine(stdout) (the reason of a failure stderr says
// nothing about).
func (s *stdoutScan) lastLine() string { return string(s.last) }

// wholeDoc returns the whole stdout, trimmed, when it is one JSON value;
// gjson.Result{} otherwise. One line is that line; several are one value
// only when the first alone is not (two values are not one): the trimmed
// stdout is then decoded once, which stops at the first byte that does
// not fit, so a stream of events costs nothing here.
func (s *stdoutScan) wholeDoc() gjson.Result {
	if s.docSet {
		return s.doc
	}
	s.docSet = true
	switch {
	case s.nonBlank == 0:
	case s.nonBlank == 1:
		if gjson.ValidBytes(s.first) {
			s.doc = gjson.ParseBytes(s.first)
		}
	case gjson.ValidBytes(s.first):
	default:
		dec := json.NewDecoder(io.NewSectionReader(s.src, s.start, s.end-s.start))
		var raw json.RawMessage
		if dec.Decode(&raw) == nil && dec.InputOffset() == s.end-s.start && gjson.ValidBytes(raw) {
			s.doc = gjson.ParseBytes(raw)
		}
	}
	return s.doc
}

// maxHeld bounds the buffer a long line leaves behind for the next ones.
const maxHeld = 1 << 20

// maxLine is the longest line held whole: a longer one (a reply of many MB
// in one JSON event) is read as its skeleton (skeleton).
const maxLine = 1 << 20

// eachLine calls f with each line of r (its newline included, the last
// one perhaps without), its offset and its size. A line is in memory
// whole only while f reads it, and only up to maxLine bytes: f gets a
// longer one as its skeleton, size then being the line's own.
func eachLine(r io.Reader, mark string, f func(line []byte, off, size int64)) {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		long []byte
		off  int64
		sk   *skeleton
	)
	for {
		b, err := br.ReadSlice('\n')
		if sk != nil {
			sk.write(b)
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if sk.size > 0 {
				f(sk.out, off, sk.size)
				off += sk.size
			}
			sk = nil
			if err != nil {
				return
			}
			continue
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, b...)
			if len(long) > maxLine {
				sk = &skeleton{lineOff: off, mark: mark}
				sk.write(long)
				long = nil
			}
			continue
		}
		line := b
		if len(long) > 0 {
			long = append(long, b...)
			line = long
		}
		if len(line) > 0 {
			f(line, off, int64(len(line)))
			off += int64(len(line))
		}
		long = long[:0]
		if cap(long) > maxHeld {
			long = nil
		}
		if err != nil {
			return // io.EOF, or a file that cannot be read further: what was read is the stdout
		}
	}
}

// maxString is the longest JSON string literal a skeleton keeps.
const maxString = 64 << 10

// spanMark starts the text of a placeholder string (spanOf), followed by
// the stdout's mark.
const spanMark = "\x00span:"

// A skeleton is a long line with every JSON string literal longer than
// maxString replaced by a placeholder string that says where the literal
// is in the stdout ("\u0000span:MARK:OFF:LEN", spanOf): a JSON event holding
// a reply of many MB parses as the same event, small, and the reply is
// decoded from the stdout later (DecodeSpans). It is no more than maxLine
// bytes: what passes that is dropped (the line is then no JSON).
type skeleton struct {
	out     []byte
	mark    string
	lineOff int64 // the line's offset in the stdout
	size    int64 // the bytes of the line seen
	str     []byte
	in      bool // inside a string literal
	esc     bool // after a backslash in it
	strOff  int64
	strLen  int64
}

// write feeds the next bytes of the line.
func (k *skeleton) write(b []byte) {
	for _, c := range b {
		pos := k.lineOff + k.size
		k.size++
		if !k.in {
			if c == '"' {
				k.in, k.esc, k.strOff, k.strLen, k.str = true, false, pos, 1, append(k.str[:0], c)
				continue
			}
			k.emit(c)
			continue
		}
		k.strLen++
		if k.strLen <= maxString {
			k.str = append(k.str, c)
		}
		switch {
		case k.esc:
			k.esc = false
		case c == '\\':
			k.esc = true
		case c == '"':
			k.in = false
			if k.strLen <= maxString {
				for _, s := range k.str {
					k.emit(s)
				}
			} else {
				for _, s := range []byte(fmt.Sprintf(`"\u0000span:%s:%d:%d"`, k.mark, k.strOff, k.strLen)) {
					k.emit(s)
				}
			}
		}
	}
}

// emit appends c to the skeleton, within maxLine.
func (k *skeleton) emit(c byte) {
	if len(k.out) < maxLine {
		k.out = append(k.out, c)
	}
}

// A Span is a JSON string literal, its quotes included, of Len bytes at
// Off in a CLI's stdout: a piece of a reply too long to hold in memory,
// decoded from the stdout by DecodeSpans.
type Span struct{ Off, Len int64 }

// spanMarks lets a reader tell the placeholders of its stdout's
// skeletons (scanStdout gives it their mark).
type spanMarks struct{ mark string }

func (m *spanMarks) setMark(mark string) { m.mark = mark }

// spanOf returns the span v stands for when it is a placeholder of a long
// string in a skeleton of this stdout.
func (m *spanMarks) spanOf(v gjson.Result) (Span, bool) {
	rest, ok := strings.CutPrefix(v.Str, spanMark+m.mark+":")
	if v.Type != gjson.String || m.mark == "" || !ok {
		return Span{}, false
	}
	var sp Span
	if _, err := fmt.Sscanf(rest, "%d:%d", &sp.Off, &sp.Len); err != nil {
		return Span{}, false
	}
	return sp, true
}

// setText makes v out's reply: its text, or its span when the line that
// held it was too long to keep (v is then a placeholder).
func (m *spanMarks) setText(out *CLIReply, v gjson.Result) {
	if sp, ok := m.spanOf(v); ok {
		out.Text, out.Spans = "", []Span{sp}
		return
	}
	out.Text, out.Spans = v.String(), nil
}

// textOf is the text of v, a string in a line at off (-1: a skeleton),
// and its span, the literal's place in the stdout: for a long string's
// placeholder the span alone. The bool says whether the span is known (not
// for a short string of a skeleton).
func (m *spanMarks) textOf(v gjson.Result, off int64) (string, Span, bool) {
	if sp, ok := m.spanOf(v); ok {
		return "", sp, true
	}
	sp := Span{Off: off + int64(v.Index), Len: int64(len(v.Raw))}
	return v.String(), sp, off >= 0 && v.Index > 0 && v.Type == gjson.String
}

// DecodeSpans writes the text of the string literals spans of src to w,
// decoded, reading src a piece at a time: a reply of any size costs a
// few hundred KB.
func DecodeSpans(src io.ReaderAt, spans []Span, w io.Writer) error {
	const piece = 256 << 10
	buf := make([]byte, piece+16)
	for _, sp := range spans {
		if sp.Len < 2 {
			return fmt.Errorf("no string literal at %d", sp.Off)
		}
		off, end := sp.Off+1, sp.Off+sp.Len-1 // inside the quotes
		carry := 0
		for off < end || carry > 0 {
			n := int(min(int64(piece), end-off))
			m, err := src.ReadAt(buf[carry:carry+n], off)
			if m < n {
				if err == nil {
					err = io.ErrUnexpectedEOF
				}
				return fmt.Errorf("read the reply at %d: %w", off, err)
			}
			off += int64(n)
			all := buf[:carry+n]
			cut := len(all)
			if off < end {
				cut = safeCut(all)
			}
			var text string
			q := make([]byte, 0, cut+2)
			q = append(append(append(q, '"'), all[:cut]...), '"')
			if err := json.Unmarshal(q, &text); err != nil {
				return fmt.Errorf("decode the reply at %d: %w", off, err)
			}
			if _, err := io.WriteString(w, text); err != nil {
				return err
			}
			carry = copy(buf, all[cut:])
		}
	}
	return nil
}

// safeCut is where b, a piece of a JSON string literal's inside, may be
// cut: not inside an escape (nor between the halves of a surrogate pair)
// or a UTF-8 sequence. It backs off at most 12 bytes.
func safeCut(b []byte) int {
	cut := len(b)
	// An escape: a backslash among the last 11 bytes that starts one
	// (preceded by an even run of backslashes) ends the piece before it.
	for i := max(0, cut-11); i < cut; i++ {
		if b[i] != '\\' {
			continue
		}
		run := 0
		for j := i - 1; j >= 0 && b[j] == '\\'; j-- {
			run++
		}
		if run%2 == 1 {
			continue // an escaped backslash's second half
		}
		need := 2
		if i+1 < cut && b[i+1] == 'u' {
			need = 6
			if i+6 <= cut && isHighSurrogate(b[i+2:i+6]) {
				need = 12
			}
		}
		if i+need > cut {
			return i
		}
		i += need - 1
	}
	// A UTF-8 sequence cut short ends the piece before its first byte.
	i := cut - 1
	for i > 0 && cut-i < utf8.UTFMax && !utf8.RuneStart(b[i]) {
		i--
	}
	if i >= 0 && !utf8.FullRune(b[i:cut]) {
		return i
	}
	return cut
}

// isHighSurrogate tells whether h (4 hex digits) is a UTF-16 high
// surrogate, D800 to DBFF.
func isHighSurrogate(h []byte) bool {
	v, err := strconv.ParseUint(string(h), 16, 16)
	return err == nil && v >= 0xD800 && v <= 0xDBFF
}
