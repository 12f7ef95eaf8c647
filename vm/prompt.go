package vm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"smith/isa"
	"smith/lang"
	"smith/source"
	"smith/workers/step"
)

// The prompt of an AI worker block (CONTRACT 7.3, docs/prompts.md) is
// assembled from the layers its payload_merge_strategy names, in that
// order. Each layer is a section:
//
//	=== ENTRY ===
//	body
//
// where ENTRY is the strategy entry as written (PAYLOAD, PAYLOAD:CODE_OUTPUT,
// ARTIFACT:docs/design.md, ...). Sections are separated by one empty line and
// the prompt ends with one newline. An empty body is "(empty)". The same
// state gives the same bytes: nothing comes from a map's order or the clock.

// Layer names of a payload_merge_strategy.
const (
	layerPayload  = lang.LayerPayload
	layerContract = lang.LayerContract
	layerMemory   = lang.LayerMemory
	layerArtifact = lang.LayerArtifact
	layerMetadata = lang.LayerMetadata
	layerLast     = lang.LayerLast
)

// defaultMergeStrategy is the payload_merge_strategy of a block that names
// none.
var defaultMergeStrategy = lang.DefaultPayloadMerge

// Texts of bodies that have nothing to show.
const (
	emptyBody      = "(empty)"
	notSetBody     = "(not set)"
	missingFileFmt = "(missing: no file '%s')"
)

// A promptInput is everything one prompt is assembled from.
type promptInput struct {
	strategy     []string
	payload      []step.Segment
	instructions string
	schemaName   string
	schemaText   string
	memory       map[string]any
	// artifact returns the text of a file relative to the worktree, or
	// fs.ErrNotExist (wrapped) when there is none.
	artifact func(path string) (string, error)
	runID    string
	node     string
	block    string
	worktree string // as shown: relative to BASE, with '/'
	attempt  int
}

