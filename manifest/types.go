package manifest

import "smith/source"

// The types in this file mirror the two source documents field for field.
// Every value keeps its position. Scalars are wrapped (String, Number, Bool)
// so that a missing value (Set false) differs from a zero one, and so that a
// diagnostic can point at the value. Maps that the document spells as
// objects are Go maps for the schema generator; their values carry their key,
// position and document order (Order), and code that produces output sorts
// by Order, never by ranging over the map.

// A String is a string scalar with its position. Set is false when absent.
type String struct {
	V   string
	Pos source.Pos
	Set bool
}

// A Number is a numeric scalar (integers and fractions) with its position.
type Number struct {
	V   float64
	Pos source.Pos
	Set bool
}

// A Bool is a boolean scalar with its position.
type Bool struct {
	V   bool
	Pos source.Pos
	Set bool
}

// A StringList is a list of string scalars. Pos is the list's own position.
type StringList struct {
	V   []String
	Pos source.Pos
	Set bool
}

// A StringOrList is a string or a list of strings (provider: claude or
// provider: [claude, codex]). V always holds the elements.
type StringOrList struct {
	V   []String
	Pos source.Pos
	Set bool
}

// A Scalar is a string, number or boolean kept as its text (equals operands,
// number.right). Str is the YAML/JSON scalar rendered as text.
type Scalar struct {
	Str string
	// IsString is true when the document wrote a string (templates apply).
	IsString bool
	Pos      source.Pos
	Set      bool
}

// A StringMap is an object of string values in document order (env:).
type StringMap struct {
	V   []KeyString
	Pos source.Pos
	Set bool
}

// A KeyString is one entry of a StringMap.
type KeyString struct {
	Key    string
	KeyPos source.Pos
	Val    String
}

// A Free is a value of any shape (context, static_memory, provider_params,
// set_context, defaults, schemas): the document tree itself, with positions.
type Free struct {
	V *Value
}

// Workflow is a YAML step workflow (CONTRACT section 3).
type Workflow struct {
	File string     `json:"-"`
	Pos  source.Pos `json:"-"`

	Version    String                `json:"version"`
	Name       String                `json:"name"`
	StrictFlow Bool                  `json:"strict_flow,omitempty"`
	Context    Free                  `json:"context,omitempty"`
	Secrets    StringList            `json:"secrets,omitempty"`
	EnvAllow   StringList            `json:"env_allow,omitempty"`
	Env        StringMap             `json:"env,omitempty"`
	Defaults   *Defaults             `json:"defaults,omitempty"`
	Providers  map[string]*Provider  `json:"providers,omitempty"`
	Agents     map[string]*Agent     `json:"agents,omitempty"`
	Schemas    map[string]*SchemaDef `json:"schemas,omitempty"`
	// The internal workers' configuration, as a manifest's config has it
	// (CONTRACT 12.5), and the isolation mode (CONTRACT 12.4).
	TestCommand  StringList `json:"test_command,omitempty"`
	LintCommand  StringList `json:"lint_command,omitempty"`
	BuildCommand StringList `json:"build_command,omitempty"`
	Isolation    String     `json:"isolation,omitempty"` // none|git-worktree
	// CommitArtifacts puts artifacts/ into the run's step commits.
	CommitArtifacts Bool    `json:"commit_artifacts,omitempty"`
	Steps           []*Step `json:"steps"`
}

// A Provider overrides or adds an LLM CLI template (CONTRACT section 5).
type Provider struct {
	Key   string     `json:"-"`
	Pos   source.Pos `json:"-"`
	Order int        `json:"-"`

	Command         StringList       `json:"command,omitempty"`
	Defaults        Free             `json:"defaults,omitempty"`
	PromptTransport *PromptTransport `json:"prompt_transport,omitempty"`
	// Env and Secrets reach only this provider's processes (CONTRACT 5).
	Env     StringMap  `json:"env,omitempty"`
	Secrets StringList `json:"secrets,omitempty"`
	// Home is "user" (the default: the CLI's own configuration) or
	// "isolated" (a fresh config home under RUN_ROOT, CONTRACT 5).
	Home String `json:"home,omitempty"`
}

// Defaults apply to every step or block that does not set its own
// (CONTRACT 5): model, permissions, timeout and retry.
type Defaults struct {
	Pos         source.Pos `json:"-"`
	Model       String     `json:"model,omitempty"`
	Permissions String     `json:"permissions,omitempty"` // read|edit|full
	Timeout     Number     `json:"timeout,omitempty"`
	Retry       *Retry     `json:"retry,omitempty"`
}

