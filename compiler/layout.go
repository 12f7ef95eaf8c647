package compiler

import (
	"fmt"
	"strconv"

	"smith/compiler/ir"
	"smith/isa"
	"smith/lang"
	"smith/source"
)

// flatBlock is one block of a program in layout order: document order,
// depth first, a loop's body blocks right after the loop block. Its index
// in flatProgram.blocks is its index in the Blocks pool and its gonum node
// ID.
type flatBlock struct {
	b      *ir.Block
	node   int // index in Program.Nodes
	parent int // index of the innermost enclosing loop block, -1 at top level
}

// flatProgram indexes an IR program's blocks and nodes.
type flatProgram struct {
	p      *ir.Program
	blocks []flatBlock
	// byID maps a block ID to its index; the first block wins when an ID
	// repeats (the lowering reports E_DUP_STEP).
	byID map[string]int
	// nodeByID maps a node ID to its index in p.Nodes.
	nodeByID map[string]int
	// dups lists block IDs seen more than once, in layout order.
	dups []string
}

// flatten lays out p's blocks in document order, depth first.
func flatten(p *ir.Program) *flatProgram {
	nb := 0 // the blocks outside loops and branches: most, usually all
	for _, node := range p.Nodes {
		nb += len(node.Blocks)
	}
	fp := &flatProgram{p: p, blocks: make([]flatBlock, 0, nb), byID: make(map[string]int, nb), nodeByID: map[string]int{}}
	var walk func(bs []*ir.Block, node, parent int)
	walk = func(bs []*ir.Block, node, parent int) {
		for _, b := range bs {
			i := len(fp.blocks)
			fp.blocks = append(fp.blocks, flatBlock{b: b, node: node, parent: parent})
			if _, ok := fp.byID[b.ID]; ok {
				fp.dups = append(fp.dups, b.ID)
			} else {
				fp.byID[b.ID] = i
			}
			if b.Kind == isa.KindLoop {
				walk(b.Body, node, i)
			}
			for _, br := range b.Branches {
				walk(br.Body, node, i)
			}
		}
	}
	for n, node := range p.Nodes {
		if _, ok := fp.nodeByID[node.ID]; !ok {
			fp.nodeByID[node.ID] = n
		}
		walk(node.Blocks, n, -1)
	}
	return fp
}

// block returns the index of the block with ID id.
func (fp *flatProgram) block(id string) (int, bool) {
	i, ok := fp.byID[id]
	return i, ok
}

// nodeEntry returns the index of the entry block of the node with ID id.
func (fp *flatProgram) nodeEntry(id string) (int, bool) {
	n, ok := fp.nodeByID[id]
	if !ok {
		return 0, false
	}
	return fp.block(fp.p.Nodes[n].Entry)
}

// Labels are symbolic code addresses, bound during layout and resolved in
// one pass after it.
type labelKind uint8

const (
	lblStart    labelKind = iota + 1 // a block's first instruction
	lblDispatch                      // a block's DISPATCH
	lblLoopNext                      // a loop's LOOP_NEXT
	lblBody                          // a loop's first body instruction
)

// A label names one code address of one block (by layout index).
type label struct {
	kind  labelKind
	block int
}

// actionKey identifies an action for deduplication within one block: two
// transitions with equal keys share one action instruction.
type actionKey struct {
	kind   ir.ActionKind
	target string
	ret    string
	msg    string
}

func keyOf(t *ir.Transition, self string) actionKey {
	k := actionKey{kind: t.Action}
	switch t.Action {
	case ir.Jump:
		k.target = t.Target
	case ir.Call:
		k.target, k.ret = t.Target, t.ReturnTo
		if k.ret == "" {
			k.ret = self
		}
	case ir.Fail:
		k.msg = t.Msg
	}
	return k
}

// layout emits the code of every block into e and fills the pools of out.
// It returns an error for a reference that the lowering should have
// reported (an unknown target, a loop action outside a loop).
type layout struct {
	fp  *flatProgram
	e   *emitter
	out *isa.Program
	// templates maps a template's canonical JSON to its index in the
	// Templates pool.
	templates map[string]uint32
}

