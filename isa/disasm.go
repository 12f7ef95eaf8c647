package isa

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"smith/lang"
	"smith/source"
)

// headerFormat is the first line of every listing; Assemble reads the isa
// version from it.
const headerFormat = "; smith program, isa %d\n"

// blockSpec is the part of a Block that its listing line does not show:
// the run-time spec, printed as one line of canonical JSON.
type blockSpec struct {
	Parent    uint32   `json:"parent,omitempty"`
	MaxVisits int      `json:"max_visits,omitempty"`
	Signals   []string `json:"signals,omitempty"`
	AnySignal bool     `json:"any_signal,omitempty"`
	When      *Cond    `json:"when,omitempty"`
	Agent     string   `json:"agent,omitempty"`
	Step      *Step    `json:"step,omitempty"`
	Set       []Field  `json:"set_context,omitempty"`
	Loop      *Loop    `json:"loop,omitempty"`
	Par       *Par     `json:"parallel,omitempty"`
}

// runData is the run-wide data of a Program, printed as one line of
// canonical JSON.
type runData struct {
	StrictFlow bool          `json:"strict_flow,omitempty"`
	Context    *TValue       `json:"context,omitempty"`
	Secrets    []string      `json:"secrets,omitempty"`
	EnvAllow   []string      `json:"env_allow,omitempty"`
	Env        []EnvVar      `json:"env,omitempty"`
	Providers  []ProviderDef `json:"providers,omitempty"`
	Agents     []AgentDef    `json:"agents,omitempty"`
	Schemas    []SchemaDef   `json:"schemas,omitempty"`
	Config     lang.Config   `json:"config"`
	RunStep    string        `json:"run_step,omitempty"`
}

func specOf(b *Block) blockSpec {
	return blockSpec{Parent: b.Parent, MaxVisits: b.MaxVisits, Signals: b.Signals, AnySignal: b.AnySignal,
		When: b.When, Agent: b.Agent, Step: b.Step, Set: b.Set, Loop: b.Loop, Par: b.Par}
}

func (s blockSpec) apply(b *Block) {
	b.Parent, b.MaxVisits, b.When, b.Step, b.Set, b.Loop = s.Parent, s.MaxVisits, s.When, s.Step, s.Set, s.Loop
	b.Agent, b.Par = s.Agent, s.Par
	b.Signals, b.AnySignal = s.Signals, s.AnySignal
}

func dataOf(p *Program) runData {
	return runData{p.StrictFlow, p.Context, p.Secrets, p.EnvAllow, p.Env, p.Providers, p.Agents, p.Schemas, p.Config, p.RunStep}
}

func (d runData) apply(p *Program) {
	p.StrictFlow, p.Context, p.Secrets, p.EnvAllow, p.Env = d.StrictFlow, d.Context, d.Secrets, d.EnvAllow, d.Env
	p.Providers, p.Agents, p.Schemas, p.Config, p.RunStep = d.Providers, d.Agents, d.Schemas, d.Config, d.RunStep
}

// barePosFile is a file name that a listing prints without quotes.
var barePosFile = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[^\s";@]+$`) })

// formatPos prints a position for a listing: "-" when unknown, else
// FILE:LINE:COL, FILE Go-quoted unless it is a plain name. Unlike
// Pos.String it never drops a field, so Assemble gets back the same Pos.
func formatPos(p source.Pos) string {
	if p == (source.Pos{}) {
		return "-"
	}
	f := p.File
	if !barePosFile().MatchString(f) || f == "-" {
		f = strconv.Quote(f)
	}
	return fmt.Sprintf("%s:%d:%d", f, p.Line, p.Col)
}

// Disassemble writes p as assembly text: a header, the pools (strings,
// templates as canonical JSON, nodes, blocks with their run-time spec, transition tables, run-wide
// data), then the code, one instruction per line with its source position,
// grouped under the node of the block each instruction belongs to (the
// block with the nearest preceding start). The text is stable, and
// Assemble reads it back into the same Program. A program that fails
// Verify still prints, with "?" for what its operands do not name.
func (p *Program) Disassemble(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, headerFormat, Version)
	fmt.Fprintf(&b, "program %q format %q source %q entry %04d\n", p.Name, p.Format, p.Source, p.Entry)
	if len(p.Strings) > 0 || len(p.Templates) > 0 {
		b.WriteByte('\n')
	}
	for i, s := range p.Strings {
		fmt.Fprintf(&b, "string %d %q\n", i, s)
	}
	for i := range p.Templates {
		t, err := marshalJSON(&p.Templates[i])
		if err != nil {
			return fmt.Errorf("disassemble template %d: %w", i, err)
		}
		fmt.Fprintf(&b, "template %d %s\n", i, t)
	}
	if len(p.Nodes) > 0 {
		b.WriteByte('\n')
	}
	for i, n := range p.Nodes {
		fmt.Fprintf(&b, "node %d %q entry %d inherit=%t @ %s\n", i, n.ID, n.Entry, n.Inherit, formatPos(n.Pos))
		if n.StaticMemory != "" {
			fmt.Fprintf(&b, "  memory %s\n", memoryText(n.StaticMemory))
		}
	}
	if len(p.Blocks) > 0 {
		b.WriteByte('\n')
	}
	for i := range p.Blocks {
		bl := &p.Blocks[i]
		fmt.Fprintf(&b, "block %d %q %s node %d start %04d dispatch %04d @ %s\n",
			i, bl.ID, kindName(bl.Kind), bl.Node, bl.Start, bl.Dispatch, formatPos(bl.Pos))
		spec, err := marshalJSON(specOf(bl))
		if err != nil {
			return fmt.Errorf("disassemble block %q: %w", bl.ID, err)
		}
		if string(spec) != "{}" {
			fmt.Fprintf(&b, "  spec %s\n", spec)
		}
	}
	if len(p.Tables) > 0 {
		b.WriteByte('\n')
	}
	for i, t := range p.Tables {
		fmt.Fprintf(&b, "table %d block %d", i, t.Block)
		if t.HasDefault {
			fmt.Fprintf(&b, " default %04d", t.Default)
		}
		if name, err := p.Operand(BlockIdx, t.Block); err == nil {
			fmt.Fprintf(&b, "  ; %s", name)
		}
		b.WriteByte('\n')
		for _, e := range t.Entries {
			fmt.Fprintf(&b, "  %q %04d\n", e.Signal, e.PC)
		}
	}
	data, err := marshalJSON(dataOf(p))
	if err != nil {
		return fmt.Errorf("disassemble run-wide data: %w", err)
	}
	fmt.Fprintf(&b, "\ndata %s\n\n", data)
	p.disassembleCode(&b)
	_, err = w.Write(b.Bytes())
	return err
}

