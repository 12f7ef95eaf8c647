package main

import (
	"io"
	"os"
	"strings"
	"unicode"

	"golang.org/x/term"
)

// maxTail bounds the partial line the progress line keeps of a step's
// output.
const maxTail = 4096

// tail is where a step's output goes on a terminal without -v: nothing is
// printed, but its last line is shown on the progress line.
func (c *console) tail() io.Writer { return tailWriter{c} }

type tailWriter struct{ c *console }

func (t tailWriter) Write(p []byte) (int, error) {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.c.partial += string(p)
	if i := strings.LastIndexByte(t.c.partial, '\n'); i >= 0 {
		lines := strings.Split(strings.TrimRight(t.c.partial[:i], "\r\n"), "\n")
		for j := len(lines) - 1; j >= 0; j-- {
			if l := printable(lines[j]); l != "" {
				t.c.lastLine = l
				break
			}
		}
		t.c.partial = t.c.partial[i+1:]
	}
	if len(t.c.partial) > maxTail {
		t.c.partial = t.c.partial[len(t.c.partial)-maxTail:]
	}
	return len(p), nil
}

// printable is s without control characters (a step's output must not
// move the cursor or recolour the terminal), spaces trimmed.
func printable(s string) string {
	s = stripEscapes(s)
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if r == '\t' {
			return ' '
		}
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return -1
		}
		return r
	}, s))
}

// stripEscapes drops ANSI escape sequences (ESC [ ... final byte).
func stripEscapes(s string) string {
	if !strings.Contains(s, "\x1b") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != 0x1b {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '[' {
			i += 2
			for i < len(s) && (s[i] < 0x40 || s[i] > 0x7e) {
				i++
			}
		}
	}
	return b.String()
}

// width is the terminal's width, 80 when unknown.
func (c *console) width() int {
	if f, ok := c.w.(*os.File); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w
		}
	}
	return 80
}

// fit cuts s to n columns (runes), marking a cut with "...".
func fit(s string, n int) string {
	r := []rune(s)
	if n <= 3 || len(r) <= n {
		if len(r) > n && n > 0 {
			return string(r[:n])
		}
		return s
	}
	return string(r[:n-3]) + "..."
}