// An Agent is a named agent with an inbox (the multi-agent pattern).
type Agent struct {
	Key   string     `json:"-"`
	Pos   source.Pos `json:"-"`
	Order int        `json:"-"`

	Provider    StringOrList `json:"provider,omitempty"`
	Model       String       `json:"model,omitempty"`
	Permissions String       `json:"permissions,omitempty"` // read|edit|full
	// Instructions (or the content of InstructionsFile) are prepended to
	// every prompt of the agent's steps, followed by an empty line.
	Instructions     String `json:"instructions,omitempty"`
	InstructionsFile String `json:"instructions_file,omitempty"`
	Inbox            String `json:"inbox,omitempty"`
	// Session is fresh (every call a new conversation) or continue (each
	// call continues the agent's previous conversation with its CLI).
	Session String `json:"session,omitempty"`
}

// A Send delivers a message into an agent's inbox (CONTRACT 12.2): the
// content of File, or Content, under NNNN-<Name>.
type Send struct {
	Pos     source.Pos `json:"-"`
	To      String     `json:"to"`
	File    String     `json:"file,omitempty"`
	Content String     `json:"content,omitempty"`
	Name    String     `json:"name,omitempty"`
}

// A SchemaDef is a JSON Schema (2020-12) document given by name.
type SchemaDef struct {
	Key   string     `json:"-"`
	Pos   source.Pos `json:"-"`
	Order int        `json:"-"`

	Schema Free `json:"-"`
}

// A Step is one YAML step. Exactly one of Command, Provider, Worker,
// ForEach, SetContext is set (the schema and the compiler both check).
type Step struct {
	Pos source.Pos `json:"-"`

	Name       String       `json:"name"`
	Command    StringList   `json:"command,omitempty"`
	Provider   StringOrList `json:"provider,omitempty"`
	Worker     String       `json:"worker,omitempty"`
	ForEach    *ForEach     `json:"for_each,omitempty"`
	SetContext Free         `json:"set_context,omitempty"`
	Send       *Send        `json:"send,omitempty"`
	Parallel   *Parallel    `json:"parallel,omitempty"`

	Agent            String           `json:"agent,omitempty"`
	Model            String           `json:"model,omitempty"`
	Permissions      String           `json:"permissions,omitempty"` // read|edit|full
	Prompt           String           `json:"prompt,omitempty"`
	PromptFile       String           `json:"prompt_file,omitempty"`
	ProviderParams   Free             `json:"provider_params,omitempty"`
	CommandOverride  StringList       `json:"command_override,omitempty"`
	PromptTransport  *PromptTransport `json:"prompt_transport,omitempty"`
	InputFile        String           `json:"input_file,omitempty"`
	OutputFile       String           `json:"output_file,omitempty"`
	OutputCapture    String           `json:"output_capture,omitempty"` // text|lines|json
	AllowParseError  Bool             `json:"allow_parse_error,omitempty"`
	ValidationSchema String           `json:"validation_schema,omitempty"`
	When             *Cond            `json:"when,omitempty"`
	On               *On              `json:"on,omitempty"`
	Timeout          Number           `json:"timeout,omitempty"`
	Retry            *Retry           `json:"retry,omitempty"`
	Env              StringMap        `json:"env,omitempty"`
	Secrets          StringList       `json:"secrets,omitempty"`
	WaitFor          *WaitFor         `json:"wait_for,omitempty"`
	DependsOn        *DependsOn       `json:"depends_on,omitempty"`
	AllowMissingVars StringList       `json:"allow_missing_vars,omitempty"`
	MaxVisits        Number           `json:"max_visits,omitempty"`
}

// A PromptTransport says how the prompt reaches a provider.
type PromptTransport struct {
	Pos          source.Pos `json:"-"`
	Mode         String     `json:"mode"` // argv|stdin|temp_file
	ArgvTemplate StringList `json:"argv_template,omitempty"`
}

// A ForEach is a sequential loop over a nested step list. Items is a literal
// list or a string holding one ${...} reference to a list.
type ForEach struct {
	Pos   source.Pos `json:"-"`
	Items Free       `json:"items"`
	As    String     `json:"as,omitempty"` // default "item"
	Steps []*Step    `json:"steps"`
	// Parallel is how many iterations may run at once (default 1: one after
	// the other; CONTRACT 12.3).
	Parallel Number `json:"parallel,omitempty"`
}

// A Parallel step runs named branches (step lists) at the same time, at
// most Max at once (default: all; CONTRACT 12.3).
type Parallel struct {
	Pos      source.Pos         `json:"-"`
	Max      Number             `json:"max,omitempty"`
	Branches map[string][]*Step `json:"branches"`
	// Order holds the branches in document order, with their positions.
	Order []*Branch `json:"-"`
}

