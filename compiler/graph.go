package compiler

import (
	"slices"
	"strings"

	"gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/iterator"
	"gonum.org/v1/gonum/graph/topo"

	"smith/compiler/ir"
	"smith/isa"
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
//     max_visits;
//   - W_CALL_NO_RETURN: a block that CALLs its own node, reachable from
//     the node's entry block, when no RETURN is.
//
// The flow graph is a graph.Directed for gonum (flowGraph) whose node IDs are the
// block indices in layout order (document order, a loop's body after the
// loop block), plus one exit sink. JUMP goes to its target; CALL to the
// callee's entry block and to the block that runs after RETURN (return_to,
// or the calling block itself); a loop block to its first body block; the
// loop actions of a body block to the loop block (which continues or
// leaves the loop); END, FAIL, HALT_AND_FLAG and RETURN to the sink.
// References to unknown blocks or nodes add no edge: the lowering reports
// them.
func CheckGraph(p *ir.Program) source.Diagnostics {
	return checkGraph(flatten(p))
}

// checkGraph is CheckGraph on a program laid out by flatten.
func checkGraph(fp *flatProgram) source.Diagnostics {
	var ds source.Diagnostics
	checkFallbacks(fp, &ds)
	checkDeadSignals(fp, &ds)

	edges := flowEdgesOf(fp)
	full := buildFlow(fp, edges, true)
	checkReachable(fp, full, &ds)
	checkExits(fp, full, &ds)
	checkSelfCalls(fp, full, &ds)
	// A for_each body repeats once per item, a bounded number of times: the
	// loop-to-body edge is left out when looking for unbounded cycles
	// (without such edges, that is the same graph).
	bounded := full
	if slices.Contains(edges.each, true) {
		bounded = buildFlow(fp, edges, false)
	}
	checkUnbounded(fp, bounded, &ds)
	ds.Sort()
	return ds
}

// flowGraph is the control-flow graph of a program, held compactly for
// gonum's algorithms: node i is block i, node n the exit sink, and each
// node's successors and predecessors are slices of one shared array. It
// implements graph.Directed over those slices: gonum's simple.DirectedGraph
// keeps a map per node and per edge, which for a 10,000-block manifest
// was most of the time of the graph checks.
type flowGraph struct {
	// nodes[i] is flowNode(i), boxed once.
	nodes []graph.Node
	// succ[i] and pred[i] are node i's successors and predecessors, each
	// once, in the order the edges were added.
	succ, pred [][]graph.Node
	// self[i] is true when block i has an edge to itself (the graph holds
	// no self edges, as gonum's simple graphs hold none).
	self []bool
	// exit is the ID of the sink that END, FAIL, HALT_AND_FLAG and RETURN
	// lead to.
	exit int64
	// order, when not nil, is the nodes that Nodes returns (a core, below);
	// nil is all of them.
	order []graph.Node
}

var _ graph.Directed = (*flowGraph)(nil)

// flowEdges are the edges of the flow graph, computed once for both graphs
// CheckGraph builds: from[k] -> to[k]; each[k] is true for an edge that
// only exists when a loop block leads to its body (a loop's or a parallel
// step's first body block).
type flowEdges struct {
	from, to []int32
	each     []bool
}

// flowEdgesOf lists the edges of fp's flow graph, in block order.
func flowEdgesOf(fp *flatProgram) *flowEdges {
	n := len(fp.blocks)
	m := n // about the number of edges: one per transition, usually
	for _, fb := range fp.blocks {
		m += len(fb.b.Transitions)
	}
	e := &flowEdges{from: make([]int32, 0, m), to: make([]int32, 0, m), each: make([]bool, 0, m)}
	add := func(from, to int, each bool) {
		e.from = append(e.from, int32(from))
		e.to = append(e.to, int32(to))
		e.each = append(e.each, each)
	}
	var live []*ir.Transition
	for i, fb := range fp.blocks {
		b := fb.b
		if b.Kind == isa.KindLoop && len(b.Body) > 0 {
			add(i, i+1, true) // the first body block follows its loop in layout order
		}
		if b.Kind == isa.KindParallel {
			for _, br := range b.Branches {
				if len(br.Body) > 0 {
					if to, ok := fp.block(br.Body[0].ID); ok {
						add(i, to, true)
					}
				}
			}
		}
		live = appendLiveTransitions(live[:0], b)
		for _, t := range live {
			switch t.Action {
			case ir.Jump:
				if to, ok := fp.block(t.Target); ok {
					add(i, to, false)
				}
			case ir.Call:
				if to, ok := fp.nodeEntry(t.Target); ok {
					add(i, to, false)
				}
				ret, ok := i, true
				if t.ReturnTo != "" {
					ret, ok = fp.block(t.ReturnTo)
				}
				if ok {
					add(i, ret, false)
				}
			case ir.Return, ir.Halt, ir.End, ir.Fail:
				add(i, n, false)
			case ir.LoopNext, ir.LoopBreak, ir.LoopFail, ir.BranchEnd, ir.BranchFail:
				if fb.parent >= 0 {
					add(i, fb.parent, false)
				}
			}
		}
	}
	return e
}

// buildFlow builds the flow graph of fp from its edges; each says whether
// a loop block has an edge to its first body block.
func buildFlow(fp *flatProgram, edges *flowEdges, each bool) *flowGraph {
	n := len(fp.blocks)
	f := &flowGraph{
		nodes: make([]graph.Node, n+1),
		succ:  make([][]graph.Node, n+1),
		pred:  make([][]graph.Node, n+1),
		self:  make([]bool, n),
		exit:  int64(n),
	}
	for i := range f.nodes {
		f.nodes[i] = flowNode(i)
	}
	// Successors: the edges are in block order, so each block's are
	// contiguous; a repeated edge is dropped.
	succ := make([]graph.Node, 0, len(edges.from))
	nIn := make([]int32, n+1)
	for k := 0; k < len(edges.from); {
		from := edges.from[k]
		start := len(succ)
		for ; k < len(edges.from) && edges.from[k] == from; k++ {
			to := edges.to[k]
			if edges.each[k] && !each {
				continue
			}
			if to == from {
				f.self[from] = true
				continue
			}
			if slices.Contains(succ[start:], f.nodes[to]) {
				continue
			}
			succ = append(succ, f.nodes[to])
			nIn[to]++
		}
		f.succ[from] = succ[start:len(succ):len(succ)]
	}
	// Predecessors, in the order of their sources.
	pred := make([]graph.Node, len(succ))
	off := 0
	for i, c := range nIn {
		f.pred[i] = pred[off : off : int(c)+off]
		off += int(c)
	}
	for from, ss := range f.succ {
		for _, to := range ss {
			id := to.ID()
			f.pred[id] = append(f.pred[id], f.nodes[from])
		}
	}
	return f
}

// Node returns the node with the given ID, or nil.
func (f *flowGraph) Node(id int64) graph.Node {
	if id < 0 || id >= int64(len(f.nodes)) {
		return nil
	}
	return f.nodes[id]
}

// Nodes returns every node (or the nodes of order), in ID order.
func (f *flowGraph) Nodes() graph.Nodes {
	if f.order != nil {
		return iterator.NewOrderedNodes(f.order)
	}
	return iterator.NewOrderedNodes(f.nodes)
}

// From returns the successors of id.
func (f *flowGraph) From(id int64) graph.Nodes { return f.iter(f.succ, id) }

// To returns the predecessors of id.
func (f *flowGraph) To(id int64) graph.Nodes { return f.iter(f.pred, id) }

func (f *flowGraph) iter(adj [][]graph.Node, id int64) graph.Nodes {
	if id < 0 || id >= int64(len(adj)) || len(adj[id]) == 0 {
		return graph.Empty
	}
	return iterator.NewOrderedNodes(adj[id])
}

// HasEdgeFromTo reports whether there is an edge from uid to vid.
func (f *flowGraph) HasEdgeFromTo(uid, vid int64) bool {
	if uid < 0 || uid >= int64(len(f.succ)) {
		return false
	}
	for _, n := range f.succ[uid] {
		if n.ID() == vid {
			return true
		}
	}
	return false
}

// HasEdgeBetween reports whether there is an edge between x and y, in
// either direction.
func (f *flowGraph) HasEdgeBetween(xid, yid int64) bool {
	return f.HasEdgeFromTo(xid, yid) || f.HasEdgeFromTo(yid, xid)
}

// Edge returns the edge from uid to vid, or nil.
func (f *flowGraph) Edge(uid, vid int64) graph.Edge {
	if !f.HasEdgeFromTo(uid, vid) {
		return nil
	}
	return flowEdge{f.nodes[uid], f.nodes[vid]}
}

// flowNode and flowEdge are a node and an edge of a flowGraph, the same as
// gonum's simple.Node and simple.Edge, whose package would link gonum's
// matrix and LAPACK packages (and their init) into every binary.
type flowNode int64

// ID returns the node's block index.
func (n flowNode) ID() int64 { return int64(n) }

type flowEdge struct{ f, t graph.Node }

func (e flowEdge) From() graph.Node         { return e.f }
func (e flowEdge) To() graph.Node           { return e.t }
func (e flowEdge) ReversedEdge() graph.Edge { return flowEdge{e.t, e.f} }

// appendLiveTransitions appends to out the transitions of b that the VM's
// lookup can select: for each signal b can emit, the exact one, else
// SIGNAL:FAILURE for SIGNAL:TIMEOUT, else SIGNAL:FAIL_DEFAULT. An AI block
// can also emit any custom signal, so its custom-signal transitions and its
// FAIL_DEFAULT are live too, and so are those of a block that halts (a
// person resumes it with --signal). A transition for a signal b never
// emits (SIGNAL:SKIPPED on a step without a condition) is not an edge of
// the control flow. They are appended in b's order, each once.
func appendLiveTransitions(out []*ir.Transition, b *ir.Block) []*ir.Transition {
	// A block has a handful of transitions: a linear search for the first
	// one of a signal is cheaper than a map.
	first := func(s string) (int, bool) {
		for i, t := range b.Transitions {
			if t.Signal == s {
				return i, true
			}
		}
		return -1, false
	}
	var small [16]bool
	var live []bool
	if len(b.Transitions) <= len(small) {
		live = small[:len(b.Transitions)]
	} else {
		live = make([]bool, len(b.Transitions))
	}
	halts := false
	for _, s := range b.Signals {
		if i, ok := lang.Dispatch(s, first); ok {
			live[i] = true
			halts = halts || b.Transitions[i].Action == ir.Halt
		}
	}
	// A block that halts is resumed with resume --signal, which can take
	// any of its transitions.
	if b.AI || b.AnySignal || halts {
		for i, t := range b.Transitions {
			if !lang.IsReserved(t.Signal) {
				live[i] = true
			}
		}
	}
	for i, t := range b.Transitions {
		if live[i] {
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
	seen := reach(f.succ, entry)
	for i, fb := range fp.blocks {
		if !seen[i] {
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
			ds.Add(b.Pos, source.ENoFallback, "block '%s' runs an AI worker, which can emit any signal, and has no %s; add a transition on %s (usually HALT_AND_FLAG, or FAIL:reason)", b.ID, lang.SigFailDefault, lang.SigFailDefault)
			continue
		}
		for _, sig := range b.Signals {
			if _, ok := lang.Dispatch(sig, func(s string) (bool, bool) { return true, has(s) }); ok {
				continue
			}
			ds.Add(b.Pos, source.ENoFallback, "block '%s' has no transition for '%s' and no %s; add a transition on one of them", b.ID, sig, lang.SigFailDefault)
		}
	}
}

// checkDeadSignals reports transitions on a custom signal that the block's
// worker never emits (a typo such as SIGNAL:SUCCES in a manifest, an
// on.signals entry on a YAML command step), with the nearest signal it does
// emit. A block that can emit any signal (an AI worker or step, a manifest
// command worker) or that halts (resume --signal takes any transition) has
// none.
func checkDeadSignals(fp *flatProgram, ds *source.Diagnostics) {
	var buf [16]*ir.Transition
	for _, fb := range fp.blocks {
		b := fb.b
		if b.AI || b.AnySignal {
			continue
		}
		live := appendLiveTransitions(buf[:0], b)
		for _, t := range b.Transitions {
			// A handler of a reserved outcome the worker happens not to
			// produce (a FAILURE transition on a worker that cannot fail)
			// is defensive, not a mistake: only other signals are reported.
			if lang.IsReserved(t.Signal) || t.Signal == lang.SigFailDefault || slices.Contains(live, t) || slices.Contains(b.Signals, t.Signal) {
				continue
			}
			pos := t.Pos
			if pos.Line == 0 {
				pos = b.Pos
			}
			if fp.p.Format == ir.YAML {
				ds.Add(pos, source.WDeadSignal, "step '%s' routes '%s', which it never emits (it emits %s; only provider steps emit custom signals)%s",
					b.ID, t.Signal, strings.Join(b.Signals, ", "), source.DidYouMean(t.Signal, b.Signals))
				continue
			}
			ds.Add(pos, source.WDeadSignal, "block '%s' has a transition on '%s', which its worker '%s' never emits (it emits %s)%s",
				b.ID, t.Signal, b.Worker, strings.Join(b.Signals, ", "), source.DidYouMean(t.Signal, b.Signals))
		}
	}
}

// cycles returns the strongly connected components of f that hold a cycle
// (more than one block, or a block with an edge to itself), each as block
// indices in layout order, ordered by their first block.
func cycles(f *flowGraph) [][]int {
	var out [][]int
	core, in := f.core()
	for id, ok := range in {
		if !ok && id < len(f.self) && f.self[id] {
			out = append(out, []int{id}) // a cycle alone, outside the core
		}
	}
	if len(core.order) == 0 {
		return out
	}
	for _, scc := range topo.TarjanSCC(core) {
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
	slices.SortFunc(out, func(a, b []int) int { return a[0] - b[0] })
	return out
}

// core returns the part of f that can hold a cycle of more than one node,
// for gonum's TarjanSCC, and in[id], whether node id belongs to it. A node
// with no edge in or no edge out (self edges aside) lies on no such cycle;
// removing it may leave its neighbours so, and they go too, until every
// node left has both. The components of the core are those of f; a node
// removed is a component alone. Most of a workflow is such chains: the
// core is usually small, and Tarjan keeps maps of every node it visits.
func (f *flowGraph) core() (*flowGraph, []bool) {
	n := len(f.nodes)
	nIn, nOut := make([]int32, n), make([]int32, n)
	in := make([]bool, n)
	var gone []int32 // removed, neighbours not yet updated
	for i := range n {
		nIn[i], nOut[i] = int32(len(f.pred[i])), int32(len(f.succ[i]))
		if in[i] = nIn[i] > 0 && nOut[i] > 0; !in[i] {
			gone = append(gone, int32(i))
		}
	}
	for len(gone) > 0 {
		v := gone[len(gone)-1]
		gone = gone[:len(gone)-1]
		for _, w := range f.succ[v] {
			if id := w.ID(); in[id] {
				if nIn[id]--; nIn[id] == 0 {
					in[id] = false
					gone = append(gone, int32(id))
				}
			}
		}
		for _, w := range f.pred[v] {
			if id := w.ID(); in[id] {
				if nOut[id]--; nOut[id] == 0 {
					in[id] = false
					gone = append(gone, int32(id))
				}
			}
		}
	}
	core := &flowGraph{nodes: f.nodes, self: f.self, exit: f.exit, order: []graph.Node{}}
	for id, ok := range in {
		if ok {
			core.order = append(core.order, f.nodes[id])
		}
	}
	if len(core.order) == 0 {
		return core, in
	}
	keep := func(adj [][]graph.Node) [][]graph.Node {
		out := make([][]graph.Node, n)
		for _, v := range core.order {
			for _, w := range adj[v.ID()] {
				if in[w.ID()] {
					out[v.ID()] = append(out[v.ID()], w)
				}
			}
		}
		return out
	}
	core.succ, core.pred = keep(f.succ), keep(f.pred)
	return core, in
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
	seen := reach(f.pred, int(f.exit))
	for _, c := range cycles(f) {
		if seen[c[0]] {
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

// checkSelfCalls warns about a block that can CALL its own node when the
// block is reachable from the node's entry block and no RETURN is: every
// such CALL pushes a frame that nothing pops, so the return stack grows
// with each round until the run fails with E_LIMIT (source.MaxCallDepth).
// The walk follows every edge of the flow graph, into callees too, so a
// RETURN of a node called on the way also counts as one: a warning is
// never wrong, though a recursion through such a callee is not warned
// about. A node is walked once, and only when one of its blocks calls it.
func checkSelfCalls(fp *flatProgram, f *flowGraph, ds *source.Diagnostics) {
	var walked map[int][]bool // node index -> blocks reachable from its entry, nil when a RETURN is
	var buf [16]*ir.Transition
	for i, fb := range fp.blocks {
		node := fp.p.Nodes[fb.node]
		var call *ir.Transition
		for _, t := range fb.b.Transitions {
			if t.Action == ir.Call && t.Target == node.ID && slices.Contains(appendLiveTransitions(buf[:0], fb.b), t) {
				call = t
				break
			}
		}
		if call == nil {
			continue
		}
		if walked == nil {
			walked = map[int][]bool{}
		}
		seen, ok := walked[fb.node]
		if !ok {
			if entry, ok := fp.nodeEntry(node.ID); ok {
				seen = reach(f.succ, entry)
				for j, r := range seen[:len(fp.blocks)] {
					if r && slices.ContainsFunc(appendLiveTransitions(buf[:0], fp.blocks[j].b), func(t *ir.Transition) bool { return t.Action == ir.Return }) {
						seen = nil
						break
					}
				}
			}
			walked[fb.node] = seen
		}
		if seen == nil || !seen[i] {
			continue
		}
		pos := call.Pos
		if pos.Line == 0 {
			pos = fb.b.Pos
		}
		ds.Add(pos, source.WCallNoReturn, "block '%s' calls its own node '%s' on '%s', and no RETURN is reachable from the node's entry block '%s': "+
			"each such CALL leaves a frame on the return stack that is never popped, until the run fails with E_LIMIT at %d; "+
			"use JUMP:%s to start the node again, or add the RETURN the callee is missing",
			fb.b.ID, node.ID, call.Signal, node.Entry, source.MaxCallDepth, node.Entry)
	}
}

// reach returns which nodes a path along adj (successors, or predecessors
// to walk backwards) leads to from node from, from included. It is a
// breadth-first walk over the graph's own slices: gonum's keeps a map of
// the visited nodes and an iterator per node.
func reach(adj [][]graph.Node, from int) []bool {
	seen := make([]bool, len(adj))
	seen[from] = true
	queue := make([]int32, 1, len(adj)) // each node enters it once at most
	queue[0] = int32(from)
	for k := 0; k < len(queue); k++ {
		for _, w := range adj[queue[k]] {
			if id := w.ID(); !seen[id] {
				seen[id] = true
				queue = append(queue, int32(id))
			}
		}
	}
	return seen
}
