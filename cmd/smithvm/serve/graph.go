package serve

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/graph/formats/dot"
	"gonum.org/v1/gonum/graph/formats/dot/ast"

	"smith/compiler"
	"smith/isa"
	"smith/vm"
)

// BlockStatus maps each block (or step) of the run to the status its graph
// shows: the step result's status, "halted" for the block a halted run
// waits at and "running" for the current step of a running run. It is
// what `smithvm graph` and the viewer colour by.
func BlockStatus(st *vm.State) map[string]string {
	status := make(map[string]string, len(st.Steps)+1)
	for n, r := range st.Steps {
		status[n] = r.Status
		if r.Status == vm.StepRunning && st.Status != vm.StatusRunning {
			// Cut off by a stop or a crash: it runs again on resume.
			status[n] = vm.StatusInterrupted
		}
	}
	if st.IsHalted && st.HaltedBlock != "" {
		status[st.HaltedBlock] = vm.StatusHalted
	} else if st.Status == vm.StatusRunning && st.CurrentStep != "" {
		status[st.CurrentStep] = vm.StepRunning
	}
	return status
}

// WriteDOT writes the DOT of prog coloured by the run's state: the output
// of `smithvm graph`.
func WriteDOT(prog *isa.Program, st *vm.State, w io.Writer) error {
	return compiler.DOT(prog, w, compiler.DOTOptions{Status: BlockStatus(st)})
}

