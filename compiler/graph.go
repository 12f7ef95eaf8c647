package compiler

import (
	"slices"
	"strings"

	"gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/simple"
	"gonum.org/v1/gonum/graph/topo"
	"gonum.org/v1/gonum/graph/traverse"

	"smith/compiler/ir"
	"smith/lang"
	"smith/source"
)

// CheckGraph runs the graph checks on a lowered program and returns their
// diagnostics, sorted:
//
//   - W_UNREACHABLE: a block that no path from the entry reaches;
//   - E_NO_FALLBACK: a block that can emit a signal for which the VM's
//     lookup (exact, SIGNAL:TIMEOUT then SIGNAL:FAILURE, then
//     SIGNAL:FAIL_DEFAULT) finds no transition; an AI block can emit any
//     signal, so it needs SIGNAL:FAIL_DEFAULT;
//   - E_NO_EXIT: a cycle from which no END, RETURN, HALT_AND_FLAG or FAIL
//     is reachable;
//   - W_UNBOUNDED_LOOP: a cycle through an AI block where no block has
//     max_visits.
//
// The flow graph is a gonum simple.DirectedGraph whose node IDs are the
// block indices in layout order (document order, a loop's body after the
// loop block), plus one exit sink. JUMP goes to its target; CALL to the
// callee's entry block and to the block that runs after RETURN (return_to,
// or the calling block itself); a loop block to its first body block; the
// loop actions of a body block to the loop block (which continues or
// leaves the loop); END, FAIL, HALT_AND_FLAG and RETURN to the sink.
// References to unknown blocks or nodes add no edge: the lowering reports
// them.
func CheckGraph(p *ir.Program) source.Diagnostics {
	fp := flatten(p)
	var ds source.Diagnostics
	checkFallbacks(fp, &ds)

	full := buildFlow(fp, true)
	checkReachable(fp, full, &ds)
	checkExits(fp, full, &ds)
	// A for_each body repeats once per item, a bounded number of times: the
	// loop-to-body edge is left out when looking for unbounded cycles.
	checkUnbounded(fp, buildFlow(fp, false), &ds)
	ds.Sort()
	return ds
}

// flowGraph is the control-flow graph of a program.
type flowGraph struct {
	g *simple.DirectedGraph
	// self[i] is true when block i has an edge to itself (gonum's simple
	// graphs hold no self edges).
	self []bool
	// exit is the ID of the sink that END, FAIL, HALT_AND_FLAG and RETURN
	// lead to.
	exit int64
}

// buildFlow builds the flow graph of fp; each says whether a loop block
// has an edge to its first body block.
func buildFlow(fp *flatProgram, each bool) *flowGraph {
	n := len(fp.blocks)
	f := &flowGraph{g: simple.NewDirectedGraph(), self: make([]bool, n), exit: int64(n)}
	for i := 0; i <= n; i++ {
		f.g.AddNode(simple.Node(i))
	}
	edge := func(from, to int) {
		if from == to {
			f.self[from] = true
			return
		}
		if !f.g.HasEdgeFromTo(int64(from), int64(to)) {
			f.g.SetEdge(simple.Edge{F: simple.Node(from), T: simple.Node(to)})
		}
	}
	for i, fb := range fp.blocks {
		b := fb.b
		if each && b.Kind == ir.Loop && len(b.Body) > 0 {
			edge(i, i+1) // the first body block follows its loop in layout order
		}
		if each && b.Kind == ir.Parallel {
			for _, br := range b.Branches {
				if len(br.Body) > 0 {
					if to, ok := fp.block(br.Body[0].ID); ok {
						edge(i, to)
					}
				}
			}
		}
		for _, t := range liveTransitions(b) {
			switch t.Action {
			case ir.Jump:
				if to, ok := fp.block(t.Target); ok {
					edge(i, to)
				}
			case ir.Call:
				if to, ok := fp.nodeEntry(t.Target); ok {
					edge(i, to)
				}
				ret, ok := i, true
				if t.ReturnTo != "" {
					ret, ok = fp.block(t.ReturnTo)
				}
				if ok {
					edge(i, ret)
				}
			case ir.Return, ir.Halt, ir.End, ir.Fail:
				edge(i, n)
			case ir.LoopNext, ir.LoopBreak, ir.LoopFail, ir.BranchEnd, ir.BranchFail:
				if fb.parent >= 0 {
					edge(i, fb.parent)
				}
			}
		}
	}
	return f
}

// liveTransitions returns the transitions of b that the VM's lookup can
// select: for each signal b can emit, the exact one, else SIGNAL:FAILURE for
// SIGNAL:TIMEOUT, else SIGNAL:FAIL_DEFAULT. An AI block can also emit any
// custom signal, so its custom-signal transitions and its FAIL_DEFAULT are
// live too, and so are those of a block that halts (a person resumes it
// with --signal). A transition for a signal b never emits (SIGNAL:SKIPPED on a
// step without a condition) is not an edge of the control flow.
func liveTransitions(b *ir.Block) []*ir.Transition {
	bySignal := map[string]*ir.Transition{}
	for _, t := range b.Transitions {
		if _, dup := bySignal[t.Signal]; !dup {
			bySignal[t.Signal] = t
		}
	}
	live := map[*ir.Transition]bool{}
	for _, s := range b.Signals {
		if t, ok := lang.Dispatch(s, func(s string) (*ir.Transition, bool) {
			t := bySignal[s]
			return t, t != nil
		}); ok {
			live[t] = true
		}
	}
	halts := false
	for t := range live {
		halts = halts || t.Action == ir.Halt
	}
	// A block that halts is resumed with resume --signal, which can take
	// any of its transitions.
	if b.AI || b.AnySignal || halts {
		for _, t := range b.Transitions {
			if !lang.IsReserved(t.Signal) {
				live[t] = true
			}
		}
	}
	out := make([]*ir.Transition, 0, len(live))
	for _, t := range b.Transitions {
		if live[t] {
			out = append(out, t)
		}
	}
	return out
}

