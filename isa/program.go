package isa

import (
	"smith/lang"
	"smith/source"
)

// Version is the isa version. It changes whenever opcode numbering, operand
// meaning or the .smbc encoding changes; a .smbc of another version is
// refused, naming both versions.
const Version = 5

// MinVersion is the oldest isa version Decode reads. A version that only
// appends fields at the end of pool structs (their bitmap then has no bit
// for them, and they decode as zero) keeps the versions before it
// readable, so a run in flight on Temporal, whose history holds its
// program's bytes, still replays after an upgrade; any other change of
// the format raises MinVersion to Version.
//
// Version 3 appended ProviderDef.Isolated and Config.CommitArtifacts;
// version 4 appended AgentDef.Session; version 5 appended Cond.XPos.
const MinVersion = 2

// A Program is a compiled workflow: code, a source position per
// instruction, and pools of plain data that operands index. It carries
// everything a run needs; the VM never sees the source document.
type Program struct {
	Name   string `json:"name"`
	Format string `json:"format"` // "workflow" or "manifest"
	Source string `json:"source"` // the source file as given to the compiler

	// Entry is the pc where a run starts.
	Entry uint32  `json:"entry"`
	Code  []Instr `json:"-"`
	// Pos[i] is where Code[i] came from; len(Pos) == len(Code).
	Pos []source.Pos `json:"-"`

	Strings []string `json:"strings"`
	// Templates are messages with ${...} references that the VM substitutes
	// (FAIL's operand).
	Templates []lang.Template `json:"templates,omitempty"`
	Nodes     []Node          `json:"nodes"`
	Blocks    []Block         `json:"blocks"`
	Tables    []Table         `json:"tables"`

	// Run-wide data.
	StrictFlow bool          `json:"strict_flow,omitempty"`
	Context    *TValue       `json:"context,omitempty"` // initial context (a map), strings substituted at run start
	Secrets    []string      `json:"secrets,omitempty"`
	EnvAllow   []string      `json:"env_allow,omitempty"`
	Env        []EnvVar      `json:"env,omitempty"`       // the document's env: for every child, under the step's own
	Providers  []ProviderDef `json:"providers,omitempty"` // the document's providers, in document order
	Agents     []AgentDef    `json:"agents,omitempty"`
	Schemas    []SchemaDef   `json:"schemas,omitempty"`
	Config     lang.Config   `json:"config"`
	// RunStep is the block a program made by Only runs alone ("" for a
	// whole workflow); the VM records it in the run's state.
	RunStep string `json:"run_step,omitempty"`
}

// A Node is a context container.
type Node struct {
	ID string `json:"id"`
	// Entry is the index of the node's entry block.
	Entry   uint32 `json:"entry"`
	Inherit bool   `json:"inherit,omitempty"`
	// StaticMemory is canonical JSON text of an object ("" when none).
	StaticMemory string     `json:"static_memory,omitempty"`
	Pos          source.Pos `json:"pos"`
}

// BlockKind says what a block does.
type BlockKind uint8

// Block kinds.
const (
	KindCommand    BlockKind = iota + 1 // a process (YAML command step, manifest command worker)
	KindProvider                        // an LLM CLI through a provider template (YAML provider step, manifest AI worker)
	KindInternal                        // an Internal:* worker
	KindSetContext                      // set_context
	KindLoop                            // for_each
	KindSend                            // send: deliver a message into an agent's inbox
	KindParallel                        // parallel: named branches run at the same time

	// kindCount closes the list: kinds are below it.
	kindCount
)

// A KindInfo is what the stages need to know of a block kind: the
// compiler's lowering and layout, the assembler and the listing, the
// verifier, the VM's request building and the Registry's dispatch all read
// kindTable, so adding a kind is one row here (and its spec field, its
// lowering and its worker).
type KindInfo struct {
	// Name is the kind's name in listings, assembly text and messages.
	Name string
	// Op is the instruction that runs a block of the kind: EXEC for a
	// kind that runs a worker (its spec is Step, and the VM hands it to
	// its step.Runner as a step.Request of this kind), SET_CONTEXT,
	// LOOP_BEGIN or PAR_BEGIN. The verifier refuses any other.
	Op Op
	// Body is set for a kind whose block holds other blocks (a loop's
	// body, a parallel step's branches): only such a block is a parent.
	Body bool
}