// StepOrder lists the run's step results in the program's order (prog may
// be nil: a workflow changed or removed since the run), then any others
// sorted, so every result shows. depth maps a step to how deep in loop
// bodies it is.
func StepOrder(st *vm.State, prog *isa.Program) (names []string, depth map[string]int) {
	seen := map[string]bool{}
	depth = map[string]int{}
	if prog != nil {
		for _, b := range prog.Blocks {
			if _, ok := st.Steps[b.ID]; ok && !seen[b.ID] {
				names = append(names, b.ID)
				seen[b.ID] = true
				for q := b; q.Parent != 0; q = prog.Blocks[q.Parent-1] {
					depth[b.ID]++
				}
			}
		}
	}
	var rest []string
	for n := range st.Steps {
		if !seen[n] {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	return append(names, rest...), depth
}

// bigGraph is the number of blocks above which the run page first shows
// the overview of a program with several Nodes (one box per Node): Graphviz
// in the browser lays out a few hundred blocks in well under a second, but
// 2,000 blocks take several seconds.
const bigGraph = 300

// statusRank orders the statuses an overview box takes from its blocks:
// the most telling one wins.
var statusRank = map[string]int{vm.StatusHalted: 5, vm.StepRunning: 4, vm.StepFailed: 3, vm.StepCompleted: 2, vm.StepSkipped: 1}

// A cluster is one Node of the DOT: its subgraph and its blocks' DOT ids.
type cluster struct {
	sub   *ast.Subgraph
	label string
	nodes []string
}

// dotViews holds the parsed DOT of a run's graph, to cut views from it.
type dotViews struct {
	g        *ast.Graph
	clusters []*cluster
	in       map[string]int // DOT node id -> cluster index
	nodes    map[string]*ast.NodeStmt
	prog     *isa.Program
	status   map[string]string
}

// parseViews parses the DOT text of prog's graph.
func parseViews(text []byte, prog *isa.Program, status map[string]string) (*dotViews, error) {
	f, err := dot.ParseBytes(text)
	if err != nil {
		return nil, fmt.Errorf("parse graph: %w", err)
	}
	if len(f.Graphs) != 1 {
		return nil, fmt.Errorf("parse graph: %d graphs, want 1", len(f.Graphs))
	}
	v := &dotViews{g: f.Graphs[0], in: map[string]int{}, nodes: map[string]*ast.NodeStmt{}, prog: prog, status: status}
	for _, s := range v.g.Stmts {
		switch s := s.(type) {
		case *ast.Subgraph:
			c := &cluster{sub: s, label: s.ID}
			for _, cs := range s.Stmts {
				switch cs := cs.(type) {
				case *ast.NodeStmt:
					v.in[cs.Node.ID] = len(v.clusters)
					v.nodes[cs.Node.ID] = cs
					c.nodes = append(c.nodes, cs.Node.ID)
				case *ast.AttrStmt:
					if l := attr(cs.Attrs, "label"); l != "" && cs.Kind == ast.GraphKind {
						c.label = l
					}
				case *ast.Attr:
					if cs.Key == "label" {
						c.label = cs.Val
					}
				}
			}
			v.clusters = append(v.clusters, c)
		case *ast.NodeStmt:
			if _, ok := v.nodes[s.Node.ID]; !ok || len(s.Attrs) > 0 {
				v.nodes[s.Node.ID] = s
			}
		}
	}
	return v, nil
}

// attr returns the value of key in attrs ("" when absent).
func attr(attrs []*ast.Attr, key string) string {
	for _, a := range attrs {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// blockOf returns the block ID of DOT node id ("b12"), or "".
func (v *dotViews) blockOf(id string) string {
	if !strings.HasPrefix(id, "b") {
		return ""
	}
	i, err := strconv.Atoi(id[1:])
	if err != nil || i < 0 || i >= len(v.prog.Blocks) {
		return ""
	}
	return v.prog.Blocks[i].ID
}

// edges calls fn for every edge statement A -> B of the graph.
func (v *dotViews) edges(fn func(e *ast.EdgeStmt, from, to string)) {
	for _, s := range v.g.Stmts {
		e, ok := s.(*ast.EdgeStmt)
		if !ok || e.To == nil || e.To.To != nil {
			continue
		}
		from, ok1 := e.From.(*ast.Node)
		to, ok2 := e.To.Vertex.(*ast.Node)
		if ok1 && ok2 {
			fn(e, from.ID, to.ID)
		}
	}
}

// clusterID is the DOT id of cluster k's box in the overview.
func clusterID(k int) string { return "c" + strconv.Itoa(k) }

// clusterBox writes the node statement of cluster k drawn as one box,
// filled like its most telling block.
func (v *dotViews) clusterBox(buf *bytes.Buffer, k int, shape string) {
	c := v.clusters[k]
	best, fill := 0, ""
	for _, id := range c.nodes {
		r := statusRank[v.status[v.blockOf(id)]]
		if r > best {
			if f := attr(v.nodes[id].Attrs, "fillcolor"); f != "" {
				best, fill = r, f
			}
		}
	}
	label := strings.Trim(c.label, `"`)
	fmt.Fprintf(buf, "  %s [label=%s shape=%s", clusterID(k), strconv.Quote(fmt.Sprintf("%s\n%d blocks", label, len(c.nodes))), shape)
	if fill != "" {
		fmt.Fprintf(buf, " style=filled fillcolor=%s", fill)
	}
	buf.WriteString("];\n")
}

// Overview returns a DOT with one box per Node (cluster) and one edge per
// pair of Nodes that some transition joins: what a 2,000-block program
// shows first.
func (v *dotViews) Overview() []byte {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "digraph %s {\n", v.g.ID)
	for k := range v.clusters {
		v.clusterBox(&buf, k, "box3d")
	}
	seen := map[[2]int]bool{}
	var pairs [][2]int
	v.edges(func(_ *ast.EdgeStmt, from, to string) {
		a, ok1 := v.in[from]
		b, ok2 := v.in[to]
		if ok1 && ok2 && a != b && !seen[[2]int{a, b}] {
			seen[[2]int{a, b}] = true
			pairs = append(pairs, [2]int{a, b})
		}
	})
	for _, p := range pairs {
		fmt.Fprintf(&buf, "  %s -> %s;\n", clusterID(p[0]), clusterID(p[1]))
	}
	buf.WriteString("}\n")
	return buf.Bytes()
}

// Cluster returns a DOT of Node k alone: its blocks and their edges, the
// exits they lead to, and one box per other Node they call or jump to.
func (v *dotViews) Cluster(k int) ([]byte, error) {
	if k < 0 || k >= len(v.clusters) {
		return nil, fmt.Errorf("no node %d in the graph", k)
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "digraph %s {\n  %s\n", v.g.ID, v.clusters[k].sub)
	others := map[int]bool{}
	exits := map[string]bool{}
	var lines []string
	v.edges(func(e *ast.EdgeStmt, from, to string) {
		a, okA := v.in[from]
		b, okB := v.in[to]
		inA, inB := okA && a == k, okB && b == k
		if !inA && !inB {
			return
		}
		ends := [2]string{from, to}
		for i, end := range ends {
			c, ok := v.in[end]
			switch {
			case ok && c != k:
				others[c] = true
				ends[i] = clusterID(c)
			case !ok:
				exits[end] = true
			}
		}
		s := *e
		s.From = &ast.Node{ID: ends[0]}
		s.To = &ast.Edge{Directed: true, Vertex: &ast.Node{ID: ends[1]}}
		lines = append(lines, s.String())
	})
	var ids []int
	for c := range others {
		ids = append(ids, c)
	}
	sort.Ints(ids)
	for _, c := range ids {
		v.clusterBox(&buf, c, "folder")
	}
	var names []string
	for n := range exits {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if s, ok := v.nodes[n]; ok {
			fmt.Fprintf(&buf, "  %s;\n", s)
		}
	}
	for _, l := range lines {
		fmt.Fprintf(&buf, "  %s;\n", l)
	}
	buf.WriteString("}\n")
	return buf.Bytes(), nil
}
