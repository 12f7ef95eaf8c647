package manifest

import (
	"bytes"
	"errors"
	"fmt"
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
	blankBefore := map[int]bool{} // output line numbers (1-based) to precede with a blank line
	if err := pairNodes(&doc, &again, func(a, b *yaml.Node) {
		if a.Line > 1 && hadBlankBefore(srcLines, a) {
			blankBefore[b.Line-commentLines(b.HeadComment)] = true
		}
	}); err != nil {
		return nil, err
	}
	outLines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	var b strings.Builder
	for i, l := range outLines {
		if blankBefore[i+1] && i > 0 && strings.TrimSpace(outLines[i-1]) != "" {
			b.WriteByte('\n')
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return []byte(b.String()), nil
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
// every pair of mapping keys and sequence items.
func pairNodes(a, b *yaml.Node, f func(a, b *yaml.Node)) error {
	if a.Kind != b.Kind || len(a.Content) != len(b.Content) {
		return fmt.Errorf("internal error: formatted YAML differs in shape at line %d", a.Line)
	}
	for i := range a.Content {
		ca, cb := a.Content[i], b.Content[i]
		switch {
		case a.Kind == yaml.MappingNode && i%2 == 0, a.Kind == yaml.SequenceNode:
			f(ca, cb)
		}
		if err := pairNodes(ca, cb, f); err != nil {
			return err
		}
	}
	return nil
}
