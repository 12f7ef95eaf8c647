package isa

import (
	"sort"

	"smith/lang"
)

// Signals lists the signals that block's transition table names, sorted,
// without SIGNAL:FAIL_DEFAULT (the fallback, not a signal a worker or a
// person sends): the signals a run halted at block accepts on resume
// (CONTRACT 6). An unknown block has none.
func (p *Program) Signals(block string) []string {
	idx := -1
	for i, b := range p.Blocks {
		if b.ID == block {
			idx = i
			break
		}
	}
	if idx < 0 {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, t := range p.Tables {
		if int(t.Block) != idx {
			continue
		}
		for _, e := range t.Entries {
			if !seen[e.Signal] && e.Signal != lang.SigFailDefault {
				seen[e.Signal] = true
				out = append(out, e.Signal)
			}
		}
	}
	sort.Strings(out)
	return out
}