// kindTable holds every block kind's facts, indexed by kind.
var kindTable = [kindCount]KindInfo{
	KindCommand:    {Name: "command", Op: OpExec},
	KindProvider:   {Name: "provider", Op: OpExec},
	KindInternal:   {Name: "internal", Op: OpExec},
	KindSetContext: {Name: "set_context", Op: OpSetContext},
	KindLoop:       {Name: "loop", Op: OpLoopBegin, Body: true},
	KindSend:       {Name: "send", Op: OpExec},
	KindParallel:   {Name: "parallel", Op: OpParBegin, Body: true},
}

// Valid reports whether k is a defined kind.
func (k BlockKind) Valid() bool { return k >= KindCommand && k < kindCount }

// Info returns k's row of the kind table (the zero KindInfo when k is not
// a kind).
func (k BlockKind) Info() KindInfo {
	if !k.Valid() {
		return KindInfo{}
	}
	return kindTable[k]
}

// Exec reports whether a block of kind k runs a worker (an EXEC).
func (k BlockKind) Exec() bool { return k.Valid() && kindTable[k].Op == OpExec }

// String names the kind.
func (k BlockKind) String() string {
	if !k.Valid() {
		return "BlockKind(?)"
	}
	return kindTable[k].Name
}

// KindNames returns the names of the kinds, in the order of their values.
func KindNames() []string {
	names := make([]string, 0, kindCount-KindCommand)
	for k := KindCommand; k < kindCount; k++ {
		names = append(names, kindTable[k].Name)
	}
	return names
}

// KindByName returns the kind named s.
func KindByName(s string) (BlockKind, bool) {
	for k := KindCommand; k < kindCount; k++ {
		if kindTable[k].Name == s {
			return k, true
		}
	}
	return 0, false
}

// A Block is one step or block of the source, with its run-time spec.
type Block struct {
	ID string `json:"id"`
	// Node is the index of the node the block belongs to.
	Node uint32    `json:"node"`
	Kind BlockKind `json:"kind"`
	// Start is the pc of the block's first instruction; Dispatch the pc of
	// its DISPATCH (resume --signal and skips go there).
	Start    uint32 `json:"start"`
	Dispatch uint32 `json:"dispatch"`
	// Parent is the index+1 of the loop or parallel block whose body (or
	// branch) holds this block (0 at top level).
	Parent    uint32 `json:"parent,omitempty"`
	MaxVisits int    `json:"max_visits,omitempty"`
	// Signals are the reserved signals (SIGNAL:SUCCESS, ...) the block can
	// produce, as the compiler's checks saw them; AnySignal is set when it
	// can produce any other signal too (an AI reply's last line). DOT and
	// other tools read them; the VM does not need them.
	Signals   []string   `json:"signals,omitempty"`
	AnySignal bool       `json:"any_signal,omitempty"`
	When      *Cond      `json:"when,omitempty"`
	Agent     string     `json:"agent,omitempty"`       // the block's agent (any kind): ${agent.*}, its provider and instructions
	Step      *Step      `json:"step,omitempty"`        // KindCommand, KindProvider, KindInternal, KindSend
	Set       []Field    `json:"set_context,omitempty"` // KindSetContext: dotted key -> value
	Loop      *Loop      `json:"loop,omitempty"`        // KindLoop
	Par       *Par       `json:"parallel,omitempty"`    // KindParallel
	Pos       source.Pos `json:"pos"`
}

// A Loop is the spec of a for_each block.
type Loop struct {
	Items TValue `json:"items"` // a list, or a string that is one ${...} reference to a list
	As    string `json:"as"`
	// Body is the pc of the first body instruction.
	Body uint32 `json:"body"`
	// Steps are the indices of the blocks directly in the body.
	Steps []uint32 `json:"steps"`
	// Parallel is how many iterations may run at once (for_each.parallel);
	// 0 and 1 run them one after the other.
	Parallel int `json:"parallel,omitempty"`
}

// A Par is the spec of a parallel block: named branches that run as
// threads, at most Max at once (0 = all).
type Par struct {
	Max int `json:"max,omitempty"`
	// Branches are in name order (the join's order).
	Branches []Branch `json:"branches"`
}

