// Package ir is the one intermediate representation that both source
// formats lower to: a program of Nodes, each a list of Blocks, each with
// Transitions from Signals to Actions. Targets are symbolic IDs; the code
// generator resolves them to program counters. The package is data only,
// plus a deterministic text printer.
//
// A YAML workflow lowers to one Node named after the workflow whose Blocks
// are its steps in document order; a for_each step is a Loop block whose Body
// holds the loop's steps. The YAML outcome handlers become Transitions on
// the signals SIGNAL:SUCCESS, SIGNAL:FAILURE, SIGNAL:TIMEOUT, SIGNAL:SKIPPED,
// SIGNAL:VALIDATION_FAIL and SIGNAL:MAX_VISITS, with YAML's own fallbacks
// (timeout to failure, then always, then the strict_flow default) already
// resolved by the lowering. A manifest lowers Node for Node and Block for
// Block; its fallbacks are resolved at run time.
package ir

import (
	"smith/isa"
	"smith/lang"
	"smith/source"
)

// Format is the source format a program was lowered from.
type Format uint8

// Source formats.
const (
	YAML Format = iota + 1
	Manifest
)

// String returns "workflow" or "manifest".
func (f Format) String() string {
	switch f {
	case YAML:
		return "workflow"
	case Manifest:
		return "manifest"
	}
	return "Format(?)"
}

// A Program is a lowered source document.
type Program struct {
	Name   string
	Format Format
	File   string
	// Entry is the ID of the block where a run starts.
	Entry    string
	EntryPos source.Pos
	Nodes    []*Node
	// Data is the program-wide run-time data (context, secrets, providers,
	// config, schemas) as the program will carry it; the code generator
	// copies it. nil is none.
	Data *isa.Program
}

// A Node is a context container: a list of blocks in document order.
type Node struct {
	ID      string
	Pos     source.Pos
	Entry   string // ID of the entry block
	Inherit bool   // context_inheritance
	// StaticMemory is the node's static memory as canonical JSON text
	// ("" = none).
	StaticMemory string
	Blocks       []*Block
}

// A Block is one step or block.
type Block struct {
	ID   string
	Pos  source.Pos
	Kind isa.BlockKind // the one enum of block kinds (isa.KindInfo)
	// Worker describes what runs, for printing and checks: "command",
	// "provider:claude", "Internal:TestRunner", "Worker:CodeGenerator".
	Worker string
	// AI is true for provider steps and AI workers (they can emit any
	// signal, so a manifest's AI block needs SIGNAL:FAIL_DEFAULT).
	AI bool
	// AnySignal is true for blocks that can emit signals besides Signals:
	// AI blocks, and manifest command workers (a last stdout line
	// SIGNAL:X), whose custom-signal transitions are live.
	AnySignal bool
	// Signals are the signals the block can emit, in a fixed order. An AI
	// block can emit any signal besides these.
	Signals   []string
	HasWhen   bool
	MaxVisits int
	// Body holds a loop's steps (Kind == Loop).
	Body []*Block
	// Branches hold a parallel block's branches in name order (Kind ==
	// Parallel).
	Branches    []*Branch
	Transitions []*Transition
	// Spec is the block's run-time specification; the code generator
	// copies it and applies the IR's own facts. nil is an empty one.
	Spec *isa.Block
}

// A Branch is one named step list of a parallel block.
type Branch struct {
	Name string
	Pos  source.Pos
	Body []*Block
}

// ActionKind is what a transition does.
type ActionKind uint8

// Actions. LoopNext, LoopBreak and LoopFail only occur inside loop bodies,
// BranchEnd and BranchFail only in the step lists of parallel branches.
const (
	Jump ActionKind = iota + 1
	Call
	Return
	Halt
	End
	Fail
	LoopNext
	LoopBreak
	LoopFail
	BranchEnd
	BranchFail
)

// String spells the action as the manifest DSL does (loop actions as the
// YAML special targets).
func (k ActionKind) String() string {
	switch k {
	case Jump:
		return "JUMP"
	case Call:
		return "CALL"
	case Return:
		return "RETURN"
	case Halt:
		return "HALT_AND_FLAG"
	case End:
		return "END"
	case Fail:
		return "FAIL"
	case LoopNext:
		return "LOOP_NEXT"
	case LoopBreak:
		return "LOOP_BREAK"
	case LoopFail:
		return "LOOP_FAIL"
	case BranchEnd:
		return "BRANCH_END"
	case BranchFail:
		return "BRANCH_FAIL"
	}
	return "ActionKind(?)"
}

// A Transition maps one signal to an action. Signal SIGNAL:FAIL_DEFAULT is
// the fallback for every signal without its own transition.
type Transition struct {
	Signal string
	Action ActionKind
	// Target is the block (Jump) or node (Call) ID.
	Target string
	// ReturnTo is the block a Call returns to ("" = the calling block).
	ReturnTo string
	// Msg is the Fail message as the source spells it (raw text).
	Msg string
	// MsgTmpl is the Fail message parsed and checked as a template; nil
	// means the literal Msg.
	MsgTmpl *lang.Template
	Pos     source.Pos
}