// layoutBlock emits block i (and, for a loop, its body) and returns the
// index of the block after it in layout order.
func (l *layout) layoutBlock(i int) (int, error) {
	fb := l.fp.blocks[i]
	b := fb.b
	e := l.e
	spec := &l.out.Blocks[i]
	spec.Start = e.pc()
	e.bind(label{lblStart, i})
	disp := pcArg(label{lblDispatch, i})
	// A manifest block's state records its visit count (every block's);
	// a YAML step's only where max_visits bounds it.
	if b.MaxVisits > 0 || l.fp.p.Format == ir.Manifest {
		e.emit(b.Pos, isa.OpVisit, blockArg(i), disp)
	}
	if b.HasWhen {
		e.emit(b.Pos, isa.OpWhen, blockArg(i), disp)
	}
	next := i + 1
	switch {
	case b.Kind.Exec():
		e.emit(b.Pos, isa.OpExec, blockArg(i), arg{})
	case b.Kind == isa.KindSetContext:
		e.emit(b.Pos, isa.OpSetContext, blockArg(i), arg{})
	case b.Kind == isa.KindLoop:
		e.emit(b.Pos, isa.OpLoopBegin, blockArg(i), disp)
		spec.Loop.Body = e.pc()
		e.bind(label{lblBody, i})
		for j, c := range b.Body {
			if c != l.fp.blocks[next].b {
				panic(fmt.Sprintf("internal error: body block %d of %q is not next in layout", j, b.ID))
			}
			spec.Loop.Steps = append(spec.Loop.Steps, uint32(next))
			var err error
			if next, err = l.layoutBlock(next); err != nil {
				return 0, err
			}
		}
		e.bind(label{lblLoopNext, i})
		e.emit(b.Pos, isa.OpLoopNext, blockArg(i), pcArg(label{lblBody, i}))
	case b.Kind == isa.KindParallel:
		e.emit(b.Pos, isa.OpParBegin, blockArg(i), disp)
		spec.Par.Branches = nil
		for _, br := range b.Branches {
			ib := isa.Branch{Name: br.Name, Start: e.pc()}
			for j, c := range br.Body {
				if c != l.fp.blocks[next].b {
					panic(fmt.Sprintf("internal error: block %d of branch %q of %q is not next in layout", j, br.Name, b.ID))
				}
				ib.Steps = append(ib.Steps, uint32(next))
				var err error
				if next, err = l.layoutBlock(next); err != nil {
					return 0, err
				}
			}
			// The branch's end, after its last step; a step's
			// goto: _branch_end has its own BRANCH_END action.
			e.emit(b.Pos, isa.OpBranchEnd, blockArg(i), arg{})
			spec.Par.Branches = append(spec.Par.Branches, ib)
		}
	default:
		return 0, fmt.Errorf("block %q has kind %s", b.ID, b.Kind)
	}
	spec.Dispatch = e.pc()
	e.bind(label{lblDispatch, i})
	e.emit(b.Pos, isa.OpDispatch, tableArg(i), arg{})
	if err := l.actions(i); err != nil {
		return 0, err
	}
	return next, nil
}

// actions emits one instruction per distinct action of block i's
// transitions and fills its table.
func (l *layout) actions(i int) error {
	fb := l.fp.blocks[i]
	b := fb.b
	tab := &l.out.Tables[i]
	tab.Block = uint32(i)
	type emitted struct {
		key actionKey
		pc  uint32
	}
	var buf [8]emitted
	seen := buf[:0] // a block has few transitions: a slice beats a map
	for _, t := range b.Transitions {
		k := keyOf(t, b.ID)
		pc, found := uint32(0), false
		for _, s := range seen {
			if s.key == k {
				pc, found = s.pc, true
				break
			}
		}
		if !found {
			var err error
			if pc, err = l.action(i, t); err != nil {
				return err
			}
			seen = append(seen, emitted{k, pc})
		}
		if t.Signal == lang.SigFailDefault {
			if !tab.HasDefault {
				tab.Default, tab.HasDefault = pc, true
			}
			continue
		}
		tab.Entries = append(tab.Entries, isa.TableEntry{Signal: t.Signal, PC: pc})
	}
	return nil
}

