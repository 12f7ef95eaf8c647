package isa

import (
	"fmt"

	"smith/lang"
	"smith/source"
)

// Test programs, built by hand in canonical form (empty slices are nil).

func at(file string, line, col int) source.Pos { return source.Pos{File: file, Line: line, Col: col} }

func ref(raw string, pos source.Pos, path ...lang.PathElem) *lang.Ref {
	return &lang.Ref{Path: path, Raw: raw, Pos: pos}
}

func tmpl(parts ...lang.Part) lang.Template { return lang.Template{Parts: parts} }

func tlit(s string) *lang.Template { t := lang.Lit(s); return &t }

// demoProgram is a small YAML workflow: Prep, then Report, failing or
// halting at Review.
func demoProgram() *Program {
	f := "demo.yaml"
	return &Program{
		Name: "demo", Format: "workflow", Source: f, Entry: 0,
		Code: []Instr{
			{OpExec, 0, 0},        // 0 Prep
			{OpDispatch, 0, 0},    // 1
			{OpJump, 5, 0},        // 2
			{OpFail, 0, 0},        // 3
			{OpHaltAndFlag, 2, 0}, // 4
			{OpExec, 1, 0},        // 5 Report
			{OpDispatch, 1, 0},    // 6
			{OpEnd, 0, 0},         // 7
			{OpExec, 2, 0},        // 8 Review
			{OpDispatch, 2, 0},    // 9
			{OpEnd, 0, 0},         // 10
		},
		Pos: []source.Pos{
			at(f, 10, 5), at(f, 10, 5), at(f, 14, 11), at(f, 15, 20), at("flow.json", 19, 7),
			at(f, 20, 5), at(f, 20, 5), at(f, 21, 11),
			at(f, 30, 5), at(f, 30, 5), at(f, 31, 11),
		},
		Templates: []lang.Template{lang.Lit("Prep failed")},
		Nodes:     []Node{{ID: "demo", Entry: 0, Pos: at(f, 2, 7)}},
		Blocks: []Block{
			{ID: "Prep", Node: 0, Kind: KindCommand, Start: 0, Dispatch: 1, Pos: at(f, 10, 5),
				Step: &Step{Command: []lang.Template{lang.Lit("make"), lang.Lit("prep")}}},
			{ID: "Report", Node: 0, Kind: KindCommand, Start: 5, Dispatch: 6, Pos: at(f, 20, 5),
				Step: &Step{Command: []lang.Template{lang.Lit("echo"), lang.Lit("done")}}},
			{ID: "Review", Node: 0, Kind: KindCommand, Start: 8, Dispatch: 9, Pos: at(f, 30, 5),
				Step: &Step{Command: []lang.Template{lang.Lit("true")}}},
		},
		Tables: []Table{
			{Block: 0, Entries: []TableEntry{{"SIGNAL:SUCCESS", 2}, {"SIGNAL:FAILURE", 3}}, Default: 4, HasDefault: true},
			{Block: 1, Entries: []TableEntry{{"SIGNAL:SUCCESS", 7}}},
			{Block: 2, Default: 10, HasDefault: true},
		},
		StrictFlow: true,
	}
}