// A Branch is one branch of a parallel block: a step list that a thread
// runs from Start to the block's BRANCH_END or BRANCH_FAIL.
type Branch struct {
	Name string `json:"name"`
	// Start is the pc of the branch's first instruction.
	Start uint32 `json:"start"`
	// Steps are the indices of the blocks directly in the branch.
	Steps []uint32 `json:"steps"`
}

// A Table is a transition table: signal -> pc of the action.
type Table struct {
	Block   uint32       `json:"block"`
	Entries []TableEntry `json:"entries"`
	// Default is the pc for SIGNAL:FAIL_DEFAULT; HasDefault false means none.
	Default    uint32 `json:"default,omitempty"`
	HasDefault bool   `json:"has_default,omitempty"`
}

// A TableEntry maps one signal to the pc of its action.
type TableEntry struct {
	Signal string `json:"signal"`
	PC     uint32 `json:"pc"`
}

// A Step is the run-time spec of a block that runs a worker. Templates are
// pre-parsed by the compiler; the VM substitutes them.
type Step struct {
	Command         []lang.Template `json:"command,omitempty"`
	Providers       []string        `json:"providers,omitempty"`
	Worker          string          `json:"worker,omitempty"` // Internal:NAME, or the workers key of a manifest block
	AI              *AIWorker       `json:"ai,omitempty"`
	Send            *Send           `json:"send,omitempty"`        // KindSend
	Model           *lang.Template  `json:"model,omitempty"`       // step over agent over defaults; nil = the CLI's default
	Permissions     string          `json:"permissions,omitempty"` // read|edit|full; "" = edit
	Prompt          *lang.Template  `json:"prompt,omitempty"`
	PromptFile      *lang.Template  `json:"prompt_file,omitempty"`
	ProviderParams  []Field         `json:"provider_params,omitempty"`
	CommandOverride []lang.Template `json:"command_override,omitempty"`
	Transport       *Transport      `json:"prompt_transport,omitempty"`
	InputFile       *lang.Template  `json:"input_file,omitempty"`
	OutputFile      *lang.Template  `json:"output_file,omitempty"`
	OutputCapture   string          `json:"output_capture,omitempty"` // text|lines|json ("" = text)
	AllowParseError bool            `json:"allow_parse_error,omitempty"`
	Validation      string          `json:"validation_schema,omitempty"`
	Timeout         float64         `json:"timeout,omitempty"` // seconds; 0 = the default 300
	Attempts        int             `json:"attempts,omitempty"`
	BackoffSec      float64         `json:"backoff_sec,omitempty"`
	HasBackoff      bool            `json:"has_backoff,omitempty"` // BackoffSec was given (0 is a valid value)
	Env             []EnvVar        `json:"env,omitempty"`
	Secrets         []string        `json:"secrets,omitempty"`
	HasSecrets      bool            `json:"has_secrets,omitempty"` // the step lists its own secrets (else all)
	WaitFor         *WaitFor        `json:"wait_for,omitempty"`
	DependsOn       *DependsOn      `json:"depends_on,omitempty"`
	AllowMissing    []string        `json:"allow_missing_vars,omitempty"`
	PayloadMerge    []string        `json:"payload_merge_strategy,omitempty"`
	OutputType      string          `json:"output_type,omitempty"`
	// PayloadIO: a manifest command worker gets the payload on stdin, and
	// its stdout (less a last SIGNAL: line) becomes a segment of
	// OutputType (CONTRACT 12.5).
	PayloadIO bool `json:"payload_io,omitempty"`
	// KeepReply: the step's whole reply is kept in RUN_ROOT/replies/ for
	// the YAML writer that follows it; ReplyFrom: a YAML
	// Internal:FileSystemWriter or DocumentationWriter reads that reply of
	// the step before it (CONTRACT 12.5).
	KeepReply bool   `json:"keep_reply,omitempty"`
	ReplyFrom string `json:"reply_from,omitempty"`
}

// An AIWorker is a manifest workers entry with a provider.
type AIWorker struct {
	Key            string  `json:"key"`
	Instructions   string  `json:"instructions,omitempty"`
	OutputType     string  `json:"output_type,omitempty"`
	ProviderParams []Field `json:"provider_params,omitempty"`
}

