package compiler

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/encoding"
	"gonum.org/v1/gonum/graph/encoding/dot"
	"gonum.org/v1/gonum/graph/multi"

	"smith/isa"
	"smith/lang"
)

// DOTOptions configures DOT. The zero value draws the plain graph.
type DOTOptions struct {
	// Status maps a block ID to its run status: "completed", "failed",
	// "skipped", "running", "halted" or "interrupted". A block with a status is filled
	// with the status's colour; other statuses are ignored.
	Status map[string]string
	// View chooses what is drawn: the whole graph (the zero value), the
	// overview (DOTOverview) or one Node alone (DOTNode).
	View DOTView
}

// statusColors are the fill colours of the run statuses; rank orders the
// statuses an overview box takes from its blocks (the most telling one
// wins, 0 never).
var statusColors = [...]struct {
	status, color string
	rank          int
}{
	{"completed", "palegreen", 2},
	{"failed", "lightcoral", 3},
	{"skipped", "lightgray", 1},
	{"running", "lightskyblue", 4},
	{"halted", "orange", 5},
	{"interrupted", "plum", 0}, // a step cut off by a stop or a crash, run again on resume
}

func statusColor(status string) string {
	for _, s := range statusColors {
		if s.status == status {
			return s.color
		}
	}
	return ""
}

func statusRank(status string) int {
	for _, s := range statusColors {
		if s.status == status {
			return s.rank
		}
	}
	return 0
}

