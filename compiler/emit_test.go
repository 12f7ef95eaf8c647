package compiler

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"smith/compiler/ir"
	"smith/internal/goldenfile"
	"smith/isa"
	"smith/lang"
	"smith/source"
)

// Builders of hand-made IR programs. prog assigns positions in document
// order and a run-time spec to every block, as the lowering does.

// sig expands a short signal name: "SUCCESS" is SIGNAL:SUCCESS.
func sig(s string) string {
	if strings.Contains(s, ":") {
		return s
	}
	return "SIGNAL:" + s
}

// on returns a transition: args are the target (Jump, Call) or message
// (Fail), and for Call the return_to block.
func on(s string, a ir.ActionKind, args ...string) *ir.Transition {
	t := &ir.Transition{Signal: sig(s), Action: a}
	switch a {
	case ir.Jump:
		t.Target = args[0]
	case ir.Call:
		t.Target = args[0]
		if len(args) > 1 {
			t.ReturnTo = args[1]
		}
	case ir.Fail:
		t.Msg = args[0]
	}
	return t
}

// failRef returns a Fail transition whose message template is msg, a
// space and the reference ${ref} (a one-key path).
func failRef(s, msg, ref string) *ir.Transition {
	t := on(s, ir.Fail, msg+" ${"+ref+"}")
	tm := lang.Template{Parts: []lang.Part{{Lit: msg + " "}, {Ref: &lang.Ref{Raw: ref, Path: []lang.PathElem{{Key: ref}}}}}}
	t.MsgTmpl = &tm
	return t
}

func cmd(id string, ts ...*ir.Transition) *ir.Block {
	return &ir.Block{ID: id, Kind: isa.KindCommand, Worker: "command", Transitions: ts,
		Signals: []string{lang.SigSuccess, lang.SigFailure, lang.SigTimeout}}
}

func aiStep(id string, ts ...*ir.Transition) *ir.Block {
	return &ir.Block{ID: id, Kind: isa.KindProvider, Worker: "provider:mock", AI: true, Transitions: ts,
		Signals: []string{lang.SigSuccess, lang.SigFailure, lang.SigTimeout}}
}

func setCtx(id string, ts ...*ir.Transition) *ir.Block {
	return &ir.Block{ID: id, Kind: isa.KindSetContext, Worker: "set_context", Transitions: ts,
		Signals: []string{lang.SigSuccess}}
}

func loop(id string, body []*ir.Block, ts ...*ir.Transition) *ir.Block {
	return &ir.Block{ID: id, Kind: isa.KindLoop, Worker: "for_each", Body: body, Transitions: ts,
		Signals: []string{lang.SigSuccess, lang.SigFailure}}
}

func visits(n int, b *ir.Block) *ir.Block {
	b.MaxVisits = n
	b.Signals = append(b.Signals, lang.SigMaxVisits)
	return b
}

func when(b *ir.Block) *ir.Block {
	b.HasWhen = true
	b.Signals = append(b.Signals, lang.SigSkipped)
	return b
}

func node(id, entry string, bs ...*ir.Block) *ir.Node {
	return &ir.Node{ID: id, Entry: entry, Blocks: bs}
}