// A Transport says how a prompt reaches a provider.
type Transport struct {
	Mode         string          `json:"mode"`
	ArgvTemplate []lang.Template `json:"argv_template,omitempty"`
}

// An EnvVar is one env: entry of a step.
type EnvVar struct {
	Name string        `json:"name"`
	Val  lang.Template `json:"val"`
}

// A WaitFor blocks until MinCount files match Glob.
type WaitFor struct {
	Glob       lang.Template `json:"glob"`
	TimeoutSec float64       `json:"timeout_sec,omitempty"`
	PollMs     int           `json:"poll_ms,omitempty"`
	MinCount   int           `json:"min_count,omitempty"`
	Consume    bool          `json:"consume,omitempty"` // move the matches to the agent's processed folder on completion
}

// A Send delivers Content (or the content of File) into agent To's inbox
// as NNNN-<Name>.
type Send struct {
	To      string         `json:"to"`
	File    *lang.Template `json:"file,omitempty"`
	Content *lang.Template `json:"content,omitempty"`
	Name    *lang.Template `json:"name,omitempty"` // "" = the base name of File, or message.md
}

// A DependsOn lists required and optional globs and how to inject them.
type DependsOn struct {
	Required    []lang.Template `json:"required,omitempty"`
	Optional    []lang.Template `json:"optional,omitempty"`
	Inject      string          `json:"inject,omitempty"` // "" (none), list, content
	Instruction string          `json:"instruction,omitempty"`
	Position    string          `json:"position,omitempty"` // prepend|append
}

// A ProviderDef is a workflow's override of, or addition to, the presets.
type ProviderDef struct {
	Name      string     `json:"name"`
	Command   []string   `json:"command"` // raw: ${PROMPT}, ${model}, ... are provider template keys
	Defaults  []Field    `json:"defaults,omitempty"`
	Transport *Transport `json:"prompt_transport,omitempty"`
	Env       []EnvVar   `json:"env,omitempty"`      // only for this provider's processes
	Secrets   []string   `json:"secrets,omitempty"`  // names from the program's Secrets
	Isolated  bool       `json:"isolated,omitempty"` // home: isolated (a config home under RUN_ROOT)
}

// An AgentDef is a named agent.
type AgentDef struct {
	Name             string   `json:"name"`
	Providers        []string `json:"providers,omitempty"`
	Inbox            string   `json:"inbox"`
	Processed        string   `json:"processed"`
	Instructions     string   `json:"instructions,omitempty"`
	InstructionsFile string   `json:"instructions_file,omitempty"`
	// Session is lang.SessionContinue when each provider call of the agent
	// continues its previous conversation (CONTRACT 12.1); "" = fresh.
	Session string `json:"session,omitempty"`
}

// A SchemaDef is a named JSON Schema (canonical JSON text).
type SchemaDef struct {
	Name   string `json:"name"`
	Schema string `json:"schema"`
}

// CondOp is the predicate or combinator of a condition.
type CondOp uint8

// Condition predicates and combinators (CONTRACT 3.2).
const (
	CondStepOK CondOp = iota + 1
	CondFileExists
	CondEquals
	CondExitCode
	CondEnvSet
	CondContains
	CondRegex
	CondNumber
	CondAll
	CondAny
	CondNot
)

// A Cond is a condition tree.
//
//	step_ok: Name          file_exists: X        env_set: Name
//	equals: X == Y         contains: Y in X      regex: Y matches X (Flags)
//	exit_code: Name Cmp Num                      number: X Cmp Y
//	all/any/not: Sub
type Cond struct {
	Op    CondOp         `json:"op"`
	Name  string         `json:"name,omitempty"`
	X     *lang.Template `json:"x,omitempty"`
	Y     *lang.Template `json:"y,omitempty"`
	Cmp   string         `json:"cmp,omitempty"`
	Num   float64        `json:"num,omitempty"`
	Flags string         `json:"flags,omitempty"`
	Sub   []Cond         `json:"sub,omitempty"`
	Pos   source.Pos     `json:"pos"`
	// XPos is where X's value is in the source, for a file_exists (zero
	// for the other predicates, and in a program of isa version 4 or
	// older): a path refused at run time (compiler.CheckLayout) is
	// reported there, as the lowering reports it.
	XPos source.Pos `json:"xpos,omitzero"`
}