// assemblePrompt renders in. A failure to read an artifact (a path that
// escapes, an unreadable file) is an error; a missing file is shown.
func assemblePrompt(in promptInput) (string, error) {
	strategy := in.strategy
	if len(strategy) == 0 {
		strategy = defaultMergeStrategy[:]
	}
	var b strings.Builder
	for i, entry := range strategy {
		body, err := layer(in, entry)
		if err != nil {
			return "", err
		}
		if body == "" {
			body = emptyBody
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("=== " + entry + " ===\n")
		b.WriteString(body)
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// layer renders the body of one strategy entry.
func layer(in promptInput, entry string) (string, error) {
	name, arg, hasArg, ok := lang.ParseLayer(entry)
	switch {
	case !ok:
	case name == layerPayload && !hasArg:
		return segments(in.payload), nil
	case name == layerPayload && arg == layerLast:
		if n := len(in.payload); n > 0 {
			return segments(in.payload[n-1:]), nil
		}
		return "", nil
	case name == layerPayload:
		var of []step.Segment
		for _, s := range in.payload {
			if s.Type == arg {
				of = append(of, s)
			}
		}
		return segments(of), nil
	case name == layerContract && !hasArg:
		return contract(in), nil
	case name == layerMemory && !hasArg:
		return canonical(in.memory)
	case name == layerMemory:
		v, ok := in.memory[arg]
		if !ok {
			return notSetBody, nil
		}
		if s, isStr := v.(string); isStr {
			return trimNewlines(s), nil
		}
		return canonical(v)
	case name == layerArtifact && hasArg:
		if in.artifact == nil {
			return "", &source.Error{Code: source.EExec, Msg: fmt.Sprintf("ARTIFACT:%s: the run has no workspace", arg)}
		}
		text, err := in.artifact(arg)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Sprintf(missingFileFmt, arg), nil
		}
		if err != nil {
			return "", err
		}
		return trimNewlines(text), nil
	case name == layerMetadata && !hasArg:
		return "run_id: " + in.runID + "\nnode: " + in.node + "\nblock: " + in.block +
			"\nworktree_path: " + in.worktree + "\nattempt: " + strconv.Itoa(in.attempt), nil
	}
	return "", &source.Error{Code: source.EExec, Msg: fmt.Sprintf("payload_merge_strategy entry '%s' is not a layer", entry)}
}

// segments renders segments in order, each as a "[TYPE id]" line followed
// by its content (trailing newlines removed), separated by an empty line.
func segments(segs []step.Segment) string {
	parts := make([]string, len(segs))
	for i, s := range segs {
		parts[i] = "[" + s.Type + " " + s.ID + "]\n" + trimNewlines(s.Content)
	}
	return strings.Join(parts, "\n\n")
}

// contract renders the worker's instructions and, with a validation
// schema, the JSON Schema the reply must satisfy.
func contract(in promptInput) string {
	var parts []string
	if s := trimNewlines(in.instructions); s != "" {
		parts = append(parts, s)
	}
	if in.schemaName != "" {
		parts = append(parts, "The reply must satisfy the JSON Schema '"+in.schemaName+"':\n"+trimNewlines(in.schemaText))
	}
	return strings.Join(parts, "\n\n")
}

// canonical prints v as compact JSON with sorted keys and no HTML escaping.
func canonical(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("print static memory: %w", err)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// trimNewlines removes trailing newlines (and carriage returns).
func trimNewlines(s string) string { return strings.TrimRight(s, "\r\n") }

// staticMemory returns the static memory the current block sees: its
// node's own, and, while the node inherits context, its caller's merged
// under it (the callee's keys win), up the call chain. The chain is the
// node that made the outermost CALL, then each called node; the current
// block's node stands in for the innermost.
func (m *Machine) staticMemory(blk *isa.Block) (map[string]any, error) {
	var chain []string
	rs := m.st.ReturnStack
	if len(rs) > 0 {
		if b := m.block(rs[0].CallBlock); b != nil {
			chain = append(chain, m.p.Nodes[b.Node].ID)
		}
		for _, f := range rs {
			chain = append(chain, f.Node)
		}
		chain = chain[:len(chain)-1]
	}
	chain = append(chain, m.p.Nodes[blk.Node].ID)
	out := map[string]any{}
	for i := len(chain) - 1; i >= 0; i-- {
		n := m.node(chain[i])
		if n == nil {
			break
		}
		mem, err := decodeMemory(n.StaticMemory)
		if err != nil {
			return nil, fmt.Errorf("static_memory of node '%s': %w", n.ID, err)
		}
		for k, v := range mem {
			if _, ok := out[k]; !ok {
				out[k] = v
			}
		}
		if !n.Inherit {
			break
		}
	}
	return out, nil
}

// node returns the node named id, or nil.
func (m *Machine) node(id string) *isa.Node {
	for i := range m.p.Nodes {
		if m.p.Nodes[i].ID == id {
			return &m.p.Nodes[i]
		}
	}
	return nil
}

// decodeMemory decodes a node's static memory (canonical JSON text, ""
// for none), keeping numbers as written.
func decodeMemory(text string) (map[string]any, error) {
	if text == "" {
		return nil, nil
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var mem map[string]any
	if err := dec.Decode(&mem); err != nil {
		return nil, err
	}
	return mem, nil
}

// workdir returns the run's worktree path: its git worktree, else
// WORKSPACE.
func (m *Machine) workdir() string {
	if m.st.WorktreePath != "" {
		return m.st.WorktreePath
	}
	return m.cfg.Dirs.Workspace
}

// shownWorkdir is the worktree path relative to BASE with '/', as the
// METADATA layer shows it (the same in every copy of BASE).
func (m *Machine) shownWorkdir() string {
	wd := m.workdir()
	if wd == "" || m.cfg.Dirs.Base == "" {
		return wd
	}
	rel, err := filepath.Rel(m.cfg.Dirs.Base, wd)
	if err != nil {
		return filepath.ToSlash(wd)
	}
	return filepath.ToSlash(rel)
}

// readArtifact reads a file relative to the worktree, through Files.
func (m *Machine) readArtifact(path string) (string, error) {
	return m.cfg.Host.ReadArtifact(m.cfg.Dirs, m.workdir(), path)
}

// prompt assembles the prompt of AI worker block blk for its attempt-th
// run.
func (m *Machine) prompt(blk *isa.Block, attempt int) (string, error) {
	s := blk.Step
	mem, err := m.staticMemory(blk)
	if err != nil {
		return "", &source.Error{Code: source.EExec, Msg: err.Error()}
	}
	in := promptInput{
		strategy: s.PayloadMerge,
		payload:  m.st.Payload,
		memory:   mem,
		runID:    m.st.RunID,
		node:     m.p.Nodes[blk.Node].ID,
		block:    blk.ID,
		worktree: m.shownWorkdir(),
		attempt:  attempt,
	}
	if s.AI != nil {
		in.instructions = s.AI.Instructions
	}
	if m.cfg.Dirs.Base != "" {
		in.artifact = m.readArtifact
	}
	if name := s.Validation; name != "" && usesLayer(in.strategy, layerContract) {
		set, err := m.schemaSet()
		if err != nil {
			return "", err
		}
		text, ok := set.Schema(name)
		if !ok {
			return "", &source.Error{Code: source.EUnknownSchema, Msg: fmt.Sprintf("validation schema '%s' is not defined%s",
				name, source.DidYouMean(name, set.Names()))}
		}
		in.schemaName, in.schemaText = name, text
	}
	return assemblePrompt(in)
}

// usesLayer reports whether strategy (the default when empty) has entry.
func usesLayer(strategy []string, entry string) bool {
	if len(strategy) == 0 {
		strategy = defaultMergeStrategy[:]
	}
	for _, s := range strategy {
		if s == entry {
			return true
		}
	}
	return false
}
