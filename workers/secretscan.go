package workers

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"smith/source"
	"smith/workers/text"
)

// No secret is committed (CONTRACT 12.4): before a step's changes are
// committed, the staged diff (the added lines, a new file's content
// included) is scanned for the value of every secret; a hit fails the step
// with E_SECRET_IN_CHANGE naming the file and line, never the value, and
// the index is reset so that nothing is committed.
//
// A secret of several lines (a private key) may also be made whole by a
// change whose added lines hold only some of its lines, the others being
// unchanged lines of the file (a step adding a key's body under a BEGIN
// line that was already there). So, when a secret has several lines, a
// file whose added lines hold one of its lines is read whole (its staged
// blob, git cat-file blob, which runs nothing) and a value found there
// that covers one of the file's added lines is a hit too. A run without
// such a secret scans the diff alone, as before.

// A secretValue is a secret's name and value.
type secretValue struct{ name, value string }

// secretValues returns the values of the named secrets that lookup has,
// longest first (a secret that contains another is named whole), each
// value once.
func secretValues(names []string, lookup func(string) (string, bool)) []secretValue {
	var out []secretValue
	if lookup == nil {
		return nil
	}
	for _, n := range names {
		v, ok := lookup(n)
		if !ok {
			continue
		}
		// Its JSON-escaped forms too: an agent writing it into a JSON file
		// commits it all the same.
		for _, f := range text.Forms(v) {
			if !slices.ContainsFunc(out, func(s secretValue) bool { return s.value == f }) {
				out = append(out, secretValue{n, f})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b secretValue) int { return len(b.value) - len(a.value) })
	return out
}

// A secretHit is where a secret's value was found in a change.
type secretHit struct {
	secret, file string
	line         int
}

// secretScanner reads a unified diff (git diff -U0 --text with a/ and b/
// prefixes) as it streams and records the first added line that holds a
// secret's value. Lines are read by the hunks' counts, so an added line
// that looks like a header ("+++ x") is still content.
type secretScanner struct {
	secrets  []secretValue
	longest  int
	line     []byte // the current line, or the tail of a very long one
	file     string // the file of the current hunk ("" for a deleted file)
	newLine  int    // the number of the next added line in file
	old, new int    // the lines left in the current hunk on each side
	hit      *secretHit
	// A secret of several lines (a private key) spans added lines: when
	// one has a newline, prev holds the tail of the added lines just
	// before the current one, each with its newline, at most the longest
	// secret's length less one.
	multi bool
	prev  []byte
	// With a secret of several lines, every line of those secrets
	// (secretLines), the new blob of the current file (the diff's index
	// line) and the current file's added line ranges; a file whose added
	// lines hold one of those lines is put in whole, to be read whole.
	lines   [][]byte
	blob    string
	gitlink bool // the current file is a nested repository's commit
	cur     wholeFile
	whole   []wholeFile
	// accept, when set (a whole file's scan), says whether a value found
	// on lines first to last covers a line the change added.
	accept func(first, last int) bool
}

// A wholeFile is a changed file to be read whole for a secret of several
// lines: its path, its staged blob and the line ranges (first, count) its
// change added.
type wholeFile struct {
	file, blob string
	added      [][2]int
	holds      bool // an added line holds one of a secret's lines
}

// maxScanLine bounds what the scanner keeps of one line: past it, the line
// is scanned and only the tail that may begin a secret is kept.
const maxScanLine = 1 << 20

func newSecretScanner(secrets []secretValue) *secretScanner {
	s := &secretScanner{secrets: secrets}
	for _, v := range secrets {
		s.longest = max(s.longest, len(v.value))
		s.multi = s.multi || strings.Contains(v.value, "\n")
	}
	if s.multi {
		s.lines = secretLines(secrets)
	}
	return s
}

// secretLines returns the lines of the secrets of several lines, each
// once (an empty line inside a secret included: any added line holds it;
// not the nothing after a last newline).
func secretLines(secrets []secretValue) [][]byte {
	var out [][]byte
	for _, v := range secrets {
		if !strings.Contains(v.value, "\n") {
			continue
		}
		for l := range strings.SplitSeq(strings.TrimSuffix(v.value, "\n"), "\n") {
			if !slices.ContainsFunc(out, func(b []byte) bool { return string(b) == l }) {
				out = append(out, []byte(l))
			}
		}
	}
	return out
}

// Write implements io.Writer.
func (s *secretScanner) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.line = append(s.line, p...)
			if len(s.line) > maxScanLine && s.new > 0 && bytes.HasPrefix(s.line, []byte("+")) {
				s.check(s.line)
				s.holdsSecretLine(s.line)
				keep := s.line[len(s.line)-s.longest+1:]
				s.line = append([]byte("+"), keep...)
			}
			break
		}
		s.line = append(s.line, p[:i]...)
		s.endLine(s.line)
		s.line = s.line[:0]
		p = p[i+1:]
	}
	return n, nil
}