// fullProgram uses every opcode and every pool field; its FAIL message is a
// template with a reference, a '$' and passthroughs.
func fullProgram() *Program {
	f := "flow.json"
	p := func(line int) source.Pos { return at(f, line, 3) }
	ctxRef := tmpl(lang.Part{Lit: "dir-"}, lang.Part{Ref: ref("context.dir", at(f, 4, 12), lang.PathElem{Key: "context"}, lang.PathElem{Key: "dir"})})
	itemsRef := tmpl(lang.Part{Ref: ref("context.files[2]", at(f, 30, 14), lang.PathElem{Key: "context"}, lang.PathElem{Key: "files"}, lang.PathElem{Index: 2, IsIndex: true})})
	return &Program{
		Name: "full", Format: "manifest", Source: f, Entry: 0,
		Code: []Instr{
			{OpVisit, 0, 3},      // 0  Prep start
			{OpWhen, 0, 3},       // 1
			{OpExec, 0, 0},       // 2
			{OpDispatch, 0, 0},   // 3  Prep dispatch
			{OpJump, 7, 0},       // 4
			{OpCall, 1, 7},       // 5
			{OpFail, 0, 0},       // 6
			{OpSetContext, 1, 0}, // 7  Set
			{OpDispatch, 1, 0},   // 8
			{OpJump, 10, 0},      // 9
			{OpLoopBegin, 2, 17}, // 10 Each
			{OpExec, 3, 0},       // 11 Body
			{OpDispatch, 2, 0},   // 12
			{OpJump, 16, 0},      // 13
			{OpLoopBreak, 2, 17}, // 14
			{OpLoopFail, 2, 17},  // 15
			{OpLoopNext, 2, 11},  // 16
			{OpDispatch, 3, 0},   // 17 Each dispatch
			{OpHaltAndFlag, 4, 0},
			{OpEnd, 0, 0},      // 19
			{OpExec, 4, 0},     // 20 Review
			{OpDispatch, 4, 0}, // 21
			{OpReturn, 0, 0},   // 22
			{OpExec, 5, 0},     // 23 SubStart
			{OpDispatch, 5, 0}, // 24
			{OpReturn, 0, 0},   // 25
		},
		Pos: []source.Pos{
			p(10), p(10), p(10), p(10), p(12), p(13), p(14),
			p(20), p(20), p(21),
			p(30), p(32), p(32), p(33), p(34), p(35), p(30), p(30), p(36), p(37),
			p(40), p(40), p(41),
			p(50), p(50), {},
		},
		Strings: []string{"prep failed: see 'log'"},
		Templates: []lang.Template{
			tmpl(lang.Part{Lit: "prep failed in "}, lang.Part{Ref: ref("context.dir", at(f, 14, 20), lang.PathElem{Key: "context"}, lang.PathElem{Key: "dir"})},
				lang.Part{Lit: ": costs $5, see ${{log}} and ${{open"}),
		},
		Nodes: []Node{
			{ID: "Main", Entry: 0, Pos: at(f, 2, 5)},
			{ID: "Sub", Entry: 5, Inherit: true, StaticMemory: `{"k":1,"l":[true,null]}`, Pos: at(f, 45, 5)},
		},
		Blocks: []Block{
			{ID: "Prep", Node: 0, Kind: KindCommand, Start: 0, Dispatch: 3, MaxVisits: 3, Pos: p(10),
				When: &Cond{Op: CondAll, Pos: p(11), Sub: []Cond{
					{Op: CondStepOK, Name: "Init", Pos: p(11)},
					{Op: CondNot, Pos: p(11), Sub: []Cond{{Op: CondFileExists, X: tlit("stop.flag"), Pos: p(11)}}},
					{Op: CondAny, Pos: p(11), Sub: []Cond{
						{Op: CondEquals, X: &ctxRef, Y: tlit("dir-x"), Pos: p(11)},
						{Op: CondExitCode, Name: "Init", Cmp: "<=", Num: 2, Pos: p(11)},
						{Op: CondEnvSet, Name: "CI", Pos: p(11)},
						{Op: CondContains, X: tlit("abc"), Y: tlit("b"), Pos: p(11)},
						{Op: CondRegex, X: tlit("v1.2"), Y: tlit(`^v\d+`), Flags: "i", Pos: p(11)},
						{Op: CondNumber, X: tlit("3.5"), Y: tlit("2"), Cmp: ">", Pos: p(11)},
					}},
				}},
				Step: &Step{
					Command:    []lang.Template{lang.Lit("go"), lang.Lit("test"), ctxRef},
					Timeout:    12.5,
					Attempts:   3,
					BackoffSec: 0, HasBackoff: true,
					Env:     []EnvVar{{Name: "DIR", Val: ctxRef}, {Name: "EMPTY"}},
					Secrets: []string{"TOKEN"}, HasSecrets: true,
					WaitFor: &WaitFor{Glob: lang.Lit("out/*.txt"), TimeoutSec: 2, PollMs: 50, MinCount: 2},
					DependsOn: &DependsOn{Required: []lang.Template{lang.Lit("a.txt")}, Optional: []lang.Template{ctxRef},
						Inject: "content", Instruction: "read these", Position: "append"},
					InputFile:       tlit("in.txt"),
					OutputFile:      &ctxRef,
					OutputCapture:   "json",
					AllowParseError: true,
					AllowMissing:    []string{"context.dir"},
					PayloadMerge:    []string{"deep"},
				}},
			{ID: "Set", Node: 0, Kind: KindSetContext, Start: 7, Dispatch: 8, Pos: p(20),
				Set: []Field{
					{Key: "a.b", Val: TValue{Kind: TString, Str: ctxRef}},
					{Key: "n", Val: TValue{Kind: TNumber, Num: "1e3"}},
					{Key: "m", Val: TValue{Kind: TMap, Map: []Field{
						{Key: "t", Val: TValue{Kind: TBool, Bool: true}},
						{Key: "z", Val: TValue{Kind: TNull}},
						{Key: "l", Val: TValue{Kind: TList, List: []TValue{{Kind: TNumber, Num: "-2.5"}, {Kind: TString, Str: lang.Lit("s")}}}},
					}}},
				}},
			{ID: "Each", Node: 0, Kind: KindLoop, Start: 10, Dispatch: 17, Pos: p(30),
				Loop: &Loop{Items: TValue{Kind: TString, Str: itemsRef}, As: "file", Body: 11, Steps: []uint32{3}}},
			{ID: "Body", Node: 0, Kind: KindProvider, Start: 11, Dispatch: 12, Parent: 3, Pos: p(32), Agent: "coder",
				Step: &Step{
					Providers:       []string{"claude", "mock"},
					Prompt:          &itemsRef,
					PromptFile:      tlit("prompt.md"),
					ProviderParams:  []Field{{Key: "model", Val: TValue{Kind: TString, Str: lang.Lit("opus")}}},
					CommandOverride: []lang.Template{lang.Lit("claude"), lang.Lit("-p")},
					Transport:       &Transport{Mode: "argv", ArgvTemplate: []lang.Template{lang.Lit("--prompt"), lang.Lit("${PROMPT}")}},
					Validation:      "Answer",
					OutputType:      "json",
				}},
			{ID: "Review", Node: 0, Kind: KindInternal, Start: 20, Dispatch: 21, Pos: p(40),
				Step: &Step{Worker: "Internal:Echo"}},
			{ID: "SubStart", Node: 1, Kind: KindProvider, Start: 23, Dispatch: 24, Pos: p(50),
				Step: &Step{Worker: "writer", AI: &AIWorker{Key: "writer", Instructions: "write it", OutputType: "text",
					ProviderParams: []Field{{Key: "temperature", Val: TValue{Kind: TNumber, Num: "0.2"}}}}}},
		},
		Tables: []Table{
			{Block: 0, Entries: []TableEntry{{"SIGNAL:SUCCESS", 4}, {"SIGNAL:CALL", 5}}, Default: 6, HasDefault: true},
			{Block: 1, Entries: []TableEntry{{"SIGNAL:SUCCESS", 9}}},
			{Block: 3, Entries: []TableEntry{{"SIGNAL:SUCCESS", 13}, {"SIGNAL:BREAK", 14}, {"SIGNAL:FAILURE", 15}}, Default: 15, HasDefault: true},
			{Block: 2, Entries: []TableEntry{{"SIGNAL:SUCCESS", 18}, {"SIGNAL:FAILURE", 19}}, Default: 19, HasDefault: true},
			{Block: 4, Entries: []TableEntry{{"SIGNAL:SUCCESS", 22}}},
			{Block: 5, Default: 25, HasDefault: true},
		},
		StrictFlow: true,
		Context: &TValue{Kind: TMap, Map: []Field{
			{Key: "dir", Val: TValue{Kind: TString, Str: lang.Lit("src")}},
			{Key: "files", Val: TValue{Kind: TList, List: []TValue{{Kind: TString, Str: lang.Lit("a")}}}},
		}},
		Secrets:  []string{"TOKEN"},
		EnvAllow: []string{"HOME", "PATH"},
		Providers: []ProviderDef{
			{Name: "claude", Command: []string{"claude", "-p", "${PROMPT}", "--model", "${model}"},
				Defaults:  []Field{{Key: "model", Val: TValue{Kind: TString, Str: lang.Lit("sonnet")}}},
				Transport: &Transport{Mode: "stdin"}},
			{Name: "mock", Command: []string{"mock"}},
		},
		Agents:  []AgentDef{{Name: "coder", Providers: []string{"claude"}, Inbox: "inbox/coder"}},
		Schemas: []SchemaDef{{Name: "Answer", Schema: `{"type":"object"}`}},
		Config: lang.Config{TestCommand: []string{"go", "test", "./..."}, LintCommand: []string{"go", "vet"},
			BuildCommand: []string{"go", "build"}, Isolation: "worktree"},
	}
}

