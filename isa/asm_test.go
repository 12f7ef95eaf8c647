package isa

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"smith/lang"
	"smith/source"
)

func disasm(t testing.TB, p *Program) string {
	t.Helper()
	var b bytes.Buffer
	if err := p.Disassemble(&b); err != nil {
		t.Fatalf("Disassemble(%q) = %v", p.Name, err)
	}
	return b.String()
}

func testPrograms() []struct {
	name string
	p    *Program
} {
	return []struct {
		name string
		p    *Program
	}{
		{"demo", demoProgram()},
		{"full", fullProgram()},
		{"odd", oddProgram()},
		{"big", bigProgram(20)},
	}
}

func TestRoundTripText(t *testing.T) {
	t.Parallel()
	for _, tt := range testPrograms() {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := tt.p.Verify(); err != nil {
				t.Fatalf("Verify() = %v", err)
			}
			text := disasm(t, tt.p)
			q, err := Assemble(tt.name+".asm", strings.NewReader(text))
			if err != nil {
				t.Fatalf("Assemble(%q) = %v", text, err)
			}
			if !reflect.DeepEqual(q, tt.p) {
				t.Errorf("Assemble(Disassemble(p)) = %+v, want %+v", q, tt.p)
			}
			if again := disasm(t, q); again != text {
				t.Errorf("second disassembly = %q, want %q", again, text)
			}
		})
	}
}

// TestRoundTripEachOp checks, for every opcode, that it has a table row
// with a name and a doc, disassembles and assembles back, and has a
// section in docs/isa.md.
func TestRoundTripEachOp(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/isa.md")
	if err != nil {
		t.Fatalf("read docs/isa.md: %v", err)
	}
	for i := 0; i < NumOps; i++ {
		op := Op(i)
		t.Run(op.String(), func(t *testing.T) {
			t.Parallel()
			info, ok := op.Info()
			if !ok || info.Name == "" || info.Doc == "" {
				t.Fatalf("Op(%d).Info() = %+v, %v, want a named and documented row", i, info, ok)
			}
			if got, ok := OpByName(info.Name); !ok || got != op {
				t.Errorf("OpByName(%q) = %v, %v, want %v, true", info.Name, got, ok, op)
			}
			if !bytes.Contains(doc, []byte("\n## "+info.Name+"\n")) {
				t.Errorf("docs/isa.md has no section %q", "## "+info.Name)
			}
			if op == OpInvalid {
				return // never assembles
			}
			p := oneOpProgram(op)
			if err := p.Verify(); err != nil {
				t.Fatalf("Verify(%v program) = %v", op, err)
			}
			text := disasm(t, p)
			if !strings.Contains(text, "  "+info.Name+" ") {
				t.Errorf("Disassemble(%v program) = %q, want the mnemonic %q", op, text, info.Name)
			}
			q, err := Assemble("op.asm", strings.NewReader(text))
			if err != nil {
				t.Fatalf("Assemble(%q) = %v", text, err)
			}
			if !reflect.DeepEqual(q, p) {
				t.Errorf("Assemble(Disassemble(%v program)) = %+v, want %+v", op, q, p)
			}
		})
	}
	if got := Op(200).String(); got != "Op(200)" {
		t.Errorf("Op(200).String() = %q, want %q", got, "Op(200)")
	}
	if got, want := Op(NumOps).String(), fmt.Sprintf("Op(%d)", NumOps); got != want {
		t.Errorf("Op(NumOps).String() = %q, want %q", got, want)
	}
	if _, ok := Op(NumOps).Info(); ok {
		t.Errorf("Op(NumOps).Info() ok = true, want false")
	}
}

// oneOpProgram is a program of one instruction op whose operands are valid:
// one string, template, node, block and table, and an operand 0 of every
// kind.
func oneOpProgram(op Op) *Program {
	in := Instr{Op: op}
	kind := KindLoop // the block of the kind op runs, if op runs one
	for k := KindCommand; k < kindCount; k++ {
		if kindTable[k].Op == op {
			kind = k
			break
		}
	}
	return &Program{
		Name: "op", Format: "workflow", Source: "op.yaml",
		Code:      []Instr{in},
		Pos:       []source.Pos{at("op.yaml", 1, 1)},
		Strings:   []string{"s"},
		Templates: []lang.Template{lang.Lit("t")},
		Nodes:     []Node{{ID: "n", Pos: at("op.yaml", 1, 1)}},
		Blocks: []Block{{ID: "b", Kind: kind, Pos: at("op.yaml", 1, 1),
			Loop: &Loop{Items: TValue{Kind: TList}, As: "x"}}},
		Tables: []Table{{Block: 0, Default: 0, HasDefault: true}},
	}
}