// action emits the instruction of transition t of block i and returns its pc.
func (l *layout) action(i int, t *ir.Transition) (uint32, error) {
	fb := l.fp.blocks[i]
	e := l.e
	pc := e.pc()
	pos := posOr(t.Pos, fb.b.Pos)
	switch t.Action {
	case ir.Jump:
		to, ok := l.fp.block(t.Target)
		if !ok {
			return 0, fmt.Errorf("block %q jumps to unknown block %q", fb.b.ID, t.Target)
		}
		e.emit(pos, isa.OpJump, pcArg(label{lblStart, to}), arg{})
	case ir.Call:
		n, ok := l.fp.nodeByID[t.Target]
		if !ok {
			return 0, fmt.Errorf("block %q calls unknown node %q", fb.b.ID, t.Target)
		}
		ret := i
		if t.ReturnTo != "" {
			if ret, ok = l.fp.block(t.ReturnTo); !ok {
				return 0, fmt.Errorf("block %q returns to unknown block %q", fb.b.ID, t.ReturnTo)
			}
		}
		e.emit(pos, isa.OpCall, nodeArg(n), pcArg(label{lblStart, ret}))
	case ir.Return:
		e.emit(pos, isa.OpReturn, arg{}, arg{})
	case ir.Halt:
		e.emit(pos, isa.OpHaltAndFlag, blockArg(i), arg{})
	case ir.End:
		e.emit(pos, isa.OpEnd, arg{}, arg{})
	case ir.Fail:
		ti, err := l.template(t)
		if err != nil {
			return 0, fmt.Errorf("block %q: %w", fb.b.ID, err)
		}
		e.emit(pos, isa.OpFail, templateArg(ti), arg{})
	case ir.BranchEnd, ir.BranchFail:
		par := fb.parent
		if par < 0 || l.fp.blocks[par].b.Kind != isa.KindParallel {
			return 0, fmt.Errorf("block %q uses %s outside a parallel branch", fb.b.ID, t.Action)
		}
		if t.Action == ir.BranchFail {
			e.emit(pos, isa.OpBranchFail, blockArg(par), arg{})
		} else {
			e.emit(pos, isa.OpBranchEnd, blockArg(par), arg{})
		}
	case ir.LoopNext, ir.LoopBreak, ir.LoopFail:
		loop := fb.parent
		if loop < 0 {
			return 0, fmt.Errorf("block %q uses %s outside a loop", fb.b.ID, t.Action)
		}
		switch t.Action {
		case ir.LoopNext:
			e.emit(pos, isa.OpJump, pcArg(label{lblLoopNext, loop}), arg{})
		case ir.LoopBreak:
			e.emit(pos, isa.OpLoopBreak, blockArg(loop), pcArg(label{lblDispatch, loop}))
		default:
			e.emit(pos, isa.OpLoopFail, blockArg(loop), pcArg(label{lblDispatch, loop}))
		}
	default:
		return 0, fmt.Errorf("block %q has a transition with action %s", fb.b.ID, t.Action)
	}
	return pc, nil
}

// template returns the index in the Templates pool of the message of Fail
// transition t (its MsgTmpl, or the literal Msg when the lowering left none),
// adding it on first use; equal templates (by canonical JSON) share an
// entry.
func (l *layout) template(t *ir.Transition) (uint32, error) {
	tm := lang.Lit(t.Msg)
	if t.MsgTmpl != nil {
		tm = *t.MsgTmpl
	}
	key := templateKey(tm)
	if i, ok := l.templates[string(key)]; ok {
		return i, nil
	}
	i := uint32(len(l.out.Templates))
	l.out.Templates = append(l.out.Templates, tm)
	l.templates[string(key)] = i
	return i, nil
}

// templateKey is a text that two templates share exactly when every field
// of theirs is equal (each string carries its length, so no two differ only
// in where one ends): the key of the Templates pool, built without
// encoding/json's reflection, which a compile paid for at each process's
// first fail message.
func templateKey(tm lang.Template) []byte {
	var b []byte
	str := func(s string) {
		b = strconv.AppendInt(b, int64(len(s)), 10)
		b = append(b, ':')
		b = append(b, s...)
	}
	num := func(n int) {
		b = strconv.AppendInt(b, int64(n), 10)
		b = append(b, ';')
	}
	for _, p := range tm.Parts {
		if p.Ref == nil {
			b = append(b, 'L')
			str(p.Lit)
			continue
		}
		b = append(b, 'R')
		str(p.Lit)
		num(len(p.Ref.Path))
		for _, e := range p.Ref.Path {
			str(e.Key)
			num(e.Index)
			if e.IsIndex {
				b = append(b, 'i')
			}
			b = append(b, '.')
		}
		str(p.Ref.Raw)
		str(p.Ref.Pos.File)
		num(p.Ref.Pos.Line)
		num(p.Ref.Pos.Col)
	}
	return b
}

// blockSpec returns a copy of block fb's run-time spec with the fields the
// code generator owns cleared, and the IR's facts (kind, visits) applied.
func blockSpec(fb flatBlock) (isa.Block, error) {
	b := fb.b
	var spec isa.Block
	if b.Spec != nil {
		spec = *b.Spec
	}
	spec.ID = b.ID
	if !spec.Pos.IsValid() {
		spec.Pos = b.Pos
	}
	spec.MaxVisits = b.MaxVisits
	spec.Signals, spec.AnySignal = append([]string(nil), b.Signals...), b.AI || b.AnySignal
	if len(spec.Signals) == 0 {
		spec.Signals = nil
	}
	spec.Node, spec.Start, spec.Dispatch, spec.Parent = uint32(fb.node), 0, 0, uint32(fb.parent+1)
	spec.Kind = b.Kind
	switch b.Kind {
	case isa.KindLoop:
		var lp isa.Loop
		if spec.Loop != nil {
			lp = *spec.Loop
		}
		lp.Body, lp.Steps = 0, nil
		spec.Loop = &lp
	case isa.KindParallel:
		var par isa.Par
		if spec.Par != nil {
			par = *spec.Par
		}
		par.Branches = nil
		spec.Par = &par
	}
	return spec, nil
}

// posOr returns p, or def when p is unknown.
func posOr(p, def source.Pos) source.Pos {
	if p.IsValid() {
		return p
	}
	return def
}