// endLine reads one whole line of the diff.
func (s *secretScanner) endLine(l []byte) {
	switch {
	case s.old > 0 || s.new > 0:
		switch {
		case len(l) > 0 && l[0] == '+':
			s.check(l[1:])
			s.checkLines(l[1:])
			s.holdsSecretLine(l[1:])
			s.new--
			s.newLine++
		case len(l) > 0 && l[0] == '-':
			s.old--
			s.prev = s.prev[:0]
		case len(l) > 0 && l[0] == ' ':
			s.old--
			s.new--
			s.newLine++
			s.prev = s.prev[:0]
		}
	case bytes.HasPrefix(l, []byte("+++ ")):
		s.file = diffPath(string(l[4:]), "b/")
		s.prev = s.prev[:0]
		if s.multi {
			s.endFile()
			s.cur = wholeFile{file: s.file, blob: s.blob}
			if s.gitlink {
				s.cur.file = "" // not a blob: nothing to read whole
			}
		}
	case bytes.HasPrefix(l, []byte("@@ ")):
		s.old, s.new, s.newLine = hunkCounts(string(l))
		s.prev = s.prev[:0]
		if s.multi && s.new > 0 {
			s.cur.added = append(s.cur.added, [2]int{s.newLine, s.new})
		}
	case s.multi && bytes.HasPrefix(l, []byte("diff --git ")):
		s.blob, s.gitlink = "", false
	case s.multi && bytes.HasPrefix(l, []byte("index ")):
		// index OLD..NEW [MODE], full ids (--full-index)
		f := strings.Fields(string(l))
		if len(f) > 1 {
			_, s.blob, _ = strings.Cut(f[1], "..")
		}
		s.gitlink = s.gitlink || len(f) > 2 && f[2] == "160000"
	case s.multi && (bytes.HasPrefix(l, []byte("new file mode ")) || bytes.HasPrefix(l, []byte("new mode "))):
		s.gitlink = bytes.HasSuffix(l, []byte(" 160000"))
	}
}

// holdsSecretLine marks the current file to be read whole when its added
// line l holds a line of a secret of several lines.
func (s *secretScanner) holdsSecretLine(l []byte) {
	if !s.multi || s.cur.holds || s.cur.file == "" {
		return
	}
	for _, sl := range s.lines {
		if bytes.Contains(l, sl) {
			s.cur.holds = true
			return
		}
	}
}

// endFile ends the current file: kept in whole when it is to be read
// whole.
func (s *secretScanner) endFile() {
	if s.cur.holds && isCommitID(s.cur.blob) {
		s.whole = append(s.whole, s.cur)
	}
	s.cur = wholeFile{}
}

// checkLines records a hit when a secret with a newline ends in the added
// line l or in its newline (a value read from a file ends in one), l
// following the added lines whose tail is s.prev; the hit names the line
// the secret starts on. A value with no newline is check's.
func (s *secretScanner) checkLines(l []byte) {
	if !s.multi {
		return
	}
	buf := append(append(s.prev, l...), '\n')
	if s.hit == nil {
	secrets:
		for _, v := range s.secrets {
			if !strings.Contains(v.value, "\n") {
				continue
			}
			for off := 0; ; off++ {
				i := bytes.Index(buf[off:], []byte(v.value))
				if i < 0 {
					break
				}
				if off += i; off+len(v.value) <= len(s.prev) {
					continue // it ends on an earlier line, read there
				}
				first := s.newLine - bytes.Count(buf[min(off, len(s.prev)):len(s.prev)], []byte("\n"))
				if s.accept == nil || s.accept(first, first+strings.Count(strings.TrimSuffix(v.value, "\n"), "\n")) {
					s.hit = &secretHit{secret: v.name, file: s.file, line: first}
					break secrets
				}
			}
		}
	}
	if keep := s.longest - 1; len(buf) > keep {
		buf = append(buf[:0], buf[len(buf)-keep:]...)
	}
	s.prev = buf
}

// check records a hit when l holds a secret's value.
func (s *secretScanner) check(l []byte) {
	if s.hit != nil {
		return
	}
	for _, v := range s.secrets {
		if bytes.Contains(l, []byte(v.value)) {
			s.hit = &secretHit{secret: v.name, file: s.file, line: s.newLine}
			return
		}
	}
}

// flush reads a last line without a newline and ends the last file.
func (s *secretScanner) flush() {
	if len(s.line) > 0 {
		s.endLine(s.line)
		s.line = nil
	}
	if s.multi {
		s.endFile()
	}
}

// addedLines feeds a file's whole content to a secretScanner as the added
// lines of one hunk.
type addedLines struct {
	s   *secretScanner
	mid bool // in the middle of a line
}

