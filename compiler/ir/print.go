package ir

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// Print writes p as deterministic text: one line per node, block and
// transition, in document order, indented by nesting.
func Print(w io.Writer, p *Program) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "program %q (%s) entry %q\n", p.Name, p.Format, p.Entry)
	for _, n := range p.Nodes {
		fmt.Fprintf(bw, "node %q entry %q inherit=%t @ %s\n", n.ID, n.Entry, n.Inherit, n.Pos)
		for _, b := range n.Blocks {
			printBlock(bw, b, 1)
		}
	}
	return bw.Flush()
}

func printBlock(w *bufio.Writer, b *Block, depth int) {
	ind := strings.Repeat("  ", depth)
	fmt.Fprintf(w, "%sblock %q %s", ind, b.ID, b.Kind)
	if b.Worker != "" {
		fmt.Fprintf(w, " worker=%q", b.Worker)
	}
	if b.AI {
		w.WriteString(" ai")
	}
	if b.HasWhen {
		w.WriteString(" when")
	}
	if b.MaxVisits > 0 {
		fmt.Fprintf(w, " max_visits=%d", b.MaxVisits)
	}
	if len(b.Signals) > 0 {
		fmt.Fprintf(w, " signals=[%s]", strings.Join(b.Signals, " "))
	}
	fmt.Fprintf(w, " @ %s\n", b.Pos)
	for _, c := range b.Body {
		printBlock(w, c, depth+1)
	}
	for _, br := range b.Branches {
		fmt.Fprintf(w, "%s  branch %q @ %s\n", ind, br.Name, br.Pos)
		for _, c := range br.Body {
			printBlock(w, c, depth+2)
		}
	}
	for _, t := range b.Transitions {
		fmt.Fprintf(w, "%s  on %s -> %s\n", ind, t.Signal, t.actionText())
	}
}

func (t *Transition) actionText() string {
	switch t.Action {
	case Jump:
		return fmt.Sprintf("JUMP %q", t.Target)
	case Call:
		if t.ReturnTo != "" {
			return fmt.Sprintf("CALL %q return_to %q", t.Target, t.ReturnTo)
		}
		return fmt.Sprintf("CALL %q", t.Target)
	case Fail:
		return fmt.Sprintf("FAIL %q", t.Msg)
	}
	return t.Action.String()
}
