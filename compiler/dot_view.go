package compiler

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// A DOTView chooses what DOT draws; the zero value is the whole graph. The
// run viewer (smithvm serve) first shows a big program's overview, then
// one Node at a time: Graphviz in the browser lays out a few hundred blocks
// in well under a second, 2,000 in several.
type DOTView struct {
	kind viewKind
	node int
}

type viewKind uint8

const (
	viewAll viewKind = iota
	viewOverview
	viewNode
)

// DOTOverview draws one box per Node, filled like its most telling block
// (halted, running, failed, completed, skipped), and one edge per pair of
// Nodes that some transition joins.
func DOTOverview() DOTView { return DOTView{kind: viewOverview} }

// DOTNode draws Node k (its index in the program) alone: its blocks and
// their edges, the exits they lead to, and one box per other Node they
// call or jump to.
func DOTNode(k int) DOTView { return DOTView{kind: viewNode, node: k} }

// A NoNodeError is DOT's error for the view of a Node the program does not
// have.
type NoNodeError struct{ Node int }

func (e *NoNodeError) Error() string { return fmt.Sprintf("no node %d in the graph", e.Node) }

// A dotViews is a program's graph as its views cut it: the Nodes (the
// clusters of the whole graph), which cluster each graph node is in, and
// the edges in the order the whole graph lists them.
type dotViews struct {
	d        *dotBuilder
	status   map[string]string
	gid      string
	in       []int     // graph node -> cluster index, -1 for none (an exit)
	clusters [][]int64 // cluster -> its block nodes, in order
	order    []int     // indexes of d.edges: by from node, to node, then first use
}

func (d *dotBuilder) views(status map[string]string) *dotViews {
	v := &dotViews{d: d, status: status, gid: dotID(dotSafe(d.p.Name)),
		in: make([]int, len(d.nodes)), clusters: make([][]int64, len(d.p.Nodes))}
	for i := range v.in {
		v.in[i] = -1
		if i < len(d.p.Blocks) {
			if c := int(d.p.Blocks[i].Node); c < len(v.clusters) {
				v.in[i] = c
				v.clusters[c] = append(v.clusters[c], int64(i))
			}
		}
	}
	v.order = make([]int, len(d.edges))
	for i := range v.order {
		v.order[i] = i
	}
	sort.SliceStable(v.order, func(i, j int) bool {
		a, b := d.edges[v.order[i]], d.edges[v.order[j]]
		return a.from < b.from || a.from == b.from && a.to < b.to
	})
	return v
}