// Write implements io.Writer.
func (a *addedLines) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if !a.mid {
			a.s.Write([]byte{'+'})
			a.mid = true
		}
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			a.s.Write(p)
			break
		}
		a.s.Write(p[:i+1])
		a.mid = false
		p = p[i+1:]
	}
	return n, nil
}

// scanWhole reads the staged blob of f whole (git cat-file blob runs no
// filter or textconv) for the secrets of several lines, and returns the
// first value found there that covers a line the change added, or nil.
func scanWhole(ctx context.Context, g *gitRepo, secrets []secretValue, f wholeFile) (*secretHit, error) {
	var multi []secretValue
	for _, v := range secrets {
		if strings.Contains(v.value, "\n") {
			multi = append(multi, v)
		}
	}
	s := newSecretScanner(multi)
	s.file, s.new, s.newLine = f.file, math.MaxInt, 1
	s.lines = nil // the file is read whole already
	s.accept = func(first, last int) bool {
		for _, r := range f.added {
			if first < r[0]+r[1] && r[0] <= last {
				return true
			}
		}
		return false
	}
	res, err := g.stream(ctx, &addedLines{s: s}, "cat-file", "blob", f.blob)
	if err != nil {
		return nil, fmt.Errorf("git cat-file blob of %s: %v: %s", f.file, err, strings.TrimSpace(res.Stderr))
	}
	if len(s.line) > 0 {
		s.endLine(s.line)
	}
	return s.hit, nil
}

// diffPath is the path of a ---/+++ header without its prefix; git ends a
// name with a space in a tab, and quotes (C style) a name with unusual
// characters.
func diffPath(p, prefix string) string {
	p = strings.TrimSuffix(p, "\t")
	if strings.HasPrefix(p, `"`) {
		if u, err := strconv.Unquote(p); err == nil {
			p = u
		}
	}
	if p == "/dev/null" {
		return ""
	}
	return strings.TrimPrefix(p, prefix)
}

// hunkCounts reads "@@ -a[,b] +c[,d] @@": the old and new line counts and
// the first new line.
func hunkCounts(h string) (old, new, start int) {
	f := strings.Fields(h)
	if len(f) < 3 {
		return 0, 0, 0
	}
	count := func(r string) (int, int) {
		a, b, ok := strings.Cut(r[1:], ",")
		first, _ := strconv.Atoi(a)
		n := 1
		if ok {
			n, _ = strconv.Atoi(b)
		}
		return first, n
	}
	_, old = count(f[1])
	start, new = count(f[2])
	return old, new, start
}

// scanStaged scans the staged changes of g for secrets and returns the
// first hit, or nil.
func scanStaged(ctx context.Context, g *gitRepo, secrets []secretValue) (*secretHit, error) {
	if len(secrets) == 0 {
		return nil, nil
	}
	s := newSecretScanner(secrets)
	res, err := g.stream(ctx, s, "diff", "--cached", "--no-ext-diff", "--no-textconv", "--no-color", "--text",
		"--no-renames", "-U0", "--full-index", "--src-prefix=a/", "--dst-prefix=b/")
	if err != nil {
		return nil, fmt.Errorf("git diff --cached: %v: %s", err, strings.TrimSpace(res.Stderr))
	}
	s.flush()
	if s.hit != nil {
		return s.hit, nil
	}
	for _, f := range s.whole {
		if hit, err := scanWhole(ctx, g, secrets, f); hit != nil || err != nil {
			return hit, err
		}
	}
	// A file's name is part of the change too (an empty file has no
	// content line to scan).
	r := g.out(ctx, "diff", "--cached", "--name-only", "-z", "--no-renames", "--diff-filter=d")
	if r.err != nil {
		return nil, fmt.Errorf("git diff --cached --name-only: %v: %s", r.err, strings.TrimSpace(r.out))
	}
	for name := range strings.SplitSeq(r.out, "\x00") {
		for _, v := range secrets {
			if strings.Contains(name, v.value) {
				for _, m := range secrets {
					name = strings.ReplaceAll(name, m.value, "***")
				}
				return &secretHit{secret: v.name, file: name}, nil
			}
		}
	}
	return nil, nil
}

// secretError is the failure for a hit.
func secretError(h *secretHit) error {
	if h.line == 0 {
		return &source.Error{Code: source.ESecretChange, Msg: fmt.Sprintf(
			"the change contains the value of secret '%s' in the name of %s; nothing was committed (the change is left in the worktree): rename the file",
			h.secret, h.file)}
	}
	return &source.Error{Code: source.ESecretChange, Msg: fmt.Sprintf(
		"the change contains the value of secret '%s' in %s:%d; nothing was committed (the change is left in the worktree): remove the value and pass it to the program through the environment (secrets:) instead",
		h.secret, h.file, h.line)}
}