func TestAssembleErrors(t *testing.T) {
	t.Parallel()
	const head = "; smith program, isa 5\nprogram \"x\" format \"workflow\" source \"x.yaml\" entry 0000\n"
	tests := []struct {
		name string
		src  string
		want string // the first diagnostic, formatted
	}{
		{"empty", "", "t.asm:1:1: error: E_PARSE: the text does not start with '; smith program, isa 5'"},
		{"no program", "; smith program, isa 5\n0000 END @ -\n", "t.asm:1:1: error: E_PARSE: the text has no 'program' line"},
		{"bad op", head + "0000  RETUNR @ -\n", "t.asm:3:7: error: E_PARSE: 'RETUNR' is not an instruction (did you mean 'RETURN'?)"},
		{"jump range", head + "0000  JUMP 0001 @ x.yaml:1:1\n", "t.asm:3:1: error: E_PARSE: pc 0000: JUMP operand A: pc 0001 is out of range: the code has 1 instructions"},
		{"bad string", head + "string 0 \"\\q\"\n0000 END @ -\n", "t.asm:3:10: error: E_PARSE: bad string \"\\q\""},
		{"bad position", head + "0000 END @ x.yaml:99999999999999999999:1\n", "t.asm:3:12: error: E_PARSE: bad position x.yaml:99999999999999999999:1"},
		{"bad template", head + "template 0 {\"parts\":[{\"lit\":1}]}\n0000 END @ -\n", "t.asm:3:29: error: E_PARSE: bad JSON: json: cannot unmarshal number into Go struct field Part.parts.lit of type string"},
		{"template order", head + "template 1 {}\n0000 END @ -\n", "t.asm:3:10: error: E_PARSE: template 1 is out of order: the next template is 0"},
		{"fail range", head + "template 0 {}\n0000 FAIL 1 @ -\n", "t.asm:4:1: error: E_PARSE: pc 0000: FAIL operand A: template 1 is out of range: the program has 1"},
		{"table default", head + "table 0 block 0 default 0001\n0000 END @ -\n", "t.asm:3:1: error: E_PARSE: table 0: block: block 0 is out of range: the program has 0"},
		{"loop parent", head + "node 0 \"n\" entry 0 inherit=false @ -\nblock 0 \"b\" command node 0 start 0000 dispatch 0000 @ -\n  spec {\"parent\":1}\n0000 END @ -\n",
			"t.asm:4:1: error: E_PARSE: block \"b\": parent block \"b\" is not a loop or parallel block"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := Assemble("t.asm", strings.NewReader(tt.src))
			ds := source.AsDiagnostics(err)
			if p != nil || len(ds) == 0 {
				t.Fatalf("Assemble(%q) = %v, %v, want diagnostics", tt.src, p, err)
			}
			if got := ds[0].Format(); got != tt.want {
				t.Errorf("Assemble(%q) first diagnostic = %q, want %q", tt.src, got, tt.want)
			}
		})
	}
}

func FuzzAssemble(f *testing.F) {
	for _, tt := range testPrograms() {
		f.Add(disasm(f, tt.p))
	}
	f.Add("; smith program, isa 5\nprogram \"x\" format \"\" source \"\" entry 0\n0 END @ -")
	f.Add("; smith program, isa 5\n0 JUMP 0 @ \"a\":1:2 ; x\nnode \"x\" (entry 0000):\n")
	f.Add("@ \n@\n\"\n{\n; \"")
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Assemble("f.asm", strings.NewReader(src))
		if err != nil {
			if len(source.AsDiagnostics(err)) == 0 {
				t.Fatalf("Assemble(%q) error %v carries no diagnostics", src, err)
			}
			return
		}
		if err := p.Verify(); err != nil {
			t.Fatalf("Assemble(%q) returned a program that fails Verify: %v", src, err)
		}
		var b bytes.Buffer
		if err := p.Disassemble(&b); err != nil {
			return // a number JSON cannot encode
		}
		q, err := Assemble("f.asm", bytes.NewReader(b.Bytes()))
		if err != nil {
			t.Fatalf("Assemble(Disassemble(%q)) = %v", src, err)
		}
		var c bytes.Buffer
		if err := q.Disassemble(&c); err != nil || c.String() != b.String() {
			t.Fatalf("second disassembly of %q = %q, %v, want %q", src, c.String(), err, b.String())
		}
	})
}

// TestDocVersion: docs/isa.md and docs/diagnostics.md name the format
// version this package writes and the range it reads, wherever they give
// them.
func TestDocVersion(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/isa.md")
	if err != nil {
		t.Fatalf("read docs/isa.md: %v", err)
	}
	diag, err := os.ReadFile("../docs/diagnostics.md")
	if err != nil {
		t.Fatalf("read docs/diagnostics.md: %v", err)
	}
	if want := fmt.Sprintf("this smith reads versions %d to %d\n", MinVersion, Version); !bytes.Contains(diag, []byte(want)) {
		t.Errorf("docs/diagnostics.md's E_BYTECODE example lacks %q", want)
	}
	for _, want := range []string{
		fmt.Sprintf("# The Smith machine (isa version %d)", Version),
		fmt.Sprintf("version  uint16   isa.Version (%d)", Version),
		fmt.Sprintf("this smith reads versions %d to %d", MinVersion, Version),
		fmt.Sprintf("; smith program, isa %d", Version),
	} {
		if !bytes.Contains(doc, []byte(want)) {
			t.Errorf("docs/isa.md lacks %q", want)
		}
	}
}
