package isa

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"smith/lang"
	"smith/source"
)

func marshal(t testing.TB, p *Program) []byte {
	t.Helper()
	b, err := p.MarshalBinary()
	if err != nil {
		t.Fatalf("MarshalBinary(%q) = %v", p.Name, err)
	}
	return b
}

func TestRoundTripBinary(t *testing.T) {
	t.Parallel()
	for _, tt := range testPrograms() {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := marshal(t, tt.p)
			q, err := Decode(b)
			if err != nil {
				t.Fatalf("Decode(MarshalBinary(p)) = %v", err)
			}
			if !reflect.DeepEqual(q, tt.p) {
				t.Errorf("Decode(MarshalBinary(p)) = %+v, want %+v", q, tt.p)
			}
			if again := marshal(t, q); !bytes.Equal(again, b) {
				t.Errorf("MarshalBinary(Decode(b)) = %x, want %x", again, b)
			}
			if again := marshal(t, tt.p); !bytes.Equal(again, b) {
				t.Errorf("MarshalBinary(p) twice differs: %x, then %x", b, again)
			}
		})
	}
}

// TestDecodeCanonical checks that empty slices decode as nil, so that a
// program with empty slices and one with nil ones decode equal.
func TestDecodeCanonical(t *testing.T) {
	t.Parallel()
	p := demoProgram()
	p.Tables[2].Entries = []TableEntry{}
	p.Secrets = []string{}
	p.Blocks[0].Step.Env = []EnvVar{}
	q, err := Decode(marshal(t, p))
	if err != nil {
		t.Fatalf("Decode() = %v", err)
	}
	if want := demoProgram(); !reflect.DeepEqual(q, want) {
		t.Errorf("Decode(MarshalBinary(p with empty slices)) = %+v, want %+v", q, want)
	}
}

func TestMarshalBinaryNaN(t *testing.T) {
	t.Parallel()
	p := demoProgram()
	p.Blocks[0].Step.Timeout = math.NaN()
	if b, err := p.MarshalBinary(); err == nil {
		t.Errorf("MarshalBinary(program with NaN) = %x, nil, want an error", b)
	}
	if h := p.Hash(); h != "" {
		t.Errorf("Hash(program with NaN) = %q, want \"\"", h)
	}
}

func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	good := marshal(t, demoProgram())
	with := func(edit func(b []byte) []byte) []byte {
		return edit(append([]byte(nil), good...))
	}
	// section builds a .smbc from raw section payloads.
	section := func(secs ...[]byte) []byte {
		b := append([]byte(nil), good[:8]...)
		for i, s := range secs {
			b = append(b, byte(i+1))
			b = binary.AppendUvarint(b, uint64(len(s)))
			b = append(b, s...)
		}
		return b
	}
	strs := []byte{2, 1, 'x', 8, 'w', 'o', 'r', 'k', 'f', 'l', 'o', 'w'} // "x", "workflow"
	code := []byte{1, byte(OpEnd), 0, 0}                                 // one END
	pos := []byte{0, 0, 0}                                               // one position {"x" 0 0}
	pools := []byte{7, 0, 1, 0}                                          // name "x", format "workflow", source "x"

	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "not a .smbc file"},
		{"bad magic", []byte("SMBX\x02\x00\x00\x00"), "not a .smbc file"},
		{"yaml", []byte("version: 1\n"), "not a .smbc file"},
		{"short header", []byte("SMBC\x01"), "truncated .smbc header"},
		{"version", with(func(b []byte) []byte { b[4] = 7; return b }), "program is isa version 7, this smith reads versions 2 to 5"},
		{"flags", with(func(b []byte) []byte { b[6] = 4; return b }), "unknown .smbc flags 0x0004"},
		{"no sections", good[:8], "section strings is missing"},
		{"trailing", append(append([]byte(nil), good...), 0), "1 bytes after the last section"},
		{"section order", with(func(b []byte) []byte { b[8] = 2; return b }), "found section id 2 where section strings belongs"},
		{"truncated length", section([]byte{}, nil, nil)[:9], "section strings: truncated or bad number"},
		{"length past end", append(good[:8:8], 1, 0xff, 0xff, 0xff, 0xff, 0x0f), "section strings: length 4294967295 exceeds the 0 bytes left"},
		{"good", section(strs, code, pos, pools), ""},
		{"too many strings", section([]byte{0xff, 0x01, 0}, code, pos, pools), "section strings: 255 strings in 1 bytes"},
		{"string past end", section([]byte{1, 9, 'a'}, code, pos, pools), "section strings: length 9 exceeds the 1 bytes left"},
		{"bad utf-8", section([]byte{1, 1, 0xff}, code, pos, pools), "section strings: string 0 is not valid UTF-8"},
		{"extra strings", section(append(strs[:len(strs):len(strs)], 0), code, pos, pools), "section strings: 1 bytes after the last string"},
		{"too many instrs", section(strs, []byte{2, byte(OpEnd), 0, 0}, pos, pools), "section code: 2 instructions in 3 bytes"},
		{"partial instr", section(strs, []byte{1, byte(OpEnd), 0, 0x80}, pos, pools), "section code: truncated or bad number"},
		{"big operand", section(strs, []byte{1, byte(OpEnd), 0xff, 0xff, 0xff, 0xff, 0x1f, 0}, pos, pools), "section code: instruction 0: operand too large"},
		{"extra code", section(strs, append(code[:4:4], 0), pos, pools), "section code: 1 bytes after the last instruction"},
		{"too few positions", section(strs, []byte{2, byte(OpEnd), 0, 0, byte(OpEnd), 0, 0}, pos, pools), "section positions: 2 positions in 3 bytes"},
		{"file index", section(strs, code, []byte{3, 0, 0}, pools), "section positions: file index 3 is out of range: 2 strings"},
		{"extra positions", section(strs, code, append(pos[:3:3], 0), pools), "section positions: 1 bytes after the last position"},
		{"bad varint", section(strs, code, []byte{0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, pools), "section positions: truncated or bad number"},
		{"pools truncated", section(strs, code, pos, pools[:2]), "section pools: truncated or bad number"},
		{"pools trailing", section(strs, code, pos, append(pools[:4:4], 0)), "section pools: 1 bytes after the program"},
		{"string index", section(strs, code, pos, []byte{1, 9}), "section pools: string index 9 is out of range: 2 strings"},
		{"unknown field", section(strs, code, pos, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}), "section pools: field bitmap"},
		{"empty list", section(strs, code, pos, []byte{1 << 4, 0}), "section pools: 0 elements in 0 bytes"},
		{"long list", section(strs, code, pos, []byte{1 << 4, 5, 0}), "section pools: 5 elements in 1 bytes"},
		{"verify", section(strs, []byte{1, byte(OpJump), 5, 0}, pos, pools), "pc 0000: JUMP operand A: pc 0005 is out of range"},
		{"no code", section(strs, []byte{0}, nil, pools), "the program has no code"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := Decode(tt.data)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Decode(%x) = %v, want a program", tt.data, err)
				}
				return
			}
			ds := source.AsDiagnostics(err)
			if p != nil || len(ds) == 0 {
				t.Fatalf("Decode(%x) = %v, %v, want E_BYTECODE %q", tt.data, p, err, tt.want)
			}
			if ds[0].Code != source.EBytecode || !strings.Contains(ds[0].Msg, tt.want) {
				t.Errorf("Decode(%x) = %v, want E_BYTECODE %q", tt.data, err, tt.want)
			}
		})
	}
}