// A Branch is one named branch of a Parallel step.
type Branch struct {
	Name  string
	Pos   source.Pos
	Steps []*Step
}

// A Retry bounds the tries of a step.
type Retry struct {
	Pos        source.Pos `json:"-"`
	Attempts   Number     `json:"attempts,omitempty"`
	BackoffSec Number     `json:"backoff_sec,omitempty"`
}

// A WaitFor blocks a step until min_count files match glob.
type WaitFor struct {
	Pos        source.Pos `json:"-"`
	Glob       String     `json:"glob"`
	TimeoutSec Number     `json:"timeout_sec,omitempty"`
	PollMs     Number     `json:"poll_ms,omitempty"`
	MinCount   Number     `json:"min_count,omitempty"`
	// Consume moves the matched messages to the agent's processed folder
	// when the step completes (exactly once, CONTRACT 12.2).
	Consume Bool `json:"consume,omitempty"`
}

// A DependsOn lists files a step needs, and whether they go into its prompt.
type DependsOn struct {
	Pos      source.Pos `json:"-"`
	Required StringList `json:"required,omitempty"`
	Optional StringList `json:"optional,omitempty"`
	Inject   *Inject    `json:"inject,omitempty"`
}

// An Inject is `inject: true|false` (Enabled) or an object.
type Inject struct {
	Pos         source.Pos `json:"-"`
	Enabled     Bool       `json:"-"`              // the boolean form; the object form sets it true
	Mode        String     `json:"mode,omitempty"` // list|content|none
	Instruction String     `json:"instruction,omitempty"`
	Position    String     `json:"position,omitempty"` // prepend|append
}

// A Cond is one condition (CONTRACT 3.2): exactly one field is set.
type Cond struct {
	Pos source.Pos `json:"-"`

	StepOK     String        `json:"step_ok,omitempty"`
	FileExists String        `json:"file_exists,omitempty"`
	Equals     *Equals       `json:"equals,omitempty"`
	ExitCode   *ExitCodeCond `json:"exit_code,omitempty"`
	EnvSet     String        `json:"env_set,omitempty"`
	Contains   *Contains     `json:"contains,omitempty"`
	Regex      *Regex        `json:"regex,omitempty"`
	Number     *NumberCond   `json:"number,omitempty"`
	All        []*Cond       `json:"all,omitempty"`
	Any        []*Cond       `json:"any,omitempty"`
	Not        *Cond         `json:"not,omitempty"`
}

// Equals compares two strings.
type Equals struct {
	Pos   source.Pos `json:"-"`
	Left  Scalar     `json:"left"`
	Right Scalar     `json:"right"`
}

// ExitCodeCond compares a step's exit code.
type ExitCodeCond struct {
	Pos   source.Pos `json:"-"`
	Step  String     `json:"step"`
	Op    String     `json:"op"` // == != > < >= <=
	Value Number     `json:"value"`
}

// Contains tests for a substring.
type Contains struct {
	Pos      source.Pos `json:"-"`
	Haystack Scalar     `json:"haystack"`
	Needle   Scalar     `json:"needle"`
}

// Regex matches text against an RE2 pattern.
type Regex struct {
	Pos     source.Pos `json:"-"`
	Text    Scalar     `json:"text"`
	Pattern String     `json:"pattern"`
	Flags   String     `json:"flags,omitempty"`
}

// NumberCond compares numbers (left is usually a ${...} reference).
type NumberCond struct {
	Pos   source.Pos `json:"-"`
	Left  Scalar     `json:"left"`
	Op    String     `json:"op"`
	Right Scalar     `json:"right"`
}

// On maps outcomes to handlers (CONTRACT 3.3).
type On struct {
	Pos            source.Pos `json:"-"`
	Success        *Handler   `json:"success,omitempty"`
	Failure        *Handler   `json:"failure,omitempty"`
	Timeout        *Handler   `json:"timeout,omitempty"`
	Skipped        *Handler   `json:"skipped,omitempty"`
	ValidationFail *Handler   `json:"validation_fail,omitempty"`
	MaxVisits      *Handler   `json:"max_visits,omitempty"`
	Always         *Handler   `json:"always,omitempty"`
	// Signals route custom signals (SIGNAL:APPROVED) a step produced
	// (CONTRACT 12.5); one with no handler follows success when the step's
	// exit code was 0, else failure.
	Signals map[string]*SignalHandler `json:"signals,omitempty"`
}

