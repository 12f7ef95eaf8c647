package isa

import (
	"strings"
	"testing"

	"smith/source"
)

func TestVerify(t *testing.T) {
	t.Parallel()
	f := "demo.yaml"
	tests := []struct {
		name string
		edit func(p *Program)
		path string     // the data path of the first diagnostic
		pos  source.Pos // its position
		msg  string     // a substring of its message
	}{
		{"valid", func(p *Program) {}, "", source.Pos{}, ""},
		{"no code", func(p *Program) { p.Code, p.Pos = nil, nil }, "code", source.Pos{}, "the program has no code"},
		{"positions", func(p *Program) { p.Pos = p.Pos[:3] }, "pos", source.Pos{}, "3 positions for 11 instructions"},
		{"entry", func(p *Program) { p.Entry = 11 }, "entry", source.Pos{}, "entry pc 0011 is out of range: the code has 11 instructions"},
		{"invalid op", func(p *Program) { p.Code[7] = Instr{} }, "code[7]", at(f, 21, 11), "pc 0007: opcode INVALID is not defined"},
		{"undefined op", func(p *Program) { p.Code[7].Op = 200 }, "code[7]", at(f, 21, 11), "pc 0007: opcode Op(200) is not defined"},
		{"jump", func(p *Program) { p.Code[2].A = 11 }, "code[2].a", at(f, 14, 11), "pc 0002: JUMP operand A: pc 0011 is out of range: the code has 11 instructions"},
		{"unused operand", func(p *Program) { p.Code[2].B = 1 }, "code[2].b", at(f, 14, 11), "pc 0002: JUMP operand B: unused operand is 1, want 0"},
		{"fail template", func(p *Program) { p.Code[3].A = 1 }, "code[3].a", at(f, 15, 20), "FAIL operand A: template 1 is out of range: the program has 1"},
		{"exec block", func(p *Program) { p.Code[0].A = 3 }, "code[0].a", at(f, 10, 5), "EXEC operand A: block 3 is out of range"},
		{"dispatch table", func(p *Program) { p.Code[1].A = 3 }, "code[1].a", at(f, 10, 5), "DISPATCH operand A: table 3 is out of range"},
		{"call node", func(p *Program) { p.Code[2] = Instr{OpCall, 1, 5} }, "code[2].a", at(f, 14, 11), "CALL operand A: node 1 is out of range"},
		{"call return", func(p *Program) { p.Code[2] = Instr{OpCall, 0, 50} }, "code[2].b", at(f, 14, 11), "CALL operand B: pc 0050 is out of range"},
		{"node entry", func(p *Program) { p.Nodes[0].Entry = 3 }, "nodes[0].entry", at(f, 2, 7), `node "demo": entry: block 3 is out of range`},
		{"block kind", func(p *Program) { p.Blocks[1].Kind = 0 }, "blocks[1].kind", at(f, 20, 5), `block "Report": kind 0 is not defined`},
		{"block node", func(p *Program) { p.Blocks[1].Node = 1 }, "blocks[1].node", at(f, 20, 5), `block "Report": node: node 1 is out of range`},
		{"block start", func(p *Program) { p.Blocks[1].Start = 99 }, "blocks[1].start", at(f, 20, 5), `block "Report": start: pc 0099 is out of range`},
		{"block dispatch", func(p *Program) { p.Blocks[1].Dispatch = 99 }, "blocks[1].dispatch", at(f, 20, 5), `block "Report": dispatch: pc 0099`},
		{"parent range", func(p *Program) { p.Blocks[1].Parent = 4 }, "blocks[1].parent", at(f, 20, 5), `block "Report": parent block 3 is out of range`},
		{"parent kind", func(p *Program) { p.Blocks[1].Parent = 1 }, "blocks[1].parent", at(f, 20, 5), `block "Report": parent block "Prep" is not a loop`},
		{"kind's op", func(p *Program) {
			p.Blocks[0].Kind, p.Blocks[0].Loop = KindLoop, &Loop{Body: 1}
		}, "code[0].a", at(f, 10, 5), `pc 0000: EXEC cannot run block "Prep" of kind loop`},
		{"loop body", func(p *Program) {
			p.Blocks[0].Kind, p.Blocks[0].Loop = KindLoop, &Loop{Body: 11}
			p.Code[0].Op, p.Code[0].B = OpLoopBegin, 1
		}, "blocks[0].loop.body", at(f, 10, 5), `block "Prep": loop body: pc 0011`},
		{"loop steps", func(p *Program) {
			p.Blocks[0].Kind, p.Blocks[0].Loop = KindLoop, &Loop{Body: 1, Steps: []uint32{1, 7}}
			p.Code[0].Op, p.Code[0].B = OpLoopBegin, 1
		}, "blocks[0].loop.steps[1]", at(f, 10, 5), `block "Prep": loop step 1: block 7 is out of range`},
		{"table block", func(p *Program) { p.Tables[1].Block = 5 }, "tables[1].block", source.Pos{}, "table 1: block: block 5 is out of range"},
		{"table entry", func(p *Program) { p.Tables[0].Entries[1].PC = 11 }, "tables[0].entries[1]", at(f, 10, 5), `table 0: signal "SIGNAL:FAILURE": pc 0011 is out of range`},
		{"table default", func(p *Program) { p.Tables[0].Default = 11 }, "tables[0].default", at(f, 10, 5), "table 0: default: pc 0011 is out of range"},
		{"stray default", func(p *Program) { p.Tables[1].Default = 3 }, "tables[1].default", at(f, 20, 5), "table 1: default pc 0003 is set but has_default is false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := demoProgram()
			tt.edit(p)
			err := p.Verify()
			if tt.msg == "" {
				if err != nil {
					t.Fatalf("Verify() = %v, want nil", err)
				}
				return
			}
			ds := source.AsDiagnostics(err)
			if len(ds) == 0 {
				t.Fatalf("Verify() = %v, want %q", err, tt.msg)
			}
			d := ds[0]
			if d.Code != source.EBytecode || d.Path != tt.path || d.Pos != tt.pos || !strings.Contains(d.Msg, tt.msg) {
				t.Errorf("Verify() = %s %s at %v (%s), want %s %q at %v (%s)",
					d.Code, d.Msg, d.Pos, d.Path, source.EBytecode, tt.msg, tt.pos, tt.path)
			}
		})
	}
}