// writeView writes the view opt.View chooses.
func (d *dotBuilder) writeView(w io.Writer, opt DOTOptions) error {
	v := d.views(opt.Status)
	var buf bytes.Buffer
	switch opt.View.kind {
	case viewOverview:
		v.overview(&buf)
	case viewNode:
		if opt.View.node < 0 || opt.View.node >= len(v.clusters) {
			return &NoNodeError{opt.View.node}
		}
		v.node(&buf, opt.View.node)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// overview writes one box per Node and one edge per pair of Nodes.
func (v *dotViews) overview(buf *bytes.Buffer) {
	fmt.Fprintf(buf, "digraph %s {\n", v.gid)
	for k := range v.clusters {
		v.box(buf, k, "box3d")
	}
	seen := map[[2]int]bool{}
	for _, i := range v.order {
		e := v.d.edges[i]
		a, b := v.in[e.from], v.in[e.to]
		if a >= 0 && b >= 0 && a != b && !seen[[2]int{a, b}] {
			seen[[2]int{a, b}] = true
			fmt.Fprintf(buf, "  %s -> %s;\n", boxID(a), boxID(b))
		}
	}
	buf.WriteString("}\n")
}

// node writes Node k alone.
func (v *dotViews) node(buf *bytes.Buffer, k int) {
	fmt.Fprintf(buf, "digraph %s {\n  subgraph %s {graph [label=%s]", v.gid, dotID(clusterName(k)), dotID(dotSafe(v.d.p.Nodes[k].ID)))
	for _, n := range v.clusters[k] {
		buf.WriteByte(' ')
		v.nodeStmt(buf, n)
	}
	buf.WriteString("}\n")
	others := map[int]bool{}
	exits := map[string]int64{}
	var lines bytes.Buffer
	for _, i := range v.order {
		e := v.d.edges[i]
		if v.in[e.from] != k && v.in[e.to] != k {
			continue
		}
		ends := [2]string{}
		for j, n := range [2]int64{e.from, e.to} {
			switch c := v.in[n]; {
			case c == k:
				ends[j] = dotID(v.d.nodes[n].dotID)
			case c >= 0:
				others[c] = true
				ends[j] = boxID(c)
			default:
				ends[j] = dotID(v.d.nodes[n].dotID)
				exits[ends[j]] = n
			}
		}
		fmt.Fprintf(&lines, "  %s -> %s", ends[0], ends[1])
		writeAttrs(&lines, v.d.edgeAttrs(e))
		lines.WriteString(";\n")
	}
	var ids []int
	for c := range others {
		ids = append(ids, c)
	}
	sort.Ints(ids)
	for _, c := range ids {
		v.box(buf, c, "folder")
	}
	var names []string
	for n := range exits {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		buf.WriteString("  ")
		v.nodeStmt(buf, exits[n])
		buf.WriteString(";\n")
	}
	buf.Write(lines.Bytes())
	buf.WriteString("}\n")
}

// box writes Node k drawn as one box of shape, filled like its most
// telling block.
func (v *dotViews) box(buf *bytes.Buffer, k int, shape string) {
	best, fill := 0, ""
	for _, n := range v.clusters[k] {
		s := v.status[v.d.p.Blocks[n].ID]
		if r := statusRank(s); r > best {
			best, fill = r, statusColor(s)
		}
	}
	label := fmt.Sprintf("%s\n%d blocks", v.d.p.Nodes[k].ID, len(v.clusters[k]))
	fmt.Fprintf(buf, "  %s [label=%s shape=%s", boxID(k), strconv.Quote(label), shape)
	if fill != "" {
		fmt.Fprintf(buf, " style=filled fillcolor=%s", fill)
	}
	buf.WriteString("];\n")
}

// nodeStmt writes graph node n with its attributes, on one line.
func (v *dotViews) nodeStmt(buf *bytes.Buffer, n int64) {
	buf.WriteString(dotID(v.d.nodes[n].dotID))
	writeAttrs(buf, v.d.nodes[n].attrs)
}

// writeAttrs writes " [k=v k=v]", nothing for no attributes.
func writeAttrs(buf *bytes.Buffer, attrs attrList) {
	for i, a := range attrs {
		if i == 0 {
			buf.WriteString(" [")
		} else {
			buf.WriteByte(' ')
		}
		buf.WriteString(dotID(a.Key) + "=" + dotID(a.Value))
	}
	if len(attrs) > 0 {
		buf.WriteByte(']')
	}
}

// boxID is the DOT id of Node k's box in a view.
func boxID(k int) string { return "c" + strconv.Itoa(k) }

// clusterName is the DOT id of Node k's cluster in the whole graph.
func clusterName(k int) string { return "cluster_" + strconv.Itoa(k) }

// dotID writes s as a DOT ID the way the whole graph's encoder
// (gonum's encoding/dot) does, so that the views name what the graph
// names: a keyword, or a string that is neither an identifier, a numeral,
// a quoted string nor an HTML string, is quoted.
func dotID(s string) string {
	switch strings.ToLower(s) {
	case "node", "edge", "graph", "digraph", "subgraph", "strict":
		return strconv.Quote(s)
	}
	if isDOTIdent(s) || isDOTNumeral(s) || len(s) >= 2 && s[0] == '<' && s[len(s)-1] == '>' {
		return s
	}
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		if _, err := strconv.Unquote(s); err == nil {
			return s
		}
	}
	return strconv.Quote(s)
}

// isDOTIdent: [a-zA-Z\u0080-\u00ff_][0-9a-zA-Z\u0080-\u00ff_]*.
func isDOTIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= 0x80 && r <= 0xff || r == '_'
		if !letter && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// isDOTNumeral: -?(\.[0-9]+|[0-9]+(\.[0-9]*)?).
func isDOTNumeral(s string) bool {
	s = strings.TrimPrefix(s, "-")
	whole, frac, dot := strings.Cut(s, ".")
	digits := func(t string) bool {
		for _, r := range t {
			if r < '0' || r > '9' {
				return false
			}
		}
		return true
	}
	if !digits(whole) || !digits(frac) {
		return false
	}
	if whole == "" {
		return dot && frac != ""
	}
	return true
}
