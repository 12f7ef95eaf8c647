package provider

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"unicode"

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
	// empty. The bytes are the reader's only during the call.
	line(l []byte)
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
	eachLine(io.NewSectionReader(src, 0, src.Size()), func(raw []byte, off int64) {
		l := bytes.TrimSpace(raw)
		if len(l) == 0 {
			return
		}
		if s.nonBlank == 0 {
			s.first = append([]byte(nil), l...)
			s.start = off + int64(len(raw)-len(bytes.TrimLeftFunc(raw, unicode.IsSpace)))
		}
		s.nonBlank++
		s.end = off + int64(len(bytes.TrimRightFunc(raw, unicode.IsSpace)))
		s.keepLast(l)
		if r != nil {
			r.line(l)
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

// eachLine calls f with each line of r (its newline included, the last
// one perhaps without) and its offset. A line is in memory whole only
// while f reads it.
func eachLine(r io.Reader, f func(line []byte, off int64)) {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		long []byte
		off  int64
	)
	for {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, b...)
			continue
		}
		line := b
		if len(long) > 0 {
			long = append(long, b...)
			line = long
		}
		if len(line) > 0 {
			f(line, off)
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