// oddProgram has awkward text: quotes, newlines, '@' and ';' in names,
// unusual positions, static memory that is not compact JSON, code before
// the first block.
func oddProgram() *Program {
	return &Program{
		Name: "odd \"name\"; @x", Format: "workflow", Source: "dir with space/odd.yaml", Entry: 1,
		Code: []Instr{
			{OpJump, 1, 0},
			{OpExec, 0, 0},
			{OpDispatch, 0, 0},
			{OpFail, 0, 0},
			{OpFail, 1, 0},
		},
		Pos: []source.Pos{
			{},
			at("dir with space/odd.yaml", 3, 1),
			at("-", 3, 1),
			at("C:\\a:b", 0, 0),
			{Line: -1, Col: 4},
		},
		Strings:   []string{"line1\nline2 \"q\" @ here ; semi", "ünï\tcode\x00"},
		Templates: []lang.Template{lang.Lit("line1\nline2 \"q\" @ here ; semi"), lang.Lit("ünï\tcode\x00")},
		Nodes:     []Node{{ID: "n;@\"", Entry: 0, StaticMemory: "{ \"spaced\": 1 }", Pos: at("a:1:2", 1, 1)}},
		Blocks: []Block{{ID: "b @ ; \"x\"", Node: 0, Kind: KindCommand, Start: 1, Dispatch: 2, Pos: at("odd.yaml", 3, 1),
			Step: &Step{Command: []lang.Template{lang.Lit("echo"), lang.Lit("a\nb")}}}},
		Tables: []Table{{Block: 0, Entries: []TableEntry{{"SIGNAL:SUCCESS", 3}, {"odd signal \"@\";", 4}}}},
	}
}

