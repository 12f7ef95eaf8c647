package isa_test

import (
	"fmt"
	"os"
	"strings"

	"smith/isa"
	"smith/lang"
	"smith/source"
)

func ExampleProgram_Disassemble() {
	pos := source.Pos{File: "hello.yaml", Line: 3, Col: 5}
	p := &isa.Program{
		Name: "hello", Format: "workflow", Source: "hello.yaml",
		Code: []isa.Instr{
			{Op: isa.OpExec, A: 0},
			{Op: isa.OpDispatch, A: 0},
			{Op: isa.OpEnd},
			{Op: isa.OpFail, A: 0},
		},
		Pos:       []source.Pos{pos, pos, {File: "hello.yaml", Line: 5, Col: 9}, {File: "hello.yaml", Line: 6, Col: 9}},
		Templates: []lang.Template{lang.Lit("greeting failed")},
		Nodes:     []isa.Node{{ID: "hello", Pos: source.Pos{File: "hello.yaml", Line: 1, Col: 1}}},
		Blocks: []isa.Block{{ID: "Greet", Kind: isa.KindCommand, Start: 0, Dispatch: 1, Pos: pos,
			Step: &isa.Step{Command: []lang.Template{lang.Lit("echo"), lang.Lit("hi")}}}},
		Tables: []isa.Table{{Block: 0, Entries: []isa.TableEntry{{Signal: "SIGNAL:SUCCESS", PC: 2}}, Default: 3, HasDefault: true}},
	}
	if err := p.Disassemble(os.Stdout); err != nil {
		fmt.Println(err)
	}
	// Output:
	// ; smith program, isa 5
	// program "hello" format "workflow" source "hello.yaml" entry 0000
	//
	// template 0 {"parts":[{"lit":"greeting failed"}]}
	//
	// node 0 "hello" entry 0 inherit=false @ hello.yaml:1:1
	//
	// block 0 "Greet" command node 0 start 0000 dispatch 0001 @ hello.yaml:3:5
	//   spec {"step":{"command":[{"parts":[{"lit":"echo"}]},{"parts":[{"lit":"hi"}]}]}}
	//
	// table 0 block 0 default 0003  ; block "Greet"
	//   "SIGNAL:SUCCESS" 0002
	//
	// data {"config":{}}
	//
	// node "hello" (entry 0000):
	// 0000  EXEC           0        ; block "Greet"        @ hello.yaml:3:5
	// 0001  DISPATCH       0        ; table 0 (block "Greet") @ hello.yaml:3:5
	// 0002  END                     ;                      @ hello.yaml:5:9
	// 0003  FAIL           0        ; "greeting failed"    @ hello.yaml:6:9
}

func ExampleAssemble() {
	text := `; smith program, isa 5
program "tiny" format "workflow" source "tiny.yaml" entry 0000
node 0 "tiny" entry 0 inherit=false @ tiny.yaml:1:1
block 0 "Only" internal node 0 start 0000 dispatch 0001 @ tiny.yaml:2:3
  spec {"step":{"worker":"Internal:Echo"}}
table 0 block 0 default 0002
0000  EXEC      0     @ tiny.yaml:2:3
0001  DISPATCH  0     @ tiny.yaml:2:3
0002  RETURN          ; the run ends here @ tiny.yaml:4:3
`
	p, err := isa.Assemble("tiny.asm", strings.NewReader(text))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(p.Code), p.Code[2].Op, p.Blocks[0].Step.Worker, p.Pos[2])

	_, err = isa.Assemble("bad.asm", strings.NewReader(strings.Replace(text, "RETURN", "RETRUN", 1)))
	fmt.Println(err)
	// Output:
	// 3 RETURN Internal:Echo tiny.yaml:4:3
	// bad.asm:9:7: error: E_PARSE: 'RETRUN' is not an instruction (did you mean 'RETURN'?)
}

func ExampleDecode() {
	_, err := isa.Decode([]byte("SMBC\x07\x00\x00\x00"))
	fmt.Println(err)
	// Output:
	// -: error: E_BYTECODE: program is isa version 7, this smith reads versions 2 to 5
}