// TestVerifyCollects checks that Verify reports every fault, not the first.
func TestVerifyCollects(t *testing.T) {
	t.Parallel()
	p := demoProgram()
	p.Code[0].A, p.Code[2].A, p.Blocks[2].Start = 9, 99, 99
	ds := source.AsDiagnostics(p.Verify())
	var paths []string
	for _, d := range ds {
		paths = append(paths, d.Path)
	}
	if got, want := strings.Join(paths, " "), "code[0].a code[2].a blocks[2].start"; got != want {
		t.Errorf("Verify() paths = %q, want %q", got, want)
	}
}

func TestOperand(t *testing.T) {
	t.Parallel()
	p := fullProgram()
	tests := []struct {
		name string
		kind Operand
		v    uint32
		want string
		err  string
	}{
		{"none", NoOperand, 0, "", ""},
		{"none set", NoOperand, 2, "", "unused operand is 2, want 0"},
		{"pc", PC, 25, "", ""},
		{"pc range", PC, 26, "", "pc 0026 is out of range: the code has 26 instructions"},
		{"node", NodeIdx, 1, `node "Sub"`, ""},
		{"block", BlockIdx, 2, `block "Each"`, ""},
		{"table", TableIdx, 2, `table 2 (block "Body")`, ""},
		{"string", StringIdx, 0, `"prep failed: see 'log'"`, ""},
		{"string range", StringIdx, 1, "", "string 1 is out of range: the program has 1"},
		{"kind", Operand(9), 0, "", "unknown operand kind 9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := p.Operand(tt.kind, tt.v)
			var gotErr string
			if err != nil {
				gotErr = err.Error()
			}
			if got != tt.want || gotErr != tt.err {
				t.Errorf("Operand(%v, %d) = %q, %q, want %q, %q", tt.kind, tt.v, got, gotErr, tt.want, tt.err)
			}
		})
	}
}