// bigProgram has n command blocks in one node, each with a transition
// table; the last ends the run.
func bigProgram(n int) *Program {
	p := &Program{Name: "big", Format: "workflow", Source: "big.yaml"}
	p.Nodes = []Node{{ID: "big", Pos: at("big.yaml", 1, 1)}}
	for i := 0; i < n; i++ {
		pc := uint32(len(p.Code))
		pos := at("big.yaml", 10+i, 3)
		p.Code = append(p.Code, Instr{OpExec, uint32(i), 0}, Instr{OpDispatch, uint32(i), 0})
		if i == n-1 {
			p.Code = append(p.Code, Instr{Op: OpEnd})
		} else {
			p.Code = append(p.Code, Instr{OpJump, pc + 3, 0})
		}
		p.Pos = append(p.Pos, pos, pos, pos)
		p.Blocks = append(p.Blocks, Block{ID: fmt.Sprintf("step%d", i), Kind: KindCommand, Start: pc, Dispatch: pc + 1, Pos: pos,
			Step: &Step{Command: []lang.Template{lang.Lit("echo"), lang.Lit(fmt.Sprint(i))}}})
		p.Tables = append(p.Tables, Table{Block: uint32(i), Entries: []TableEntry{{"SIGNAL:SUCCESS", pc + 2}}, Default: pc + 2, HasDefault: true})
	}
	return p
}