// TestDecodeTruncated decodes every proper prefix of a valid encoding.
func TestDecodeTruncated(t *testing.T) {
	t.Parallel()
	b := marshal(t, fullProgram())
	for n := 0; n < len(b); n++ {
		if p, err := Decode(b[:n]); err == nil || len(source.AsDiagnostics(err)) == 0 {
			t.Fatalf("Decode(first %d of %d bytes) = %v, %v, want E_BYTECODE", n, len(b), p, err)
		}
	}
}

func TestHash(t *testing.T) {
	t.Parallel()
	h := demoProgram().Hash()
	if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		t.Fatalf("Hash() = %q, want 64 hex digits", h)
	}
	if again := demoProgram().Hash(); again != h {
		t.Errorf("Hash() of the same program = %q, then %q", h, again)
	}
	changed := []struct {
		name string
		edit func(p *Program)
	}{
		{"operand", func(p *Program) { p.Code[2].A = 8 }},
		{"position", func(p *Program) { p.Pos[0].Col++ }},
		{"pool", func(p *Program) { p.Templates[0] = lang.Lit("Prep broke") }},
	}
	for _, tt := range changed {
		t.Run(tt.name, func(t *testing.T) {
			p := demoProgram()
			tt.edit(p)
			if got := p.Hash(); got == h {
				t.Errorf("Hash() after changing the %s = %q, want a different hash", tt.name, got)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	for _, tt := range testPrograms() {
		b := marshal(f, tt.p)
		f.Add(b)
		for _, n := range []int{0, 4, 7, 8, 9, 10, len(b) / 2, len(b) - 1} {
			f.Add(b[:n])
		}
	}
	f.Add([]byte("SMBC\x01\x00\x00\x00\x01\xff\xff\xff\xff\x0f"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Decode(data)
		if err != nil {
			if ds := source.AsDiagnostics(err); len(ds) == 0 || ds[0].Code != source.EBytecode {
				t.Fatalf("Decode(%x) = %v, want E_BYTECODE diagnostics", data, err)
			}
			return
		}
		if err := p.Verify(); err != nil {
			t.Fatalf("Decode(%x) returned a program that fails Verify: %v", data, err)
		}
		b, err := p.MarshalBinary()
		if err != nil {
			t.Fatalf("MarshalBinary(Decode(%x)) = %v", data, err)
		}
		if q, err := Decode(b); err != nil || !reflect.DeepEqual(q, p) {
			t.Fatalf("Decode(MarshalBinary(Decode(%x))) = %v, %v, want %+v", data, q, err, p)
		}
	})
}

// BenchmarkDecode decodes and verifies a program of 10,000 blocks.
func BenchmarkDecode(b *testing.B) {
	data := marshal(b, bigProgram(10000))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerify verifies a program of 10,000 blocks.
func BenchmarkVerify(b *testing.B) {
	p := bigProgram(10000)
	for b.Loop() {
		if err := p.Verify(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDecodeOlderVersion: a program of an older isa version that the
// current one only extends (MinVersion) decodes, its new fields zero; one
// older than MinVersion is refused.
func TestDecodeOlderVersion(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "v2", "demo.smbc"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Decode(b)
	if err != nil {
		t.Fatalf("Decode of a version 2 program: %v", err)
	}
	if p.Name != "demo" || len(p.Blocks) == 0 {
		t.Errorf("decoded %q with %d blocks", p.Name, len(p.Blocks))
	}
	b[4] = MinVersion - 1
	if _, err := Decode(b); err == nil {
		t.Errorf("a version %d program was read", MinVersion-1)
	}
}
