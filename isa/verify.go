package isa

import (
	"fmt"
	"reflect"
	"strconv"

	"smith/source"
)

// A fault is one verification failure: the pool it concerns ("code",
// "nodes", "blocks", "tables", or "" for the program itself) and the index
// of the entry in it, a data path ("code[3].a", "blocks[2].start") and a
// message. Verify turns faults into E_BYTECODE diagnostics at program
// positions; Assemble turns them into E_PARSE diagnostics at positions of
// the assembly text.
type fault struct {
	pool string
	idx  int
	path string
	msg  string
}

// Operand decodes operand value v of kind k: it checks that v indexes an
// existing entry of the pool (or of Code) that k names, and returns a short
// description of that entry for listings (`block "Prep"`, `"Prep failed"`,
// `table 0 (block "Prep")`, a template as its quoted source text
// `"key ${context.k} rejected"`; "" for a pc or for no operand). Together with
// checkOperand, which Verify uses on its own, it is the one operand
// decoder: Verify, the disassembler, the assembler and the VM's error
// messages use it. NoOperand accepts only 0.
func (p *Program) Operand(k Operand, v uint32) (string, error) {
	if err := p.checkOperand(k, v); err != nil {
		return "", err
	}
	switch k {
	case NodeIdx:
		return "node " + strconv.Quote(p.Nodes[v].ID), nil
	case BlockIdx:
		return "block " + strconv.Quote(p.Blocks[v].ID), nil
	case TableIdx:
		t := p.Tables[v]
		if uint64(t.Block) < uint64(len(p.Blocks)) {
			return fmt.Sprintf("table %d (block %q)", v, p.Blocks[t.Block].ID), nil
		}
		return fmt.Sprintf("table %d", v), nil
	case StringIdx:
		return strconv.Quote(p.Strings[v]), nil
	case TemplateIdx:
		return strconv.Quote(p.Templates[v].Source()), nil
	}
	return "", nil
}

// checkOperand checks that operand value v of kind k is in range.
func (p *Program) checkOperand(k Operand, v uint32) error {
	limit := 0
	switch k {
	case NoOperand:
		if v != 0 {
			return fmt.Errorf("unused operand is %d, want 0", v)
		}
		return nil
	case PC:
		limit = len(p.Code)
	case NodeIdx:
		limit = len(p.Nodes)
	case BlockIdx:
		limit = len(p.Blocks)
	case TableIdx:
		limit = len(p.Tables)
	case StringIdx:
		limit = len(p.Strings)
	case TemplateIdx:
		limit = len(p.Templates)
	default:
		return fmt.Errorf("unknown operand kind %d", uint8(k))
	}
	if uint64(v) < uint64(limit) {
		return nil
	}
	if k == PC {
		return fmt.Errorf("pc %04d is out of range: the code has %d instructions", v, limit)
	}
	return fmt.Errorf("%s %d is out of range: the program has %d", k, v, limit)
}

// Verify checks that p is well formed: code is non-empty and has one
// position per instruction, every opcode is defined, every operand is in
// range for its kind (opcode table), unused operands are 0, and every index
// and pc in the pools (entries, block starts and dispatches, parents,
// transition tables, loop bodies) is in range. It returns nil, or a
// source.Diagnostics of E_BYTECODE errors, each at the source position of
// the instruction or pool entry concerned and naming its pc or data path.
func (p *Program) Verify() error {
	faults := p.verify()
	if len(faults) == 0 {
		return nil
	}
	ds := make(source.Diagnostics, 0, len(faults))
	for _, f := range faults {
		d := source.New(p.faultPos(f), source.EBytecode, "%s", f.msg)
		d.Path = f.path
		ds = append(ds, d)
	}
	return ds
}

// faultPos is the source position a fault is reported at: that of the
// instruction or pool entry it concerns (a table's is its block's).
func (p *Program) faultPos(f fault) source.Pos {
	switch {
	case f.pool == "code" && f.idx < len(p.Pos):
		return p.Pos[f.idx]
	case f.pool == "nodes":
		return p.Nodes[f.idx].Pos
	case f.pool == "blocks":
		return p.Blocks[f.idx].Pos
	case f.pool == "tables" && uint64(p.Tables[f.idx].Block) < uint64(len(p.Blocks)):
		return p.Blocks[p.Tables[f.idx].Block].Pos
	}
	return source.Pos{}
}

