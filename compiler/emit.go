package compiler

import (
	"fmt"

	"smith/compiler/ir"
	"smith/isa"
	"smith/source"
)

// Generate compiles a lowered program to bytecode. Every block gets the
// shape isa/doc.go describes:
//
//	start:    VISIT b, dispatch   (max_visits > 0)
//	          WHEN b, dispatch    (a condition)
//	          EXEC b | SET_CONTEXT b | LOOP_BEGIN b, dispatch + body + LOOP_NEXT b, body
//	dispatch: DISPATCH t
//	          one action instruction per distinct action of the block's transitions
//
// Blocks are laid out in document order, a loop's body right after its
// LOOP_BEGIN; block b's transition table is Tables[b]. Code addresses are
// symbolic while the code is laid out and resolved in one pass afterwards.
//
// Generate expects a program that the lowering accepted: a reference to an
// unknown block or node, or a loop action outside a loop, is a compiler bug,
// returned as an error that starts "internal error:".
func Generate(p *ir.Program) (*isa.Program, error) {
	return generate(flatten(p))
}

// generate is Generate on a program laid out by flatten.
func generate(fp *flatProgram) (*isa.Program, error) {
	p := fp.p
	if len(fp.dups) > 0 {
		return nil, fmt.Errorf("block %q is defined twice", fp.dups[0])
	}
	out, err := programHeader(p)
	if err != nil {
		return nil, err
	}
	n := len(fp.blocks)
	out.Blocks = make([]isa.Block, n)
	out.Tables = make([]isa.Table, n)
	for i, fb := range fp.blocks {
		if out.Blocks[i], err = blockSpec(fb); err != nil {
			return nil, err
		}
	}
	out.Nodes = make([]isa.Node, len(p.Nodes))
	for i, node := range p.Nodes {
		entry, ok := fp.block(node.Entry)
		if !ok || fp.blocks[entry].node != i {
			return nil, fmt.Errorf("node %q has entry block %q, which is not one of its blocks", node.ID, node.Entry)
		}
		out.Nodes[i] = isa.Node{ID: node.ID, Entry: uint32(entry), Inherit: node.Inherit, StaticMemory: node.StaticMemory, Pos: node.Pos}
	}
	entry, ok := fp.block(p.Entry)
	if !ok {
		return nil, fmt.Errorf("entry block %q is unknown", p.Entry)
	}

	// Each block has at most VISIT, WHEN, its own instruction, DISPATCH and
	// one action per transition (a loop or branch end one more).
	size := 8
	for _, fb := range fp.blocks {
		size += 5 + len(fb.b.Transitions) + len(fb.b.Branches)
	}
	l := &layout{fp: fp, e: newEmitter(size), out: out, templates: map[string]uint32{}}
	for i := 0; i < n; {
		if i, err = l.layoutBlock(i); err != nil {
			return nil, err
		}
	}
	out.Code, out.Pos = l.e.resolve()
	out.Entry = out.Blocks[entry].Start
	return out, nil
}

// programHeader returns a Program holding p's name, format, source and the
// run-wide data the lowering left in p.Data.
func programHeader(p *ir.Program) (*isa.Program, error) {
	out := &isa.Program{}
	if d := p.Data; d != nil {
		out.StrictFlow = d.StrictFlow
		out.Context = d.Context
		out.Secrets = d.Secrets
		out.EnvAllow = d.EnvAllow
		out.Env = d.Env
		out.Providers = d.Providers
		out.Agents = d.Agents
		out.Schemas = d.Schemas
		out.Config = d.Config
		out.Name, out.Format, out.Source = d.Name, d.Format, d.Source
	}
	if out.Name == "" {
		out.Name = p.Name
	}
	if out.Format == "" {
		out.Format = p.Format.String()
	}
	if out.Source == "" {
		out.Source = p.File
	}
	return out, nil
}

// An arg is an operand before layout is resolved: a pool index, or a label
// for a PC operand.
type arg struct {
	kind isa.Operand
	val  uint32 // the pool index (kind != PC)
	lbl  label  // the address (kind == PC)
}

func pcArg(l label) arg        { return arg{kind: isa.PC, lbl: l} }
func blockArg(i int) arg       { return arg{kind: isa.BlockIdx, val: uint32(i)} }
func nodeArg(i int) arg        { return arg{kind: isa.NodeIdx, val: uint32(i)} }
func tableArg(i int) arg       { return arg{kind: isa.TableIdx, val: uint32(i)} }
func templateArg(i uint32) arg { return arg{kind: isa.TemplateIdx, val: i} }

// pending is an instruction whose PC operands are still labels.
type pending struct {
	op   isa.Op
	a, b arg
}

// An emitter collects instructions with symbolic addresses and binds
// labels to the pc where they are defined.
type emitter struct {
	code []pending
	pos  []source.Pos
	// labels[kind][block] is the address of a bound label plus one (0:
	// not bound): a label names a block by its index, so a slice per
	// kind replaces a map of every label.
	labels [lblBody + 1][]uint32
}

func newEmitter(capacity int) *emitter {
	return &emitter{
		code: make([]pending, 0, capacity),
		pos:  make([]source.Pos, 0, capacity),
	}
}

// pc returns the address of the next instruction.
func (e *emitter) pc() uint32 { return uint32(len(e.code)) }

// bind defines l as the address of the next instruction.
func (e *emitter) bind(l label) {
	tab := &e.labels[l.kind]
	if l.block >= len(*tab) {
		*tab = append(*tab, make([]uint32, l.block+1-len(*tab))...)
	}
	if (*tab)[l.block] != 0 {
		panic(fmt.Sprintf("internal error: label %v bound twice", l))
	}
	(*tab)[l.block] = e.pc() + 1
}

// emit appends one instruction. Operand kinds must be the opcode's own.
func (e *emitter) emit(pos source.Pos, op isa.Op, a, b arg) {
	info, ok := op.Info()
	if !ok || op == isa.OpInvalid {
		panic(fmt.Sprintf("internal error: emit of undefined opcode %s", op))
	}
	if a.kind != info.A || b.kind != info.B {
		panic(fmt.Sprintf("internal error: %s takes operands (%s, %s), got (%s, %s)", op, info.A, info.B, a.kind, b.kind))
	}
	e.code = append(e.code, pending{op, a, b})
	e.pos = append(e.pos, pos)
}

// resolve replaces every label by its address.
func (e *emitter) resolve() ([]isa.Instr, []source.Pos) {
	code := make([]isa.Instr, len(e.code))
	for i, in := range e.code {
		code[i] = isa.Instr{Op: in.op, A: e.value(in.a), B: e.value(in.b)}
	}
	return code, e.pos
}

func (e *emitter) value(a arg) uint32 {
	if a.kind != isa.PC {
		return a.val
	}
	if tab := e.labels[a.lbl.kind]; a.lbl.block < len(tab) && tab[a.lbl.block] != 0 {
		return tab[a.lbl.block] - 1
	}
	panic(fmt.Sprintf("internal error: label %v is never bound", a.lbl))
}