// prog finishes a program: positions (one line per node, block and
// transition, in document order) and block specs.
func prog(f ir.Format, entry string, nodes ...*ir.Node) *ir.Program {
	file := "t.json"
	if f == ir.YAML {
		file = "t.yaml"
	}
	p := &ir.Program{Name: "t", Format: f, File: file, Entry: entry, Nodes: nodes,
		Data: &isa.Program{Name: "t", Format: f.String(), Source: file}}
	line := 0
	next := func() source.Pos { line++; return source.Pos{File: file, Line: line, Col: 3} }
	var walk func(bs []*ir.Block)
	walk = func(bs []*ir.Block) {
		for _, b := range bs {
			b.Pos = next()
			spec := &isa.Block{ID: b.ID, Pos: b.Pos, MaxVisits: b.MaxVisits}
			if b.HasWhen {
				spec.When = &isa.Cond{Op: isa.CondEnvSet, Name: "GO", Pos: b.Pos}
			}
			switch b.Kind {
			case isa.KindCommand:
				spec.Step = &isa.Step{Command: []lang.Template{lang.Lit("true")}}
			case isa.KindProvider:
				spec.Step = &isa.Step{Providers: []string{"mock"}, Prompt: &lang.Template{}}
			case isa.KindSetContext:
				spec.Set = []isa.Field{{Key: "k", Val: isa.TValue{Kind: isa.TBool, Bool: true}}}
			case isa.KindLoop:
				spec.Loop = &isa.Loop{Items: isa.TValue{Kind: isa.TList}, As: "item"}
			}
			b.Spec = spec
			walk(b.Body)
			for _, t := range b.Transitions {
				t.Pos = next()
			}
		}
	}
	for _, n := range nodes {
		n.Pos = next()
		walk(n.Blocks)
	}
	return p
}

// yamlProg is a workflow: one node, entered at its first block.
func yamlProg(bs ...*ir.Block) *ir.Program {
	return prog(ir.YAML, bs[0].ID, node("t", bs[0].ID, bs...))
}

// render prints a program's code compactly: operands by name, a DISPATCH
// with its table, signals without their SIGNAL: prefix.
func render(p *isa.Program) string {
	var b strings.Builder
	name := func(k isa.Operand, v uint32) string {
		switch {
		case k == isa.PC:
			return fmt.Sprintf("%04d", v)
		case k == isa.BlockIdx && int(v) < len(p.Blocks):
			return p.Blocks[v].ID
		case k == isa.NodeIdx && int(v) < len(p.Nodes):
			return p.Nodes[v].ID
		case k == isa.TemplateIdx && int(v) < len(p.Templates):
			return strconv.Quote(p.Templates[v].Source())
		case k == isa.TableIdx && int(v) < len(p.Tables):
			t := p.Tables[v]
			var es []string
			for _, e := range t.Entries {
				es = append(es, fmt.Sprintf("%s %04d", strings.TrimPrefix(e.Signal, "SIGNAL:"), e.PC))
			}
			if t.HasDefault {
				es = append(es, fmt.Sprintf("default %04d", t.Default))
			}
			return fmt.Sprintf("[%s]", strings.Join(es, ", "))
		}
		return fmt.Sprintf("?%s %d", k, v)
	}
	for pc, in := range p.Code {
		info, _ := in.Op.Info()
		var args []string
		if info.A != isa.NoOperand {
			args = append(args, name(info.A, in.A))
		}
		if info.B != isa.NoOperand {
			args = append(args, name(info.B, in.B))
		}
		fmt.Fprintf(&b, "%04d %s %s\n", pc, in.Op, strings.Join(args, ", "))
	}
	return strings.ReplaceAll(b.String(), " \n", "\n")
}

func mustGenerate(t *testing.T, p *ir.Program) *isa.Program {
	t.Helper()
	out, err := Generate(p)
	if err != nil {
		t.Fatalf("Generate(%s) error: %v", p.Name, err)
	}
	if err := out.Verify(); err != nil {
		t.Fatalf("Generate(%s) does not verify: %v", p.Name, err)
	}
	return out
}

func TestGenerateCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    func() *ir.Program
		want string
	}{
		{
			name: "linear workflow",
			p: func() *ir.Program {
				return yamlProg(
					cmd("a", on("SUCCESS", ir.Jump, "b"), on("FAILURE", ir.Fail, "a failed"),
						on("TIMEOUT", ir.Fail, "a failed"), on("FAIL_DEFAULT", ir.Fail, "a failed")),
					cmd("b", on("SUCCESS", ir.Jump, "c"), on("FAILURE", ir.Fail, "b failed"), on("FAIL_DEFAULT", ir.Fail, "b failed")),
					cmd("c", on("SUCCESS", ir.End), on("FAIL_DEFAULT", ir.Fail, "c failed")),
				)
			},
			want: `
0000 EXEC a
0001 DISPATCH [SUCCESS 0002, FAILURE 0003, TIMEOUT 0003, default 0003]
0002 JUMP 0004
0003 FAIL "a failed"
0004 EXEC b
0005 DISPATCH [SUCCESS 0006, FAILURE 0007, default 0007]
0006 JUMP 0008
0007 FAIL "b failed"
0008 EXEC c
0009 DISPATCH [SUCCESS 0010, default 0011]
0010 END
0011 FAIL "c failed"
`,
		},
		{
			name: "when and max_visits, set_context",
			p: func() *ir.Program {
				return yamlProg(
					visits(3, when(cmd("g", on("SUCCESS", ir.Jump, "s"), on("SKIPPED", ir.Jump, "s"),
						on("MAX_VISITS", ir.Fail, "too many"), on("FAIL_DEFAULT", ir.Fail, "too many")))),
					setCtx("s", on("SUCCESS", ir.End)),
				)
			},
			want: `
0000 VISIT g, 0003
0001 WHEN g, 0003
0002 EXEC g
0003 DISPATCH [SUCCESS 0004, SKIPPED 0004, MAX_VISITS 0005, default 0005]
0004 JUMP 0006
0005 FAIL "too many"
0006 SET_CONTEXT s
0007 DISPATCH [SUCCESS 0008]
0008 END
`,
		},
		{
			name: "nested for_each with break, continue and fail",
			p: func() *ir.Program {
				return yamlProg(
					loop("outer", []*ir.Block{
						cmd("x", on("SUCCESS", ir.Jump, "inner"), on("FAILURE", ir.LoopBreak)),
						loop("inner", []*ir.Block{
							cmd("y", on("SUCCESS", ir.LoopNext), on("FAILURE", ir.LoopFail), on("DONE", ir.LoopBreak)),
						}, on("SUCCESS", ir.Jump, "z"), on("FAILURE", ir.LoopFail)),
						cmd("z", on("SUCCESS", ir.LoopNext), on("FAIL_DEFAULT", ir.LoopFail)),
					}, on("SUCCESS", ir.End), on("FAILURE", ir.Fail, "loop failed")),
				)
			},
			want: `
0000 LOOP_BEGIN outer, 0020
0001 EXEC x
0002 DISPATCH [SUCCESS 0003, FAILURE 0004]
0003 JUMP 0005
0004 LOOP_BREAK outer, 0020
0005 LOOP_BEGIN inner, 0012
0006 EXEC y
0007 DISPATCH [SUCCESS 0008, FAILURE 0009, DONE 0010]
0008 JUMP 0011
0009 LOOP_FAIL inner, 0012
0010 LOOP_BREAK inner, 0012
0011 LOOP_NEXT inner, 0006
0012 DISPATCH [SUCCESS 0013, FAILURE 0014]
0013 JUMP 0015
0014 LOOP_FAIL outer, 0020
0015 EXEC z
0016 DISPATCH [SUCCESS 0017, default 0018]
0017 JUMP 0019
0018 LOOP_FAIL outer, 0020
0019 LOOP_NEXT outer, 0001
0020 DISPATCH [SUCCESS 0021, FAILURE 0022]
0021 END
0022 FAIL "loop failed"
`,
		},
		{
			name: "empty loop body",
			p: func() *ir.Program {
				return yamlProg(loop("e", nil, on("SUCCESS", ir.End), on("FAILURE", ir.Fail, "x")))
			},
			want: `
0000 LOOP_BEGIN e, 0002
0001 LOOP_NEXT e, 0001
0002 DISPATCH [SUCCESS 0003, FAILURE 0004]
0003 END
0004 FAIL "x"
`,
		},
		{
			name: "manifest actions",
			p: func() *ir.Program {
				return prog(ir.Manifest, "Plan",
					node("Main", "Plan",
						aiStep("Plan", on("SUCCESS", ir.Jump, "Build"), on("SIGNAL:NEEDS_INFO", ir.Call, "Sub"),
							on("SIGNAL:ASK", ir.Call, "Sub", "Build"), on("SIGNAL:AGAIN", ir.Call, "Sub", "Plan"),
							on("FAIL_DEFAULT", ir.Halt)),
						cmd("Build", on("SUCCESS", ir.End), on("FAILURE", ir.Fail, "build broke"),
							on("TIMEOUT", ir.Fail, "build broke"), on("FAIL_DEFAULT", ir.Halt))),
					node("Sub", "Work",
						cmd("Work", on("SUCCESS", ir.Return), on("FAIL_DEFAULT", ir.Fail, "sub failed"))),
				)
			},
			want: `
0000 VISIT Plan, 0002
0001 EXEC Plan
0002 DISPATCH [SUCCESS 0003, NEEDS_INFO 0004, ASK 0005, AGAIN 0004, default 0006]
0003 JUMP 0007
0004 CALL Sub, 0000
0005 CALL Sub, 0007
0006 HALT_AND_FLAG Plan
0007 VISIT Build, 0009
0008 EXEC Build
0009 DISPATCH [SUCCESS 0010, FAILURE 0011, TIMEOUT 0011, default 0012]
0010 END
0011 FAIL "build broke"
0012 HALT_AND_FLAG Build
0013 VISIT Work, 0015
0014 EXEC Work
0015 DISPATCH [SUCCESS 0016, default 0017]
0016 RETURN
0017 FAIL "sub failed"
`,
		},
		{
			name: "manifest jump backwards, entry in the second node",
			p: func() *ir.Program {
				return prog(ir.Manifest, "Fix",
					node("A", "Test",
						cmd("Test", on("SUCCESS", ir.End), on("FAILURE", ir.Jump, "Test"), on("SIGNAL:FLAKY", ir.Jump, "Test"))),
					node("B", "Fix",
						cmd("Fix", on("SUCCESS", ir.Jump, "Test"), on("FAIL_DEFAULT", ir.Jump, "Fix"))),
				)
			},
			want: `
0000 VISIT Test, 0002
0001 EXEC Test
0002 DISPATCH [SUCCESS 0003, FAILURE 0004, FLAKY 0004]
0003 END
0004 JUMP 0000
0005 VISIT Fix, 0007
0006 EXEC Fix
0007 DISPATCH [SUCCESS 0008, default 0009]
0008 JUMP 0000
0009 JUMP 0005
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := tt.p()
			got := render(mustGenerate(t, p))
			want := strings.TrimPrefix(tt.want, "\n")
			if d := goldenfile.FirstDiff(got, want); d != "" {
				t.Errorf("Generate(%s) code differs at %s\ngot:\n%s", tt.name, d, got)
			}
		})
	}
}

// TestGeneratePools checks everything besides the code: entry, pools,
// block layout fields, positions and run-wide data.
func TestGeneratePools(t *testing.T) {
	t.Parallel()
	p := prog(ir.Manifest, "Fix",
		node("A", "Test",
			cmd("Test", on("SUCCESS", ir.End), on("FAILURE", ir.Fail, "no"), on("TIMEOUT", ir.Fail, "no")),
			loop("L", []*ir.Block{
				cmd("In", on("SUCCESS", ir.LoopNext), on("FAILURE", ir.Fail, "no")),
				loop("Empty", nil, on("SUCCESS", ir.LoopNext)),
			}, on("SUCCESS", ir.Jump, "Test"), failRef("FAILURE", "no", "context.k"))),
		node("B", "Fix",
			cmd("Fix", on("SUCCESS", ir.Call, "A", "L"), on("FAIL_DEFAULT", ir.Halt))),
	)
	p.Nodes[1].Inherit = true
	p.Nodes[1].StaticMemory = `{"rules":"x"}`
	data := p.Data
	data.StrictFlow = true
	data.Secrets = []string{"TOKEN"}
	data.EnvAllow = []string{"HOME"}
	data.Config.Isolation = "none"
	data.Schemas = []isa.SchemaDef{{Name: "S", Schema: "{}"}}

	out := mustGenerate(t, p)

	var b strings.Builder
	fmt.Fprintf(&b, "program %s %s %s entry %04d strict=%t secrets=%v env=%v isolation=%s schemas=%d\n",
		out.Name, out.Format, out.Source, out.Entry, out.StrictFlow, out.Secrets, out.EnvAllow, out.Config.Isolation, len(out.Schemas))
	fmt.Fprintf(&b, "strings %q\n", out.Strings)
	for i, tm := range out.Templates {
		fmt.Fprintf(&b, "template %d %q\n", i, tm.Source())
	}
	for _, n := range out.Nodes {
		fmt.Fprintf(&b, "node %s entry %d inherit=%t memory=%s @ %s\n", n.ID, n.Entry, n.Inherit, n.StaticMemory, n.Pos)
	}
	for i, bl := range out.Blocks {
		fmt.Fprintf(&b, "block %d %s %s node %d start %04d dispatch %04d parent %d", i, bl.ID, bl.Kind, bl.Node, bl.Start, bl.Dispatch, bl.Parent)
		if bl.Loop != nil {
			fmt.Fprintf(&b, " body %04d steps %v as %s", bl.Loop.Body, bl.Loop.Steps, bl.Loop.As)
		}
		fmt.Fprintf(&b, " table.block %d\n", out.Tables[i].Block)
	}
	for pc := range out.Code {
		fmt.Fprintf(&b, "%04d %s @ %s\n", pc, out.Code[pc].Op, out.Pos[pc])
	}
	want := `program t manifest t.json entry 0021 strict=true secrets=[TOKEN] env=[HOME] isolation=none schemas=1
strings []
template 0 "no"
template 1 "no ${context.k}"
node A entry 0 inherit=false memory= @ t.json:1:3
node B entry 4 inherit=true memory={"rules":"x"} @ t.json:14:3
block 0 Test command node 0 start 0000 dispatch 0002 parent 0 table.block 0
block 1 L loop node 0 start 0005 dispatch 0018 parent 0 body 0007 steps [2 3] as item table.block 1
block 2 In command node 0 start 0007 dispatch 0009 parent 2 table.block 2
block 3 Empty loop node 0 start 0012 dispatch 0015 parent 2 body 0014 steps [] as item table.block 3
block 4 Fix command node 1 start 0021 dispatch 0023 parent 0 table.block 4
0000 VISIT @ t.json:2:3
0001 EXEC @ t.json:2:3
0002 DISPATCH @ t.json:2:3
0003 END @ t.json:3:3
0004 FAIL @ t.json:4:3
0005 VISIT @ t.json:6:3
0006 LOOP_BEGIN @ t.json:6:3
0007 VISIT @ t.json:7:3
0008 EXEC @ t.json:7:3
0009 DISPATCH @ t.json:7:3
0010 JUMP @ t.json:8:3
0011 FAIL @ t.json:9:3
0012 VISIT @ t.json:10:3
0013 LOOP_BEGIN @ t.json:10:3
0014 LOOP_NEXT @ t.json:10:3
0015 DISPATCH @ t.json:10:3
0016 JUMP @ t.json:11:3
0017 LOOP_NEXT @ t.json:6:3
0018 DISPATCH @ t.json:6:3
0019 JUMP @ t.json:12:3
0020 FAIL @ t.json:13:3
0021 VISIT @ t.json:15:3
0022 EXEC @ t.json:15:3
0023 DISPATCH @ t.json:15:3
0024 CALL @ t.json:16:3
0025 HALT_AND_FLAG @ t.json:17:3
`
	got := b.String()
	if d := goldenfile.FirstDiff(got, want); d != "" {
		t.Errorf("Generate pools differ at %s\ngot:\n%s", d, got)
	}
	// The input's specs are copied, not changed.
	if spec := p.Nodes[0].Blocks[1].Spec; spec.Start != 0 || spec.Loop.Steps != nil {
		t.Errorf("Generate changed the IR's spec of L: start %d, steps %v", spec.Start, spec.Loop.Steps)
	}
}

func TestGenerateErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    func() *ir.Program
		want string
	}{
		{"unknown jump target", func() *ir.Program {
			return yamlProg(cmd("a", on("SUCCESS", ir.Jump, "nope")))
		}, `block "a" jumps to unknown block "nope"`},
		{"unknown node", func() *ir.Program {
			return yamlProg(cmd("a", on("SUCCESS", ir.Call, "Nope")))
		}, `block "a" calls unknown node "Nope"`},
		{"unknown return_to", func() *ir.Program {
			return yamlProg(cmd("a", on("SUCCESS", ir.Call, "t", "nope")))
		}, `block "a" returns to unknown block "nope"`},
		{"loop action outside a loop", func() *ir.Program {
			return yamlProg(cmd("a", on("SUCCESS", ir.LoopBreak)))
		}, `block "a" uses LOOP_BREAK outside a loop`},
		{"duplicate block", func() *ir.Program {
			return yamlProg(cmd("a", on("SUCCESS", ir.End)), cmd("a", on("SUCCESS", ir.End)))
		}, `block "a" is defined twice`},
		{"unknown entry", func() *ir.Program {
			p := yamlProg(cmd("a", on("SUCCESS", ir.End)))
			p.Entry = "zz"
			return p
		}, `entry block "zz" is unknown`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Generate(tt.p())
			if err == nil || err.Error() != tt.want {
				t.Errorf("Generate(%s) = %v, want error %q", tt.name, err, tt.want)
			}
		})
	}
}

func TestEmitPanicsOnMisuse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		f    func(e *emitter)
	}{
		{"wrong operand kind", func(e *emitter) { e.emit(source.Pos{}, isa.OpJump, blockArg(0), arg{}) }},
		{"missing operand", func(e *emitter) { e.emit(source.Pos{}, isa.OpCall, nodeArg(0), arg{}) }},
		{"extra operand", func(e *emitter) { e.emit(source.Pos{}, isa.OpEnd, blockArg(0), arg{}) }},
		{"invalid opcode", func(e *emitter) { e.emit(source.Pos{}, isa.OpInvalid, arg{}, arg{}) }},
		{"label bound twice", func(e *emitter) { e.bind(label{lblStart, 0}); e.bind(label{lblStart, 0}) }},
		{"label never bound", func(e *emitter) {
			e.emit(source.Pos{}, isa.OpJump, pcArg(label{lblStart, 7}), arg{})
			e.resolve()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				r := recover()
				if s, _ := r.(string); !strings.HasPrefix(s, "internal error: ") {
					t.Errorf("emitter %s: panic %v, want one starting \"internal error: \"", tt.name, r)
				}
			}()
			tt.f(newEmitter(4))
		})
	}
}

// bigManifest is a manifest-like program of n blocks in n/10 nodes: each
// block jumps to the next, retries itself, calls the next node, and halts
// by default.
func bigManifest(n int) *ir.Program {
	var nodes []*ir.Node
	for k := 0; k < n/10; k++ {
		nd := node(fmt.Sprintf("N%d", k), fmt.Sprintf("B%d", k*10))
		for j := 0; j < 10; j++ {
			i := k*10 + j
			next := on("SUCCESS", ir.Jump, fmt.Sprintf("B%d", (i+1)%n))
			if i == n-1 {
				next = on("SUCCESS", ir.End)
			}
			b := cmd(fmt.Sprintf("B%d", i), next,
				on("VALIDATION_FAIL", ir.Jump, fmt.Sprintf("B%d", i)),
				on("SIGNAL:NEED", ir.Call, fmt.Sprintf("N%d", (k+1)%(n/10))),
				on("FAIL_DEFAULT", ir.Halt))
			if j == 9 {
				b.Transitions = append(b.Transitions, on("SIGNAL:DONE", ir.Return))
			}
			if j%3 == 0 {
				b.AI = true
				b.MaxVisits = 5
			}
			nd.Blocks = append(nd.Blocks, b)
		}
		nodes = append(nodes, nd)
	}
	return prog(ir.Manifest, "B0", nodes...)
}

// bigWorkflow is a YAML-like program of n steps, with a for_each every 50
// steps holding 5 more.
func bigWorkflow(n int) *ir.Program {
	var bs []*ir.Block
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("s%d", i)
		next := on("SUCCESS", ir.End)
		if i < n-1 {
			next = on("SUCCESS", ir.Jump, fmt.Sprintf("s%d", i+1))
		}
		fail := on("FAIL_DEFAULT", ir.Fail, "step '"+id+"' failed")
		if i%50 == 0 {
			var body []*ir.Block
			for j := 0; j < 5; j++ {
				bid := fmt.Sprintf("%s_%d", id, j)
				bnext := on("SUCCESS", ir.LoopNext)
				if j < 4 {
					bnext = on("SUCCESS", ir.Jump, fmt.Sprintf("%s_%d", id, j+1))
				}
				body = append(body, cmd(bid, bnext, on("FAILURE", ir.LoopFail), on("TIMEOUT", ir.LoopFail)))
			}
			bs = append(bs, loop(id, body, next, fail))
			continue
		}
		bs = append(bs, when(cmd(id, next, on("SKIPPED", next.Action, next.Target), fail)))
	}
	return yamlProg(bs...)
}

func BenchmarkGenerate(b *testing.B) {
	for _, bb := range []struct {
		name string
		p    *ir.Program
	}{
		{"manifest10000", bigManifest(10000)},
		{"workflow5000", bigWorkflow(5000)},
	} {
		b.Run(bb.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Generate(bb.p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkCheckGraph(b *testing.B) {
	for _, bb := range []struct {
		name string
		p    *ir.Program
	}{
		{"manifest10000", bigManifest(10000)},
		{"workflow5000", bigWorkflow(5000)},
	} {
		b.Run(bb.name, func(b *testing.B) {
			for b.Loop() {
				CheckGraph(bb.p)
			}
		})
	}
}

// TestBigPrograms checks that the benchmark inputs compile, verify and
// pass the graph checks, so the benchmarks measure the full path.
func TestBigPrograms(t *testing.T) {
	t.Parallel()
	for _, p := range []*ir.Program{bigManifest(200), bigWorkflow(120)} {
		mustGenerate(t, p)
		if ds := CheckGraph(p); ds.HasErrors() {
			t.Errorf("CheckGraph(big %s) = %v, want no errors", p.Format, ds)
		}
	}
}

func ExampleGenerate() {
	p := &ir.Program{Name: "hello", Format: ir.YAML, Entry: "Say", Nodes: []*ir.Node{{
		ID: "hello", Entry: "Say",
		Blocks: []*ir.Block{{
			ID: "Say", Kind: isa.KindCommand, Worker: "command",
			Transitions: []*ir.Transition{
				{Signal: lang.SigSuccess, Action: ir.End},
				{Signal: lang.SigFailDefault, Action: ir.Fail, Msg: "step 'Say' failed"},
			},
		}},
	}}}
	prog, err := Generate(p)
	if err != nil {
		fmt.Println(err)
		return
	}
	for pc, in := range prog.Code {
		fmt.Printf("%04d %-8s %d %d\n", pc, in.Op, in.A, in.B)
	}
	fmt.Println(prog.Tables[0].Entries, prog.Tables[0].Default, prog.Templates[0].Source())
	// Output:
	// 0000 EXEC     0 0
	// 0001 DISPATCH 0 0
	// 0002 END      0 0
	// 0003 FAIL     0 0
	// [{SIGNAL:SUCCESS 2}] 3 step 'Say' failed
}