// marshalJSON is the canonical JSON of v: encoding/json without HTML
// escaping, on one line.
func marshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// memoryText prints a node's static memory: as is when it is compact JSON,
// else Go-quoted.
func memoryText(s string) string {
	var c bytes.Buffer
	if (s[0] == '{' || s[0] == '[') && json.Compact(&c, []byte(s)) == nil && c.String() == s {
		return s
	}
	return strconv.Quote(s)
}

// kindName is the listing's name of a block kind; KindByName inverts it.
func kindName(k BlockKind) string {
	if k.Valid() {
		return k.String()
	}
	return fmt.Sprintf("kind%d", k)
}

// disassembleCode writes the code, one line per instruction.
func (p *Program) disassembleCode(b *bytes.Buffer) {
	// Blocks by start pc; for equal starts the lower index owns the pc.
	order := make([]int, 0, len(p.Blocks))
	for i, bl := range p.Blocks {
		if uint64(bl.Start) < uint64(len(p.Code)) {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return p.Blocks[order[i]].Start < p.Blocks[order[j]].Start })
	starts := make(map[uint32]int, len(order))     // pc -> block starting there
	dispatches := make(map[uint32]int, len(order)) // pc -> block dispatching there
	for _, i := range order {
		if _, dup := starts[p.Blocks[i].Start]; !dup {
			starts[p.Blocks[i].Start] = i
		}
	}
	for i := len(p.Blocks) - 1; i >= 0; i-- {
		dispatches[p.Blocks[i].Dispatch] = i
	}

	node := -1 // the node of the current group, -1 before the first
	next := 0  // index into order of the next block start
	for pc, in := range p.Code {
		for next < len(order) && p.Blocks[order[next]].Start <= uint32(pc) {
			if n := p.Blocks[order[next]].Node; int(n) != node && uint64(n) < uint64(len(p.Nodes)) {
				if pc > 0 {
					b.WriteByte('\n')
				}
				node = int(n)
				p.groupHeader(b, node)
			}
			next++
		}
		var pos source.Pos
		if pc < len(p.Pos) {
			pos = p.Pos[pc]
		}
		args, comment := p.describe(in, starts, dispatches)
		fmt.Fprintf(b, "%04d  %-14s %-8s ; %-20s @ %s\n", pc, in.Op, args, comment, formatPos(pos))
	}
}

// groupHeader starts the listing of node n's code.
func (p *Program) groupHeader(b *bytes.Buffer, n int) {
	nd := p.Nodes[n]
	if uint64(nd.Entry) < uint64(len(p.Blocks)) {
		fmt.Fprintf(b, "node %q (entry %04d):\n", nd.ID, p.Blocks[nd.Entry].Start)
		return
	}
	fmt.Fprintf(b, "node %q:\n", nd.ID)
}

// describe returns the operand column and the comment of one instruction.
func (p *Program) describe(in Instr, starts, dispatches map[uint32]int) (args, comment string) {
	info, ok := in.Op.Info()
	if !ok {
		info = OpInfo{A: PC, B: PC} // print both values, as numbers
	}
	var vals, notes []string
	for i, k := range [2]Operand{info.A, info.B} {
		v := [2]uint32{in.A, in.B}[i]
		if k == NoOperand {
			if v != 0 {
				vals = append(vals, strconv.FormatUint(uint64(v), 10))
				notes = append(notes, "?")
			}
			continue
		}
		if k == PC {
			vals = append(vals, fmt.Sprintf("%04d", v))
		} else {
			vals = append(vals, strconv.FormatUint(uint64(v), 10))
		}
		note, err := p.Operand(k, v)
		switch {
		case err != nil:
			note = "?"
		case k == PC:
			if bi, ok := starts[v]; ok {
				note = "block " + strconv.Quote(p.Blocks[bi].ID)
			} else if bi, ok := dispatches[v]; ok {
				note = "dispatch of " + strconv.Quote(p.Blocks[bi].ID)
			}
		}
		if note != "" {
			notes = append(notes, note)
		}
	}
	return strings.Join(vals, ", "), strings.Join(notes, ", ")
}