// verify returns every fault of p, in order: program, code, nodes, blocks,
// tables.
func (p *Program) verify() []fault {
	var fs []fault
	add := func(pool string, idx int, path string, format string, args ...any) {
		fs = append(fs, fault{pool, idx, path, fmt.Sprintf(format, args...)})
	}
	if len(p.Code) == 0 {
		add("", 0, "code", "the program has no code")
	}
	if len(p.Pos) != len(p.Code) {
		add("", 0, "pos", "the program has %d positions for %d instructions", len(p.Pos), len(p.Code))
	}
	if len(p.Code) > 0 && uint64(p.Entry) >= uint64(len(p.Code)) {
		add("", 0, "entry", "entry pc %04d is out of range: the code has %d instructions", p.Entry, len(p.Code))
	}
	for pc, in := range p.Code {
		info, ok := in.Op.Info()
		if !ok || in.Op == OpInvalid {
			add("code", pc, fmt.Sprintf("code[%d]", pc), "pc %04d: opcode %s is not defined", pc, in.Op)
			continue
		}
		if err := p.checkOperand(info.A, in.A); err != nil {
			add("code", pc, fmt.Sprintf("code[%d].a", pc), "pc %04d: %s operand A: %v", pc, info.Name, err)
		}
		if err := p.checkOperand(info.B, in.B); err != nil {
			add("code", pc, fmt.Sprintf("code[%d].b", pc), "pc %04d: %s operand B: %v", pc, info.Name, err)
		}
		if runsBlock(in.Op) && uint64(in.A) < uint64(len(p.Blocks)) {
			if b := p.Blocks[in.A]; b.Kind.Valid() && b.Kind.Info().Op != in.Op {
				add("code", pc, fmt.Sprintf("code[%d].a", pc), "pc %04d: %s cannot run block %q of kind %s", pc, info.Name, b.ID, b.Kind)
			}
		}
	}
	for i, n := range p.Nodes {
		if err := p.checkOperand(BlockIdx, n.Entry); err != nil {
			add("nodes", i, fmt.Sprintf("nodes[%d].entry", i), "node %q: entry: %v", n.ID, err)
		}
	}
	for i, b := range p.Blocks {
		at := func(field string) string { return fmt.Sprintf("blocks[%d].%s", i, field) }
		if !b.Kind.Valid() {
			add("blocks", i, at("kind"), "block %q: kind %d is not defined", b.ID, b.Kind)
		}
		if err := p.checkOperand(NodeIdx, b.Node); err != nil {
			add("blocks", i, at("node"), "block %q: node: %v", b.ID, err)
		}
		if err := p.checkOperand(PC, b.Start); err != nil {
			add("blocks", i, at("start"), "block %q: start: %v", b.ID, err)
		}
		if err := p.checkOperand(PC, b.Dispatch); err != nil {
			add("blocks", i, at("dispatch"), "block %q: dispatch: %v", b.ID, err)
		}
		if b.Parent > 0 {
			switch {
			case uint64(b.Parent-1) >= uint64(len(p.Blocks)):
				add("blocks", i, at("parent"), "block %q: parent block %d is out of range: the program has %d", b.ID, b.Parent-1, len(p.Blocks))
			case !p.Blocks[b.Parent-1].Kind.Info().Body:
				add("blocks", i, at("parent"), "block %q: parent block %q is not a loop or parallel block", b.ID, p.Blocks[b.Parent-1].ID)
			}
		}
		if b.Loop != nil {
			if err := p.checkOperand(PC, b.Loop.Body); err != nil {
				add("blocks", i, at("loop.body"), "block %q: loop body: %v", b.ID, err)
			}
			for j, s := range b.Loop.Steps {
				if err := p.checkOperand(BlockIdx, s); err != nil {
					add("blocks", i, at(fmt.Sprintf("loop.steps[%d]", j)), "block %q: loop step %d: %v", b.ID, j, err)
				}
			}
		}
		if b.Par != nil {
			for j, br := range b.Par.Branches {
				if err := p.checkOperand(PC, br.Start); err != nil {
					add("blocks", i, at(fmt.Sprintf("parallel.branches[%d].start", j)), "block %q: branch %q: %v", b.ID, br.Name, err)
				}
				for k, s := range br.Steps {
					if err := p.checkOperand(BlockIdx, s); err != nil {
						add("blocks", i, at(fmt.Sprintf("parallel.branches[%d].steps[%d]", j, k)), "block %q: branch %q step %d: %v", b.ID, br.Name, k, err)
					}
				}
			}
		}
	}
	for i, t := range p.Tables {
		at := func(field string) string { return fmt.Sprintf("tables[%d].%s", i, field) }
		if err := p.checkOperand(BlockIdx, t.Block); err != nil {
			add("tables", i, at("block"), "table %d: block: %v", i, err)
		}
		for j, e := range t.Entries {
			if err := p.checkOperand(PC, e.PC); err != nil {
				add("tables", i, at(fmt.Sprintf("entries[%d]", j)), "table %d: signal %q: %v", i, e.Signal, err)
			}
		}
		switch {
		case t.HasDefault:
			if err := p.checkOperand(PC, t.Default); err != nil {
				add("tables", i, at("default"), "table %d: default: %v", i, err)
			}
		case t.Default != 0:
			add("tables", i, at("default"), "table %d: default pc %04d is set but has_default is false", i, t.Default)
		}
	}
	return fs
}

// canonicalize makes every empty slice reachable from v nil, so that
// programs that mean the same compare equal and encode the same. Decode and
// Assemble return canonical programs.
func canonicalize(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			canonicalize(v.Elem())
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if f := v.Field(i); f.CanSet() {
				canonicalize(f)
			}
		}
	case reflect.Slice:
		if v.Len() == 0 {
			if !v.IsNil() && v.CanSet() {
				v.Set(reflect.Zero(v.Type()))
			}
			return
		}
		for i := 0; i < v.Len(); i++ {
			canonicalize(v.Index(i))
		}
	}
}

// runsBlock reports whether op is the instruction that runs some kind of
// block (kindTable's Op).
func runsBlock(op Op) bool {
	for _, k := range kindTable[KindCommand:] {
		if k.Op == op {
			return true
		}
	}
	return false
}
