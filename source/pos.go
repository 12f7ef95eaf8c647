// Package source holds what every stage of Smith shares about source text:
// positions (Pos), the offset-to-line:col mapping (File), diagnostics, and
// the one table of every diagnostic and runtime code (codes.go).
//
// It imports the standard library only.
package source

import (
	"fmt"
	"sort"
	"unicode/utf8"
)

// A Pos is a position in a source file. Line and Col are 1-based; Col counts
// characters (runes), not bytes. The zero value means "unknown".
type Pos struct {
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	Col  int    `json:"col,omitempty"`
}

// IsValid reports whether p names a line.
func (p Pos) IsValid() bool { return p.Line > 0 }

// String prints p as file:line:col (or file, or "-" when unknown).
func (p Pos) String() string {
	switch {
	case !p.IsValid() && p.File == "":
		return "-"
	case !p.IsValid():
		return p.File
	case p.Col <= 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Shift returns the position of the character that lies delta characters
// after p on the same line. Positions inside a string value (an action, a
// ${...} reference) are made by shifting the string's own position.
func (p Pos) Shift(line, col int) Pos {
	if !p.IsValid() {
		return p
	}
	if line > 1 {
		return Pos{File: p.File, Line: p.Line + line - 1, Col: col}
	}
	return Pos{File: p.File, Line: p.Line, Col: p.Col + col - 1}
}

// A File maps byte offsets of one source text to positions.
type File struct {
	Name  string
	src   []byte
	lines []int // byte offset of the start of each line
}

// NewFile indexes src for offset-to-position lookups.
func NewFile(name string, src []byte) *File {
	f := &File{Name: name, src: src, lines: []int{0}}
	for i, b := range src {
		if b == '\n' {
			f.lines = append(f.lines, i+1)
		}
	}
	return f
}

// Pos returns the position of byte offset off (clamped to the text).
func (f *File) Pos(off int) Pos {
	if off < 0 {
		off = 0
	}
	if off > len(f.src) {
		off = len(f.src)
	}
	i := sort.Search(len(f.lines), func(i int) bool { return f.lines[i] > off }) - 1
	col := utf8.RuneCount(f.src[f.lines[i]:off]) + 1
	return Pos{File: f.Name, Line: i + 1, Col: col}
}