// noun is how messages name a block of p: a step in a YAML workflow, a
// block in a manifest.
func noun(p *ir.Program) string {
	if p.Format == ir.YAML {
		return "step"
	}
	return "block"
}

// checkReachable reports the blocks that no path from the entry reaches.
func checkReachable(fp *flatProgram, f *flowGraph, ds *source.Diagnostics) {
	entry, ok := fp.block(fp.p.Entry)
	if !ok {
		return // the lowering reported the entry
	}
	var bfs traverse.BreadthFirst
	bfs.Walk(f.g, simple.Node(entry), nil)
	for i, fb := range fp.blocks {
		if !bfs.Visited(simple.Node(i)) {
			ds.Add(fb.b.Pos, source.WUnreachable, "%s '%s' is never reached", noun(fp.p), fb.b.ID)
		}
	}
}

// checkFallbacks reports blocks that can emit a signal without a transition.
func checkFallbacks(fp *flatProgram, ds *source.Diagnostics) {
	for _, fb := range fp.blocks {
		b := fb.b
		has := func(sig string) bool {
			for _, t := range b.Transitions {
				if t.Signal == sig {
					return true
				}
			}
			return false
		}
		if has(lang.SigFailDefault) {
			continue
		}
		if b.AI {
			ds.Add(b.Pos, source.ENoFallback, "block '%s' runs an AI worker, which can emit any signal, and has no %s", b.ID, lang.SigFailDefault)
			continue
		}
		for _, sig := range b.Signals {
			if _, ok := lang.Dispatch(sig, func(s string) (bool, bool) { return true, has(s) }); ok {
				continue
			}
			ds.Add(b.Pos, source.ENoFallback, "block '%s' has no transition for '%s' and no %s", b.ID, sig, lang.SigFailDefault)
		}
	}
}

// cycles returns the strongly connected components of f that hold a cycle
// (more than one block, or a block with an edge to itself), each as block
// indices in layout order.
func cycles(f *flowGraph) [][]int {
	var out [][]int
	for _, scc := range topo.TarjanSCC(f.g) {
		if len(scc) == 1 {
			id := scc[0].ID()
			if id == f.exit || !f.self[id] {
				continue
			}
		}
		c := make([]int, len(scc))
		for i, n := range scc {
			c[i] = int(n.ID())
		}
		slices.Sort(c)
		out = append(out, c)
	}
	return out
}

// cycleText spells a cycle as 'A' -> 'B' -> 'A'.
func cycleText(fp *flatProgram, c []int) string {
	var b strings.Builder
	for _, i := range c {
		b.WriteString("'" + fp.blocks[i].b.ID + "' -> ")
	}
	b.WriteString("'" + fp.blocks[c[0]].b.ID + "'")
	return b.String()
}

// checkExits reports cycles from which the exit sink cannot be reached.
func checkExits(fp *flatProgram, f *flowGraph, ds *source.Diagnostics) {
	var bfs traverse.BreadthFirst
	bfs.Walk(reversed{f.g}, simple.Node(f.exit), nil)
	for _, c := range cycles(f) {
		if bfs.Visited(simple.Node(c[0])) {
			continue // every block of a component reaches what one of them reaches
		}
		ds.Add(fp.blocks[c[0]].b.Pos, source.ENoExit, "cycle %s has no exit: no END, RETURN, HALT or failure is reachable from it", cycleText(fp, c))
	}
}

// checkUnbounded warns about cycles through an AI block where no block has
// max_visits.
func checkUnbounded(fp *flatProgram, f *flowGraph, ds *source.Diagnostics) {
	for _, c := range cycles(f) {
		ai := -1
		bounded := false
		for _, i := range c {
			b := fp.blocks[i].b
			if b.MaxVisits > 0 {
				bounded = true
			}
			if b.AI && ai < 0 {
				ai = i
			}
		}
		if ai < 0 || bounded {
			continue
		}
		b := fp.blocks[ai].b
		ds.Add(b.Pos, source.WUnboundedLoop, "cycle %s passes through AI step '%s' and has no max_visits", cycleText(fp, c), b.ID)
	}
}

// reversed is a directed graph seen with its edges reversed, for walking
// backwards from the exit sink.
type reversed struct{ g *simple.DirectedGraph }

// From returns the nodes with an edge to id.
func (r reversed) From(id int64) graph.Nodes { return r.g.To(id) }

// Edge returns the edge from v to u.
func (r reversed) Edge(uid, vid int64) graph.Edge { return r.g.Edge(vid, uid) }