// DOT writes the control-flow graph of a compiled program in Graphviz DOT:
// blocks as boxes (AI and provider blocks rounded), each Node as a cluster,
// an edge per transition target labelled with its signals (the default as
// FAIL_DEFAULT), CALL edges dashed to the callee's entry block (and a
// dotted "return" edge when the call returns to another block), loop
// blocks with an "each" edge to their body and "next", "break" and "fail"
// edges back from it, and the exits as nodes of their own: END
// (doublecircle), RETURN (cds), HALT (octagon, one per halting block) and
// "FAIL: message" (doubleoctagon, one per message). The output is
// deterministic: graph node IDs follow the block order of the program.
// opt.View draws the overview or one Node instead (dot_view.go).
func DOT(p *isa.Program, w io.Writer, opt DOTOptions) error {
	d, err := buildDOT(p, opt)
	if err != nil {
		return fmt.Errorf("dot of %s: %w", p.Name, err)
	}
	if opt.View.kind != viewAll {
		return d.writeView(w, opt)
	}
	b, err := dot.MarshalMulti(d.graph(), "", "", "  ")
	if err != nil {
		return fmt.Errorf("dot of %s: %w", p.Name, err)
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// dotGraph is the top-level graph: every node and every edge, with the
// Nodes of the program as cluster subgraphs.
type dotGraph struct {
	*multi.DirectedGraph
	name     string
	clusters []dot.Multigraph
}

// DOTID returns the graph's name.
func (g *dotGraph) DOTID() string { return g.name }

// Structure returns the cluster subgraphs.
func (g *dotGraph) Structure() []dot.Multigraph { return g.clusters }

// dotCluster is one Node of the program: its blocks, with their attributes.
type dotCluster struct {
	*multi.DirectedGraph
	id    string
	attrs attrList
}

// DOTID returns the cluster's ID (cluster_N).
func (c *dotCluster) DOTID() string { return c.id }

// DOTAttributers returns the cluster's graph attributes.
func (c *dotCluster) DOTAttributers() (g, n, e encoding.Attributer) {
	return c.attrs, attrList(nil), attrList(nil)
}

// attrList is a list of DOT attributes in output order.
type attrList []encoding.Attribute

// Attributes returns the list.
func (a attrList) Attributes() []encoding.Attribute { return a }

// dotNode is a graph node with a DOT ID and attributes.
type dotNode struct {
	id    int64
	dotID string
	attrs attrList
}

// ID returns the gonum node ID.
func (n *dotNode) ID() int64 { return n.id }

// DOTID returns the node's DOT ID.
func (n *dotNode) DOTID() string { return n.dotID }

// Attributes returns the node's attributes.
func (n *dotNode) Attributes() []encoding.Attribute { return n.attrs }

// dotLine is one edge.
type dotLine struct {
	f, t  graph.Node
	uid   int64
	attrs attrList
}

// From returns the edge's source.
func (l *dotLine) From() graph.Node { return l.f }

// To returns the edge's target.
func (l *dotLine) To() graph.Node { return l.t }

// ReversedLine returns the edge reversed.
func (l *dotLine) ReversedLine() graph.Line { return &dotLine{l.t, l.f, l.uid, l.attrs} }

// ID returns the edge's ID.
func (l *dotLine) ID() int64 { return l.uid }

// Attributes returns the edge's attributes.
func (l *dotLine) Attributes() []encoding.Attribute { return l.attrs }

// Edge styles.
const (
	styleSolid  = ""
	styleDashed = "dashed" // CALL
	styleDotted = "dotted" // where a CALL returns to
)

// edgeKey groups the signals that lead from one node to another in one style.
type edgeKey struct {
	from, to int64
	style    string
}

// dotBuilder collects the nodes and edges of a program's graph.
type dotBuilder struct {
	p     *isa.Program
	nodes []*dotNode // by gonum ID
	// exits, created on first use
	end, ret int64
	halts    map[uint32]int64 // halting block -> node
	fails    map[uint32]int64 // message string -> node
	// edges in order of first use, with their labels
	edges  []edgeKey
	labels map[edgeKey][]string
}

func (d *dotBuilder) addNode(dotID string, attrs attrList) int64 {
	id := int64(len(d.nodes))
	d.nodes = append(d.nodes, &dotNode{id: id, dotID: dotID, attrs: attrs})
	return id
}

func (d *dotBuilder) edge(from, to int64, style, label string) {
	k := edgeKey{from, to, style}
	ls, ok := d.labels[k]
	if !ok {
		d.edges = append(d.edges, k)
	}
	for _, l := range ls {
		if l == label {
			return
		}
	}
	d.labels[k] = append(ls, label)
}

// exit returns the node of an exit, creating it on first use.
func (d *dotBuilder) exit(id *int64, dotID string, attrs attrList) int64 {
	if *id < 0 {
		*id = d.addNode(dotID, attrs)
	}
	return *id
}

func buildDOT(p *isa.Program, opt DOTOptions) (*dotBuilder, error) {
	d := &dotBuilder{p: p, end: -1, ret: -1, halts: map[uint32]int64{}, fails: map[uint32]int64{}, labels: map[edgeKey][]string{}}
	nb := uint32(len(p.Blocks))
	startOf := make(map[uint32]int64, nb) // pc -> block whose first instruction it is
	for i, b := range p.Blocks {
		attrs := attrList{{Key: "label", Value: dotSafe(b.ID)}, {Key: "shape", Value: "box"}}
		var style []string
		if b.Kind == isa.KindProvider || b.Step != nil && b.Step.AI != nil {
			style = append(style, "rounded")
		}
		if c := statusColor(opt.Status[b.ID]); c != "" {
			style = append(style, "filled")
			attrs = append(attrs, encoding.Attribute{Key: "fillcolor", Value: c})
		}
		if len(style) > 0 {
			attrs = append(attrs, encoding.Attribute{Key: "style", Value: strings.Join(style, ",")})
		}
		d.addNode(fmt.Sprintf("b%d", i), attrs)
		startOf[b.Start] = int64(i)
	}
	loopNextAt := map[uint32]int64{} // pc of a LOOP_NEXT -> its loop block
	for pc, in := range p.Code {
		if in.Op == isa.OpLoopNext {
			if in.A >= nb {
				return nil, fmt.Errorf("LOOP_NEXT at %04d names block %d of %d", pc, in.A, nb)
			}
			loopNextAt[uint32(pc)] = int64(in.A)
		}
	}

	for i, b := range p.Blocks {
		from := int64(i)
		if b.Kind == isa.KindLoop && b.Loop != nil && len(b.Loop.Steps) > 0 {
			if b.Loop.Steps[0] >= nb {
				return nil, fmt.Errorf("loop %q has body block %d of %d", b.ID, b.Loop.Steps[0], nb)
			}
			d.edge(from, int64(b.Loop.Steps[0]), styleSolid, "each")
		}
		if b.Kind == isa.KindParallel && b.Par != nil {
			for _, br := range b.Par.Branches {
				if len(br.Steps) > 0 && br.Steps[0] < nb {
					d.edge(from, int64(br.Steps[0]), styleSolid, "branch "+br.Name)
				}
			}
		}
		if int(b.Dispatch) >= len(p.Code) || p.Code[b.Dispatch].Op != isa.OpDispatch {
			return nil, fmt.Errorf("block %q has no DISPATCH at %04d", b.ID, b.Dispatch)
		}
		ti := p.Code[b.Dispatch].A
		if int(ti) >= len(p.Tables) {
			return nil, fmt.Errorf("block %q dispatches on table %d of %d", b.ID, ti, len(p.Tables))
		}
		t := p.Tables[ti]
		can, anySignal := emits(b)
		covered := map[string]bool{}
		for _, e := range t.Entries {
			// An entry for a reserved signal the block never emits (a YAML
			// step's skipped handler without a condition) is not drawn.
			if lang.IsReserved(e.Signal) && !can[e.Signal] {
				continue
			}
			covered[e.Signal] = true
			if err := d.action(from, e.Signal, e.PC, startOf, loopNextAt); err != nil {
				return nil, fmt.Errorf("block %q: %w", b.ID, err)
			}
		}
		if t.HasDefault && (anySignal || !coversAll(can, covered)) {
			if err := d.action(from, "FAIL_DEFAULT", t.Default, startOf, loopNextAt); err != nil {
				return nil, fmt.Errorf("block %q: %w", b.ID, err)
			}
		}
	}
	return d, nil
}

// emits returns the reserved signals a compiled block can produce, and
// whether it can produce any other signal too, as the compiler recorded
// them in the program (isa.Block.Signals, AnySignal). A program without
// them (assembled by hand) is drawn whole.
func emits(b isa.Block) (map[string]bool, bool) {
	if b.Signals == nil {
		all := map[string]bool{}
		for _, s := range lang.ReservedSignals {
			all[s] = true
		}
		return all, true
	}
	can := map[string]bool{}
	for _, s := range b.Signals {
		can[s] = true
	}
	return can, b.AnySignal
}

// coversAll reports whether every signal in can has an entry other than the
// default, by the VM's lookup (lang.Dispatch).
func coversAll(can, covered map[string]bool) bool {
	entry := func(s string) (bool, bool) { return true, s != lang.SigFailDefault && covered[s] }
	for s := range can {
		if _, ok := lang.Dispatch(s, entry); !ok {
			return false
		}
	}
	return true
}

// action adds the edge of one table entry of block from: signal selects
// the action at pc.
func (d *dotBuilder) action(from int64, signal string, pc uint32, startOf, loopNextAt map[uint32]int64) error {
	p := d.p
	if int(pc) >= len(p.Code) {
		return fmt.Errorf("signal %s selects pc %04d of %d", signal, pc, len(p.Code))
	}
	in := p.Code[pc]
	switch in.Op {
	case isa.OpJump:
		if to, ok := startOf[in.A]; ok {
			d.edge(from, to, styleSolid, signal)
			return nil
		}
		if loop, ok := loopNextAt[in.A]; ok {
			d.edge(from, loop, styleSolid, "next")
			return nil
		}
		return fmt.Errorf("JUMP at %04d goes to %04d, which starts no block", pc, in.A)
	case isa.OpCall:
		if int(in.A) >= len(p.Nodes) || int(p.Nodes[in.A].Entry) >= len(p.Blocks) {
			return fmt.Errorf("CALL at %04d names node %d of %d", pc, in.A, len(p.Nodes))
		}
		d.edge(from, int64(p.Nodes[in.A].Entry), styleDashed, signal)
		ret, ok := startOf[in.B]
		if !ok {
			return fmt.Errorf("CALL at %04d returns to %04d, which starts no block", pc, in.B)
		}
		if ret != from {
			d.edge(from, ret, styleDotted, "return")
		}
	case isa.OpReturn:
		d.edge(from, d.exit(&d.ret, "return", attrList{{Key: "label", Value: "RETURN"}, {Key: "shape", Value: "cds"}}), styleSolid, signal)
	case isa.OpEnd:
		d.edge(from, d.exit(&d.end, "end", attrList{{Key: "label", Value: "END"}, {Key: "shape", Value: "doublecircle"}}), styleSolid, signal)
	case isa.OpHaltAndFlag:
		id, ok := d.halts[in.A]
		if !ok {
			id = d.addNode(fmt.Sprintf("halt_%d", in.A), attrList{{Key: "label", Value: "HALT"}, {Key: "shape", Value: "octagon"}})
			d.halts[in.A] = id
		}
		d.edge(from, id, styleSolid, signal)
	case isa.OpFail:
		if int(in.A) >= len(p.Templates) {
			return fmt.Errorf("FAIL at %04d names template %d of %d", pc, in.A, len(p.Templates))
		}
		id, ok := d.fails[in.A]
		if !ok {
			id = d.addNode(fmt.Sprintf("fail_%d", in.A), attrList{{Key: "label", Value: dotSafe("FAIL: " + p.Templates[in.A].Source())}, {Key: "shape", Value: "doubleoctagon"}})
			d.fails[in.A] = id
		}
		d.edge(from, id, styleSolid, signal)
	case isa.OpLoopBreak, isa.OpLoopFail:
		if int(in.A) >= len(p.Blocks) {
			return fmt.Errorf("%s at %04d names block %d of %d", in.Op, pc, in.A, len(p.Blocks))
		}
		label := "break"
		if in.Op == isa.OpLoopFail {
			label = "fail"
		}
		d.edge(from, int64(in.A), styleSolid, label)
	case isa.OpBranchEnd, isa.OpBranchFail:
		if int(in.A) >= len(p.Blocks) {
			return fmt.Errorf("%s at %04d names block %d of %d", in.Op, pc, in.A, len(p.Blocks))
		}
		label := "branch end"
		if in.Op == isa.OpBranchFail {
			label = "branch fail"
		}
		d.edge(from, int64(in.A), styleSolid, label)
	default:
		return fmt.Errorf("signal %s selects %s at %04d, which is not an action", signal, in.Op, pc)
	}
	return nil
}

// graph assembles the gonum graph: every node and edge at top level, and
// one cluster per program Node holding its blocks.
func (d *dotBuilder) graph() *dotGraph {
	g := &dotGraph{DirectedGraph: multi.NewDirectedGraph(), name: dotSafe(d.p.Name)}
	clusters := make([]*dotCluster, len(d.p.Nodes))
	for i, n := range d.p.Nodes {
		clusters[i] = &dotCluster{
			DirectedGraph: multi.NewDirectedGraph(),
			id:            clusterName(i),
			attrs:         attrList{{Key: "label", Value: dotSafe(n.ID)}},
		}
		g.clusters = append(g.clusters, clusters[i])
	}
	for i, n := range d.nodes {
		if i < len(d.p.Blocks) && int(d.p.Blocks[i].Node) < len(clusters) {
			// The cluster declares the block with its attributes; the top
			// level names it only.
			clusters[d.p.Blocks[i].Node].AddNode(n)
			g.AddNode(&dotNode{id: n.id, dotID: n.dotID})
			continue
		}
		g.AddNode(n)
	}
	for uid, k := range d.edges {
		g.SetLine(&dotLine{f: g.Node(k.from), t: g.Node(k.to), uid: int64(uid), attrs: d.edgeAttrs(k)})
	}
	return g
}

// edgeAttrs are the attributes of edge k: its signals, its style.
func (d *dotBuilder) edgeAttrs(k edgeKey) attrList {
	attrs := attrList{{Key: "label", Value: dotSafe(strings.Join(d.labels[k], "\n"))}}
	if k.style != styleSolid {
		attrs = append(attrs, encoding.Attribute{Key: "style", Value: k.style})
	}
	return attrs
}

// dotSafe makes a name or label from the document safe as a DOT ID: the
// encoder writes a string of the form <...> as it is (an HTML string), so
// such a one is quoted here; every other string the encoder quotes itself.
func dotSafe(s string) string {
	if len(s) >= 2 && strings.HasPrefix(s, "<") && strings.HasSuffix(s, ">") {
		return strconv.Quote(s)
	}
	return s
}
