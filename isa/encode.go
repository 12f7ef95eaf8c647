package isa

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"reflect"

	"smith/source"
)

// The .smbc encoding:
//
//	magic    "SMBC"
//	version  uint16, little endian (Version)
//	flags    uint16, little endian (0; other values are refused)
//	sections, each: id byte, payload length uvarint, payload; in this
//	order, each exactly once, nothing after the last:
//	  1 code       per instruction: op byte, A uint32 LE, B uint32 LE
//	  2 positions  file count uvarint, per file: length uvarint, bytes;
//	               then per instruction: file index uvarint, line varint,
//	               col varint
//	  3 pools      the Program as encoding/json writes it (Code and Pos
//	               are not part of it)
//
// File names are in order of first use. The same Program always encodes to
// the same bytes.
const magic = "SMBC"

// Section ids, in file order.
const (
	secCode byte = iota + 1
	secPos
	secPools
)

var secNames = [...]string{secCode: "code", secPos: "positions", secPools: "pools"}

// instrSize is the encoded size of one instruction.
const instrSize = 9

// MarshalBinary encodes p as a .smbc file. It fails only when the pools
// cannot be encoded as JSON (a NaN or infinite number).
func (p *Program) MarshalBinary() ([]byte, error) {
	var out bytes.Buffer
	out.WriteString(magic)
	out.Write(binary.LittleEndian.AppendUint16(nil, Version))
	out.Write(binary.LittleEndian.AppendUint16(nil, 0))

	code := make([]byte, 0, instrSize*len(p.Code))
	for _, in := range p.Code {
		code = append(code, byte(in.Op))
		code = binary.LittleEndian.AppendUint32(code, in.A)
		code = binary.LittleEndian.AppendUint32(code, in.B)
	}
	writeSection(&out, secCode, code)

	var files []string
	fileIdx := map[string]int{}
	for _, ps := range p.Pos {
		if _, ok := fileIdx[ps.File]; !ok {
			fileIdx[ps.File] = len(files)
			files = append(files, ps.File)
		}
	}
	pos := binary.AppendUvarint(nil, uint64(len(files)))
	for _, f := range files {
		pos = binary.AppendUvarint(pos, uint64(len(f)))
		pos = append(pos, f...)
	}
	for _, ps := range p.Pos {
		pos = binary.AppendUvarint(pos, uint64(fileIdx[ps.File]))
		pos = binary.AppendVarint(pos, int64(ps.Line))
		pos = binary.AppendVarint(pos, int64(ps.Col))
	}
	writeSection(&out, secPos, pos)

	pools, err := marshalJSON(p)
	if err != nil {
		return nil, fmt.Errorf("encode program %q: %w", p.Name, err)
	}
	writeSection(&out, secPools, pools)
	return out.Bytes(), nil
}

func writeSection(out *bytes.Buffer, id byte, payload []byte) {
	out.WriteByte(id)
	out.Write(binary.AppendUvarint(nil, uint64(len(payload))))
	out.Write(payload)
}

// badCode returns an E_BYTECODE diagnostic with no position: a .smbc file
// has no lines; the caller may set Pos.File to the file's name.
func badCode(format string, args ...any) error {
	return source.New(source.Pos{}, source.EBytecode, format, args...)
}

// A reader reads a byte slice; every length it reads is checked against
// the bytes that remain before anything is allocated.
type reader struct {
	b    []byte
	what string // what is being read, for messages
}

func (r *reader) uvarint() (uint64, error) {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		return 0, badCode("%s: truncated or bad number", r.what)
	}
	r.b = r.b[n:]
	return v, nil
}

func (r *reader) varint() (int, error) {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		return 0, badCode("%s: truncated or bad number", r.what)
	}
	r.b = r.b[n:]
	if int64(int(v)) != v {
		return 0, badCode("%s: number %d is too large", r.what, v)
	}
	return int(v), nil
}

// bytes returns the next n bytes.
func (r *reader) bytes(n uint64) ([]byte, error) {
	if n > uint64(len(r.b)) {
		return nil, badCode("%s: length %d exceeds the %d bytes left", r.what, n, len(r.b))
	}
	b := r.b[:n]
	r.b = r.b[n:]
	return b, nil
}

