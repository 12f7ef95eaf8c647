package cache

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
)

// headLen is how much of the executable is searched for its build ID: the
// Go linker puts it at the start of the file (in ELF, the first note, in
// the first page).
const headLen = 32 << 10

// selfBuildID returns the Go build ID of the running executable, or "" when
// it cannot be read (then nothing is cached: the build ID is what keeps one
// build's programs from another's).
func selfBuildID() string {
	f, err := os.Open("/proc/self/exe") // the running file, even if replaced since
	if err != nil {
		exe, eerr := os.Executable()
		if eerr != nil {
			return ""
		}
		if f, err = os.Open(exe); err != nil {
			return ""
		}
	}
	defer f.Close()
	head := make([]byte, headLen)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF {
		return ""
	}
	return buildIDIn(head[:n])
}

// elfNoteType is what follows the description's size in the ELF note the
// Go linker writes the build ID into: the note's type, 4, and its name,
// "Go" (the name's size, 4, comes before the description's size).
var elfNoteType = []byte{4, 0, 0, 0, 'G', 'o', 0, 0}

// buildIDIn finds the Go build ID in head, the start of an executable: in
// its ELF note, else in the marked string the linker writes for other
// object formats.
func buildIDIn(head []byte) string {
	for i := 0; ; {
		j := bytes.Index(head[i:], elfNoteType)
		if j < 0 {
			break
		}
		at := i + j
		if at >= 8 && binary.LittleEndian.Uint32(head[at-8:]) == 4 {
			n := int(binary.LittleEndian.Uint32(head[at-4:]))
			start := at + len(elfNoteType)
			if n > 0 && n <= 1024 && start+n <= len(head) {
				return string(head[start : start+n])
			}
		}
		i = at + 1
	}
	const mark = "\xff Go build ID: \""
	if i := bytes.Index(head, []byte(mark)); i >= 0 {
		rest := head[i+len(mark):]
		if j := bytes.IndexByte(rest, '"'); j > 0 {
			return string(rest[:j])
		}
	}
	return ""
}
