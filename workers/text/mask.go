package text

import (
	"bytes"
	"cmp"
	"io"
	"slices"
	"strings"
)

// maskText replaces every secret value in captured output.
const maskText = "***"

// A Masker replaces every occurrence of any of its secret values with "***".
// Where two secrets match at the same place, the longer one wins. A nil
// *Masker masks nothing.
type Masker struct {
	secrets [][]byte // non-empty, distinct, longest first
}

// NewMasker returns a Masker for the given secret values. Empty values are
// ignored. A value with a quote, a backslash, a control character or <, >
// or & is masked also in the forms JSON encoders write it in a string
// (Forms): a step or a CLI that prints it inside JSON leaves no copy a
// reader decodes.
func NewMasker(secrets []string) *Masker {
	m := &Masker{}
	add := func(s string) {
		if s != "" && !slices.ContainsFunc(m.secrets, func(b []byte) bool { return string(b) == s }) {
			m.secrets = append(m.secrets, []byte(s))
		}
	}
	for _, s := range secrets {
		for _, f := range Forms(s) {
			add(f)
		}
	}
	slices.SortStableFunc(m.secrets, func(a, b []byte) int { return cmp.Compare(len(b), len(a)) })
	return m
}

// Forms returns the forms a secret's value is found in: the value, then
// those of its JSON-escaped forms (JSON.stringify; encoding/json with and
// without HTML escaping) that differ from it; for a value that ends in
// line breaks (one read from a file), the same again for the value
// without them, which is how it is printed inside a line. None for "".
func Forms(s string) []string {
	if s == "" {
		return nil
	}
	var out []string
	for _, v := range []string{s, strings.TrimRight(s, "\r\n")} {
		if v == "" || slices.Contains(out, v) {
			continue
		}
		out = append(out, v)
		for _, html := range []bool{false, true} {
			e := AppendJSONString(nil, v, html)
			if f := string(e[1 : len(e)-1]); !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}

// Empty reports whether m masks nothing.
func (m *Masker) Empty() bool { return m == nil || len(m.secrets) == 0 }

// longest returns the length of the longest secret.
func (m *Masker) longest() int {
	if m.Empty() {
		return 0
	}
	return len(m.secrets[0])
}

// held returns the length of the longest tail of b that is a proper prefix of
// a secret: the bytes that may still turn out to be part of one.
func (m *Masker) held(b []byte) int {
	for n := min(len(b), m.longest()-1); n > 0; n-- {
		tail := b[len(b)-n:]
		for _, s := range m.secrets {
			if len(s) > n && bytes.HasPrefix(s, tail) {
				return n
			}
		}
	}
	return 0
}

// String returns s with every secret replaced.
func (m *Masker) String(s string) string {
	if m.Empty() {
		return s
	}
	out, _ := m.appendMasked(nil, []byte(s), len(s))
	return string(out)
}

// Bytes returns b with every secret replaced, in a new slice when anything
// was replaced.
func (m *Masker) Bytes(b []byte) []byte {
	if m.Empty() {
		return b
	}
	out, _ := m.appendMasked(nil, b, len(b))
	return out
}

// appendMasked appends src to dst with every match replaced that starts before
// limit, and returns how much of src it consumed: limit, or more when the last
// match reaches past limit. Matches are taken leftmost first and, at the same
// position, longest first. The caller guarantees that every match starting
// before limit lies wholly inside src.
func (m *Masker) appendMasked(dst, src []byte, limit int) ([]byte, int) {
	next := make([]int, len(m.secrets)) // next[j]: index of secret j at or after i, or -1
	for j, s := range m.secrets {
		next[j] = bytes.Index(src, s)
	}
	i := 0
	for {
		best := -1
		for j, p := range next {
			if p >= 0 && p < limit && (best < 0 || p < next[best]) {
				best = j
			}
		}
		if best < 0 {
			if i < limit {
				dst = append(dst, src[i:limit]...)
				i = limit
			}
			return dst, i
		}
		p := next[best]
		dst = append(dst, src[i:p]...)
		dst = append(dst, maskText...)
		i = p + len(m.secrets[best])
		for j, s := range m.secrets {
			if next[j] >= 0 && next[j] < i {
				if k := bytes.Index(src[i:], s); k >= 0 {
					next[j] = i + k
				} else {
					next[j] = -1
				}
			}
		}
	}
}

// Writer returns a writer that masks everything written to it and passes it on
// to w. A secret split across two Write calls is still masked: the writer holds
// back up to len(longest secret)-1 bytes until more data or Close arrives.
// Close flushes what is held back; it does not close w.
func (m *Masker) Writer(w io.Writer) io.WriteCloser {
	if m.Empty() {
		return nopCloser{w}
	}
	return &maskWriter{m: m, w: w}
}

// nopCloser passes writes through when there is nothing to mask.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// ReadFrom lets io.Copy hand the stream to w's own ReadFrom (a capture's
// large reads).
func (n nopCloser) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := n.Writer.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{n.Writer}, r)
}

// A maskWriter is the streaming form of a Masker. pending holds the tail that
// could still be the start of a secret.
type maskWriter struct {
	m       *Masker
	w       io.Writer
	pending []byte
	out     []byte
}

func (mw *maskWriter) Write(p []byte) (int, error) {
	mw.pending = append(mw.pending, p...)
	// Only a tail that is the start of a secret is held back: a match
	// starting before limit ends inside pending, so it can be decided now.
	// Holding back no more than that keeps -v output live and in order.
	limit := len(mw.pending) - mw.m.held(mw.pending)
	if limit <= 0 {
		return len(p), nil
	}
	if err := mw.flush(limit); err != nil {
		return 0, err
	}
	return len(p), nil
}

// flush masks and writes pending up to limit and keeps the rest.
func (mw *maskWriter) flush(limit int) error {
	var used int
	mw.out, used = mw.m.appendMasked(mw.out[:0], mw.pending, limit)
	mw.pending = append(mw.pending[:0], mw.pending[used:]...)
	if len(mw.out) == 0 {
		return nil
	}
	_, err := mw.w.Write(mw.out)
	return err
}

func (mw *maskWriter) Close() error {
	return mw.flush(len(mw.pending))
}

// With returns a Masker that masks m's values and more (empty ones are
// ignored); m itself is unchanged, and is returned when there is nothing to
// add.
func (m *Masker) With(more ...string) *Masker {
	var all []string
	if m != nil {
		for _, s := range m.secrets {
			all = append(all, string(s))
		}
	}
	n := len(all)
	for _, s := range more {
		if s != "" {
			all = append(all, s)
		}
	}
	if len(all) == n {
		return m
	}
	return NewMasker(all)
}
