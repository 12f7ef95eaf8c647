package isa

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"unicode/utf8"

	"smith/source"
)

// The .smbc encoding:
//
//	magic    "SMBC"
//	version  uint16, little endian (Version)
//	flags    uint16, little endian (0; other values are refused)
//	sections, each: id byte, payload length uvarint, payload; in this
//	order, each exactly once, nothing after the last:
//	  1 strings    count uvarint; per string: length uvarint, bytes
//	  2 code       count uvarint; per instruction: op byte, A uvarint,
//	               B uvarint
//	  3 positions  per instruction: file (string index) uvarint, line
//	               minus the line before varint, col uvarint
//	  4 pools      the rest of the Program (see pools.go)
//
// Strings are in order of first use: the pools, then the positions' file
// names. The same Program always encodes to the same bytes.
const magic = "SMBC"

// Section ids, in file order.
const (
	secStrings byte = iota + 1
	secCode
	secPos
	secPools
)

var secNames = [...]string{secStrings: "strings", secCode: "code", secPos: "positions", secPools: "pools"}

// MarshalBinary encodes p as a .smbc file. It fails only when a number in
// the pools is NaN or infinite.
func (p *Program) MarshalBinary() ([]byte, error) {
	w := newPoolWriter()
	w.value(reflect.ValueOf(p).Elem())
	if w.err != nil {
		return nil, fmt.Errorf("encode program %q: %w", p.Name, w.err)
	}
	pools := w.b

	code := binary.AppendUvarint(make([]byte, 0, 4*len(p.Code)+8), uint64(len(p.Code)))
	for _, in := range p.Code {
		code = append(code, byte(in.Op))
		code = binary.AppendUvarint(code, uint64(in.A))
		code = binary.AppendUvarint(code, uint64(in.B))
	}

	pos := make([]byte, 0, 4*len(p.Pos))
	line := 0
	for _, ps := range p.Pos {
		pos = binary.AppendUvarint(pos, w.str(ps.File))
		pos = binary.AppendVarint(pos, int64(ps.Line)-int64(line))
		pos = binary.AppendVarint(pos, int64(ps.Col))
		line = ps.Line
	}

	n := 0
	for _, s := range w.strs {
		n += len(s) + 2
	}
	strs := binary.AppendUvarint(make([]byte, 0, n+8), uint64(len(w.strs)))
	for _, s := range w.strs {
		strs = binary.AppendUvarint(strs, uint64(len(s)))
		strs = append(strs, s...)
	}

	out := bytes.NewBuffer(make([]byte, 0, 8+len(strs)+len(code)+len(pos)+len(pools)+40))
	out.WriteString(magic)
	out.Write(binary.LittleEndian.AppendUint16(nil, Version))
	out.Write(binary.LittleEndian.AppendUint16(nil, 0))
	writeSection(out, secStrings, strs)
	writeSection(out, secCode, code)
	writeSection(out, secPos, pos)
	writeSection(out, secPools, pools)
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
	if v := binary.LittleEndian.Uint16(data[4:]); v < MinVersion || v > Version {
		return nil, badCode("program is isa version %d, this smith reads versions %d to %d", v, MinVersion, Version)
	}
	if f := binary.LittleEndian.Uint16(data[6:]); f != 0 {
		return nil, badCode("unknown .smbc flags 0x%04x", f)
	}
	r := &reader{b: data[8:]}
	var sec [secPools + 1][]byte
	for id := secStrings; id <= secPools; id++ {
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

	strs, err := decodeStrings(sec[secStrings])
	if err != nil {
		return nil, err
	}
	p := &Program{}
	pr := &poolReader{reader: reader{b: sec[secPools], what: "section pools"}, strs: strs, fields: map[reflect.Type][]int{}}
	if err := pr.value(reflect.ValueOf(p).Elem(), 0); err != nil {
		return nil, err
	}
	if len(pr.b) > 0 {
		return nil, badCode("section pools: %d bytes after the program", len(pr.b))
	}
	if p.Code, err = decodeCode(sec[secCode]); err != nil {
		return nil, err
	}
	if p.Pos, err = decodePos(sec[secPos], strs, len(p.Code)); err != nil {
		return nil, err
	}
	if err := p.Verify(); err != nil {
		return nil, err
	}
	return p, nil
}

// decodeStrings reads the strings section; every string must be valid
// UTF-8 (MarshalBinary writes no other).
func decodeStrings(b []byte) ([]string, error) {
	r := &reader{b: b, what: "section strings"}
	n, err := r.uvarint()
	if err != nil {
		return nil, err
	}
	if n > uint64(len(r.b)) { // every string takes at least one byte
		return nil, badCode("%s: %d strings in %d bytes", r.what, n, len(r.b))
	}
	strs := make([]string, n)
	for i := range strs {
		l, err := r.uvarint()
		if err != nil {
			return nil, err
		}
		s, err := r.bytes(l)
		if err != nil {
			return nil, err
		}
		if !utf8.Valid(s) {
			return nil, badCode("%s: string %d is not valid UTF-8", r.what, i)
		}
		strs[i] = string(s)
	}
	if len(r.b) > 0 {
		return nil, badCode("%s: %d bytes after the last string", r.what, len(r.b))
	}
	return strs, nil
}

// decodeCode reads the code section.
func decodeCode(b []byte) ([]Instr, error) {
	r := &reader{b: b, what: "section code"}
	n, err := r.uvarint()
	if err != nil {
		return nil, err
	}
	if n > uint64(len(r.b))/3 { // every instruction takes at least three bytes
		return nil, badCode("%s: %d instructions in %d bytes", r.what, n, len(r.b))
	}
	var code []Instr
	if n > 0 {
		code = make([]Instr, n)
	}
	for i := range code {
		op, err := r.bytes(1)
		if err != nil {
			return nil, err
		}
		a, err := r.uvarint()
		if err != nil {
			return nil, err
		}
		b, err := r.uvarint()
		if err != nil {
			return nil, err
		}
		if a > math.MaxUint32 || b > math.MaxUint32 {
			return nil, badCode("%s: instruction %d: operand too large", r.what, i)
		}
		code[i] = Instr{Op: Op(op[0]), A: uint32(a), B: uint32(b)}
	}
	if len(r.b) > 0 {
		return nil, badCode("%s: %d bytes after the last instruction", r.what, len(r.b))
	}
	return code, nil
}

// decodePos reads the positions section for n instructions.
func decodePos(b []byte, strs []string, n int) ([]source.Pos, error) {
	r := &reader{b: b, what: "section positions"}
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
	line := 0
	for i := range pos {
		fi, err := r.uvarint()
		if err != nil {
			return nil, err
		}
		if fi >= uint64(len(strs)) {
			return nil, badCode("%s: file index %d is out of range: %d strings", r.what, fi, len(strs))
		}
		dl, err := r.varint()
		if err != nil {
			return nil, err
		}
		col, err := r.varint()
		if err != nil {
			return nil, err
		}
		line += dl
		pos[i] = source.Pos{File: strs[fi], Line: line, Col: col}
	}
	if len(r.b) > 0 {
		return nil, badCode("%s: %d bytes after the last position", r.what, len(r.b))
	}
	return pos, nil
}