// Decode reads a .smbc file. It refuses a file without the magic, of
// another isa version or with unknown flags, with a truncated, oversized,
// missing or extra section, or whose program fails Verify; every error
// carries E_BYTECODE (a source.Diagnostic, or Verify's source.Diagnostics).
// The program returned is canonical (no empty non-nil slices).
func Decode(data []byte) (*Program, error) {
	if len(data) < len(magic) || string(data[:len(magic)]) != magic {
		return nil, badCode("not a .smbc file")
	}
	if len(data) < len(magic)+4 {
		return nil, badCode("truncated .smbc header")
	}
	if v := binary.LittleEndian.Uint16(data[4:]); v != Version {
		return nil, badCode("program is isa version %d, this smith reads version %d", v, Version)
	}
	if f := binary.LittleEndian.Uint16(data[6:]); f != 0 {
		return nil, badCode("unknown .smbc flags 0x%04x", f)
	}
	r := &reader{b: data[8:]}
	var sec [secPools + 1][]byte
	for id := secCode; id <= secPools; id++ {
		r.what = "section " + secNames[id]
		if len(r.b) == 0 {
			return nil, badCode("%s is missing", r.what)
		}
		if r.b[0] != id {
			return nil, badCode("found section id %d where %s belongs", r.b[0], r.what)
		}
		r.b = r.b[1:]
		n, err := r.uvarint()
		if err != nil {
			return nil, err
		}
		if sec[id], err = r.bytes(n); err != nil {
			return nil, err
		}
	}
	if len(r.b) > 0 {
		return nil, badCode("%d bytes after the last section", len(r.b))
	}

	p := &Program{}
	dec := json.NewDecoder(bytes.NewReader(sec[secPools]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(p); err != nil {
		return nil, badCode("section pools: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, badCode("section pools: extra data after the JSON value")
	}

	code := sec[secCode]
	if len(code)%instrSize != 0 {
		return nil, badCode("section code: %d bytes is not a whole number of %d-byte instructions", len(code), instrSize)
	}
	if n := len(code) / instrSize; n > 0 {
		p.Code = make([]Instr, n)
		for i := range p.Code {
			c := code[i*instrSize:]
			p.Code[i] = Instr{Op: Op(c[0]), A: binary.LittleEndian.Uint32(c[1:]), B: binary.LittleEndian.Uint32(c[5:])}
		}
	}
	var err error
	if p.Pos, err = decodePos(sec[secPos], len(p.Code)); err != nil {
		return nil, err
	}
	canonicalize(reflect.ValueOf(p))
	if err := p.Verify(); err != nil {
		return nil, err
	}
	return p, nil
}

// decodePos reads the positions section for n instructions.
func decodePos(b []byte, n int) ([]source.Pos, error) {
	r := &reader{b: b, what: "section positions"}
	nf, err := r.uvarint()
	if err != nil {
		return nil, err
	}
	if nf > uint64(len(r.b)) { // every name takes at least one byte
		return nil, badCode("%s: %d file names in %d bytes", r.what, nf, len(r.b))
	}
	files := make([]string, nf)
	for i := range files {
		l, err := r.uvarint()
		if err != nil {
			return nil, err
		}
		f, err := r.bytes(l)
		if err != nil {
			return nil, err
		}
		files[i] = string(f)
	}
	if uint64(n)*3 > uint64(len(r.b)) { // every position takes at least three bytes
		return nil, badCode("%s: %d positions in %d bytes", r.what, n, len(r.b))
	}
	if n == 0 {
		if len(r.b) > 0 {
			return nil, badCode("%s: %d bytes after the last position", r.what, len(r.b))
		}
		return nil, nil
	}
	pos := make([]source.Pos, n)
	for i := range pos {
		fi, err := r.uvarint()
		if err != nil {
			return nil, err
		}
		if fi >= nf {
			return nil, badCode("%s: file index %d is out of range: %d files", r.what, fi, nf)
		}
		line, err := r.varint()
		if err != nil {
			return nil, err
		}
		col, err := r.varint()
		if err != nil {
			return nil, err
		}
		pos[i] = source.Pos{File: files[fi], Line: line, Col: col}
	}
	if len(r.b) > 0 {
		return nil, badCode("%s: %d bytes after the last position", r.what, len(r.b))
	}
	return pos, nil
}