// A SignalHandler is the handler of one custom signal in on.signals.
type SignalHandler struct {
	Key     string     `json:"-"`
	Pos     source.Pos `json:"-"`
	Order   int        `json:"-"`
	Handler *Handler   `json:"-"`
}

// A Handler is {goto: T}, {end: true} or {error: MSG}.
type Handler struct {
	Pos   source.Pos `json:"-"`
	Goto  String     `json:"goto,omitempty"`
	End   Bool       `json:"end,omitempty"`
	Error String     `json:"error,omitempty"`
	// Halt stops the run halted at the step, for a person: resume runs the
	// step again, or with --signal takes its transition for that signal.
	Halt Bool `json:"halt,omitempty"`
}

// Manifest is a workflows.json Node/Block manifest (CONTRACT section 7).
type Manifest struct {
	File string     `json:"-"`
	Pos  source.Pos `json:"-"`

	Version   String                `json:"version"`
	Name      String                `json:"name,omitempty"`
	Entry     String                `json:"entry"`
	Config    *Config               `json:"config,omitempty"`
	Secrets   StringList            `json:"secrets,omitempty"`
	EnvAllow  StringList            `json:"env_allow,omitempty"`
	Env       StringMap             `json:"env,omitempty"`
	Defaults  *Defaults             `json:"defaults,omitempty"`
	Providers map[string]*Provider  `json:"providers,omitempty"`
	Agents    map[string]*Agent     `json:"agents,omitempty"`
	Workers   map[string]*WorkerDef `json:"workers,omitempty"`
	Schemas   map[string]*SchemaDef `json:"schemas,omitempty"`
	Nodes     map[string]*Node      `json:"nodes"`
}

// Config holds the project commands and the isolation mode.
type Config struct {
	Pos          source.Pos `json:"-"`
	TestCommand  StringList `json:"test_command,omitempty"`
	LintCommand  StringList `json:"lint_command,omitempty"`
	BuildCommand StringList `json:"build_command,omitempty"`
	Isolation    String     `json:"isolation,omitempty"` // none|git-worktree
	// CommitArtifacts puts artifacts/ into the run's step commits.
	CommitArtifacts Bool `json:"commit_artifacts,omitempty"`
}

// A WorkerDef is an AI worker (Provider set) or a command worker (Command set).
type WorkerDef struct {
	Key   string     `json:"-"`
	Pos   source.Pos `json:"-"`
	Order int        `json:"-"`

	Provider       StringOrList `json:"provider,omitempty"`
	Agent          String       `json:"agent,omitempty"`
	ProviderParams Free         `json:"provider_params,omitempty"`
	Model          String       `json:"model,omitempty"`
	Permissions    String       `json:"permissions,omitempty"` // read|edit|full
	Instructions   String       `json:"instructions,omitempty"`
	OutputType     String       `json:"output_type,omitempty"`
	Command        StringList   `json:"command,omitempty"`
	Timeout        Number       `json:"timeout,omitempty"`
}

// A Node is a context container of blocks.
type Node struct {
	Key   string     `json:"-"`
	Pos   source.Pos `json:"-"`
	Order int        `json:"-"`

	EntryBlock         String            `json:"entry_block"`
	ContextInheritance Bool              `json:"context_inheritance,omitempty"`
	StaticMemory       Free              `json:"static_memory,omitempty"`
	Blocks             map[string]*Block `json:"blocks"`
}

// A Block is one unit of execution. The fields that few blocks set are
// pointers, nil when the document leaves them out (a field it writes is
// never nil, even when its value is refused): a manifest holds thousands
// of blocks, and inline they would double its size (docs/performance.md,
// fifth pass, third part). Opt returns them as values.
type Block struct {
	Key   string     `json:"-"`
	Pos   source.Pos `json:"-"`
	Order int        `json:"-"` // document order across the whole manifest

	Worker               String        `json:"worker"`
	ValidationSchema     *String       `json:"validationSchema,omitempty"`
	PayloadMergeStrategy *StringList   `json:"payload_merge_strategy,omitempty"`
	Transitions          []*Transition `json:"transitions"`
	MaxVisits            *Number       `json:"max_visits,omitempty"`
	Timeout              *Number       `json:"timeout,omitempty"`
}

// Opt returns the value p points to, or the zero value (not Set) for nil.
func Opt[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// A Transition maps a signal to an action. ReturnTo, rare, is nil when
// the document leaves it out (see Block).
type Transition struct {
	Pos      source.Pos `json:"-"`
	OnSignal String     `json:"on_signal"`
	Action   String     `json:"action"`
	ReturnTo *String    `json:"return_to,omitempty"`
}
