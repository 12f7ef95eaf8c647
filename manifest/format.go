package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// FormatYAML returns the canonical form of a YAML workflow: two-space
// indentation, the document's comments, quoting and flow/block styles
// kept, and its blank lines kept as one blank line each (runs of blank
// lines become one; blank lines inside block scalars are content and stay
// as they are). Formatting a formatted document changes nothing.
func FormatYAML(src []byte) ([]byte, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(src))
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, errors.New("more than one YAML document: a workflow is one document")
	}
	out, err := encodeYAML(&doc)
	if err != nil {
		return nil, err
	}
	// The encoder drops blank lines: put one back before each node that had
	// one before it (or before its head comment) in the source, finding the
	// node in the output by walking both trees in step.
	var again yaml.Node
	if err := yaml.Unmarshal(out, &again); err != nil {
		return nil, fmt.Errorf("internal error: formatted YAML does not parse: %v", err)
	}
	srcLines := strings.Split(string(src), "\n")
	outLines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	blankBefore := map[int]bool{} // output line numbers (1-based) to precede with a blank line
	// The encoder writes a folded (>) scalar's text on one line: its lines
	// as the source folded them replace the output's (index: 0-based output
	// line of the first content line).
	folded := map[int]foldedText{}
	if err := pairNodes(&doc, &again, func(a, b *yaml.Node, keyOrItem bool) {
		if keyOrItem && a.Line > 1 && hadBlankBefore(srcLines, a) {
			blankBefore[b.Line-commentLines(b.HeadComment)] = true
		}
		if a.Kind == yaml.ScalarNode && a.Style&yaml.FoldedStyle != 0 && b.Style&yaml.FoldedStyle != 0 {
			if src, ok := blockLines(srcLines, a.Line); ok {
				if dst, ok := blockLines(outLines, b.Line); ok {
					folded[dst.first] = foldedText{n: len(dst.lines), indent: dst.indent, lines: src.lines, srcIndent: src.indent}
				}
			}
		}
	}); err != nil {
		return nil, err
	}
	plain := join(outLines, blankBefore, nil)
	if len(folded) == 0 {
		return plain, nil
	}
	// Kept only when it means what the source means (it always should).
	withFolds := join(outLines, blankBefore, folded)
	var want, got any
	if yaml.Unmarshal(src, &want) != nil || yaml.Unmarshal(withFolds, &got) != nil || !reflect.DeepEqual(want, got) {
		return plain, nil
	}
	return withFolds, nil
}

// join writes lines with a blank line before those blankBefore names
// (1-based) and folded texts in place of the lines they replace.
func join(lines []string, blankBefore map[int]bool, folded map[int]foldedText) []byte {
	var b strings.Builder
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if blankBefore[i+1] && i > 0 && strings.TrimSpace(lines[i-1]) != "" {
			b.WriteByte('\n')
		}
		if f, ok := folded[i]; ok {
			for _, fl := range f.lines {
				if strings.TrimSpace(fl) != "" {
					b.WriteString(strings.Repeat(" ", f.indent) + fl[f.srcIndent:])
				}
				b.WriteByte('\n')
			}
			i += f.n - 1
			continue
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// A foldedText is the source lines of a folded scalar, to write in place
// of the n output lines of its text at indent.
type foldedText struct {
	n, indent int
	lines     []string
	srcIndent int
}

// A block is the content lines of a block scalar: from first (0-based),
// every line indented at least indent, blank lines inside included.
type block struct {
	first, indent int
	lines         []string
}

// blockLines returns the content of the block scalar whose indicator is on
// line header (1-based); ok is false when it has none.
func blockLines(lines []string, header int) (block, bool) {
	first := header // 0-based index of the line after the header
	bl := block{first: first, indent: -1}
	for i := first; i < len(lines); i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" {
			bl.lines = append(bl.lines, l)
			continue
		}
		ind := len(l) - len(strings.TrimLeft(l, " "))
		if bl.indent < 0 {
			bl.indent = ind
		}
		if ind < bl.indent {
			break
		}
		bl.lines = append(bl.lines, l)
	}
	// Trailing blank lines are the next node's business (a blank line
	// between nodes) or chomping's, which the encoder's header says.
	for len(bl.lines) > 0 && strings.TrimSpace(bl.lines[len(bl.lines)-1]) == "" {
		bl.lines = bl.lines[:len(bl.lines)-1]
	}
	if bl.indent <= 0 || len(bl.lines) == 0 {
		return block{}, false
	}
	return bl, true
}

func encodeYAML(n *yaml.Node) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// hadBlankBefore reports whether the source line before n (or before its
// head comment) is blank.
func hadBlankBefore(lines []string, n *yaml.Node) bool {
	i := n.Line - 1 - commentLines(n.HeadComment) - 1 // 0-based index of the line before
	return i >= 0 && i < len(lines) && strings.TrimSpace(lines[i]) == ""
}

// commentLines counts the lines of a head comment as the encoder prints it.
func commentLines(c string) int {
	if c == "" {
		return 0
	}
	return strings.Count(strings.TrimRight(c, "\n"), "\n") + 1
}

// pairNodes walks a and b, which must have the same shape, calling f on
// every pair of nodes below them; keyOrItem says a pair of mapping keys or
// sequence items.
func pairNodes(a, b *yaml.Node, f func(a, b *yaml.Node, keyOrItem bool)) error {
	if a.Kind != b.Kind || len(a.Content) != len(b.Content) {
		return fmt.Errorf("internal error: formatted YAML differs in shape at line %d", a.Line)
	}
	for i := range a.Content {
		ca, cb := a.Content[i], b.Content[i]
		f(ca, cb, a.Kind == yaml.MappingNode && i%2 == 0 || a.Kind == yaml.SequenceNode)
		if err := pairNodes(ca, cb, f); err != nil {
			return err
		}
	}
	return nil
}
