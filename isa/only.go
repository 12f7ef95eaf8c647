package isa

import (
	"fmt"
	"slices"

	"smith/source"
)

// Only returns a copy of p that runs the top-level block step alone
// (smithvm run-step): its entry is the block's start, and the block's
// transition table sends every signal to an END_STEP appended to the code,
// which ends the run with the block's outcome. The copy records step in
// RunStep; p must verify, and then the copy does. p is not changed.
func (p *Program) Only(step string) (*Program, error) {
	if err := p.Verify(); err != nil {
		return nil, err
	}
	bi := slices.IndexFunc(p.Blocks, func(b Block) bool { return b.ID == step })
	if bi < 0 || p.Blocks[bi].Parent != 0 || p.Code[p.Blocks[bi].Dispatch].Op != OpDispatch {
		return nil, &source.Error{Code: source.EUsage, Msg: fmt.Sprintf("no top-level step '%s' to run alone", step)}
	}
	b, q := &p.Blocks[bi], *p
	end := uint32(len(p.Code))
	q.Code = append(slices.Clip(p.Code), Instr{Op: OpEndStep, A: uint32(bi)})
	q.Pos = append(slices.Clip(p.Pos), p.Pos[b.Dispatch])
	q.Tables = slices.Clone(p.Tables)
	q.Tables[p.Code[b.Dispatch].A] = Table{Block: uint32(bi), Default: end, HasDefault: true}
	q.Entry, q.RunStep = b.Start, step
	return &q, nil
}
