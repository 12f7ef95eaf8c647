package manifest

import "smith/source"

// The types in this file mirror the two source documents field for field.
// Every value keeps its position. Scalars are wrapped (String, Number, Bool)
// so that a missing value (Set false) differs from a zero one, and so that a
// diagnostic can point at the value. Maps that the document spells as
// objects are Go maps for the schema generator; their values carry their key,
// position and document order (Order), and code that produces output sorts
// by Order, never by ranging over the map.
//
// A field's json tag is its document key, written nowhere else: the
// decoder (decode_gen.go) and the key documentation are generated from
// this file (go generate ./manifest). The doc comment of a field with a
// key is the key's description, for users: the printed schemas and the
// reference tables of docs/ carry it. It ends with "Default: X." when
// leaving the key out means X, and {presets} in it stands for the list of
// built-in provider presets. The limit tag of a numeric field is the
// key's range (Limit), and the step tag of a field of Step says which
// steps read the key (Step).

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

	// Format version of the document; write "1.0".
	Version String `json:"version"`

	// Name of the workflow, shown in run listings and console lines.
	Name String `json:"name"`

	// When true, every step needs on.success and on.failure (or on.always);
	// when false a missing handler means: success goes to the next step,
	// failure or timeout fails the run. Default: true.
	StrictFlow Bool `json:"strict_flow,omitempty"`

	// Initial variables, read as ${context.KEY}; --context and --context-file
	// override them. Default: {}.
	Context Free `json:"context,omitempty"`

	// Names of environment variables the run needs; a missing, empty or short one
	// (under 4 characters, line breaks at its end not counted) stops the run
	// before it starts (E_SECRET_MISSING). Their values are masked as ***
	// everywhere (a value that ends in a line break also without it). Default: [].
	Secrets StringList `json:"secrets,omitempty"`

	// Names of environment variables that ${env.NAME} may read and that every
	// child process inherits. Default: [].
	EnvAllow StringList `json:"env_allow,omitempty"`

	// Variables set for every child process of the run (a step's own env wins;
	// a name that is also a secret keeps the secret's value). Default: {}.
	Env StringMap `json:"env,omitempty"`

	// Model, permissions, timeout and retry for every step that sets none.
	Defaults *Defaults `json:"defaults,omitempty"`

	// Provider templates by name; they override or add to the built-in
	// {presets} presets. Default: the presets.
	Providers map[string]*Provider `json:"providers,omitempty"`

	// Named agents, each with a provider and an inbox folder; steps name one
	// with agent:. Default: {}.
	Agents map[string]*Agent `json:"agents,omitempty"`

	// Named JSON Schemas (2020-12) that validation_schema may name, besides
	// the built-in CodeAndExplanation and CodeOnly. Default: {}.
	Schemas map[string]*SchemaDef `json:"schemas,omitempty"`

	// argv that Internal:TestRunner runs.
	TestCommand StringList `json:"test_command,omitempty"`

	// argv that Internal:RunLinter runs.
	LintCommand StringList `json:"lint_command,omitempty"`

	// argv that Internal:RunBuilder runs.
	BuildCommand StringList `json:"build_command,omitempty"`

	// none, or git-worktree: the run works in its own git worktree on branch
	// smith/<run_id> when WORKSPACE is in a git repository (otherwise in
	// WORKSPACE itself, with a warning at the start). Default: none.
	Isolation String `json:"isolation,omitempty"`

	// true puts artifacts/ into the run's step commits (with isolation:
	// git-worktree); by default they are left out, as are the agents' inboxes.
	// Default: false.
	CommitArtifacts Bool `json:"commit_artifacts,omitempty"`

	// The steps, run in document order unless on: says otherwise.
	Steps []*Step `json:"steps"`
}

// A Provider overrides or adds an LLM CLI template (CONTRACT section 5).
type Provider struct {
	Key   string     `json:"-"`
	Pos   source.Pos `json:"-"`
	Order int        `json:"-"`

	// argv template: ${PROMPT}, ${PROMPT_FILE}, ${INPUT_FILE}, ${OUTPUT_FILE},
	// ${model} and provider_params keys are substituted.
	Command StringList `json:"command,omitempty"`

	// Default values of template keys (a step's provider_params win). Default:
	// {}.
	Defaults Free `json:"defaults,omitempty"`

	// How the prompt reaches the CLI; by default argv when the template uses
	// ${PROMPT}, temp_file for ${PROMPT_FILE}, else stdin.
	PromptTransport *PromptTransport `json:"prompt_transport,omitempty"`

	// Variables only this provider's processes get (values may use ${...}).
	// Default: {}.
	Env StringMap `json:"env,omitempty"`

	// Secrets (names from the top-level secrets) only this provider's
	// processes get. Default: [].
	Secrets StringList `json:"secrets,omitempty"`

	// Which configuration a preset's CLI uses: user (the user's own HOME,
	// login, settings and model provider) or isolated (a fresh config home
	// under RUN_ROOT/providers/NAME, for CI and reproducible runs). Default:
	// user.
	Home String `json:"home,omitempty"`
}

// Defaults apply to every step or block that does not set its own
// (CONTRACT 5): model, permissions, timeout and retry.
type Defaults struct {
	Pos source.Pos `json:"-"`

	// Model for every step or block that sets none. Default: the CLI's
	// default.
	Model String `json:"model,omitempty"`

	// read, edit or full for every step or block that sets none. Default:
	// edit.
	Permissions String `json:"permissions,omitempty"`

	// Timeout in seconds for every step or block that sets none. Default: 300.
	Timeout Number `json:"timeout,omitempty" limit:">0"`

	// Retry policy for every step or block that sets none. Default: 1 attempt.
	Retry *Retry `json:"retry,omitempty"`
}

// An Agent is a named agent with an inbox (the multi-agent pattern).
type Agent struct {
	Key   string     `json:"-"`
	Pos   source.Pos `json:"-"`
	Order int        `json:"-"`

	// Provider name, or a list tried in order on retryable failures.
	Provider StringOrList `json:"provider,omitempty"`

	// Model for the agent's steps. Default: the CLI's default.
	Model String `json:"model,omitempty"`

	// read, edit or full for the agent's steps. Default: edit.
	Permissions String `json:"permissions,omitempty"`

	// Text prepended to every prompt of the agent's steps, followed by an
	// empty line.
	Instructions String `json:"instructions,omitempty"`

	// File (relative to WORKSPACE) whose content is used as instructions.
	InstructionsFile String `json:"instructions_file,omitempty"`

	// Folder (relative to WORKSPACE) where send delivers the agent's messages;
	// processed/ sits beside it. Default: agents/NAME/inbox.
	Inbox String `json:"inbox,omitempty"`

	// fresh (every provider call starts a new conversation) or continue (each
	// call continues the agent's previous conversation with its CLI; the
	// session id is kept in the run's state). Default: fresh.
	Session String `json:"session,omitempty"`
}

// A Send delivers a message into an agent's inbox (CONTRACT 12.2): the
// content of File, or Content, under NNNN-<Name>.
type Send struct {
	Pos source.Pos `json:"-"`

	// The agent whose inbox receives the message.
	To String `json:"to"`

	// File (relative to WORKSPACE) whose content is sent.
	File String `json:"file,omitempty"`

	// Text that is sent.
	Content String `json:"content,omitempty"`

	// Message name; it is delivered as NNNN-<name>. Default: the base name of
	// file, or message.md.
	Name String `json:"name,omitempty"`
}

// A SchemaDef is a JSON Schema (2020-12) document given by name.
type SchemaDef struct {
	Key   string     `json:"-"`
	Pos   source.Pos `json:"-"`
	Order int        `json:"-"`

	Schema Free `json:"-"`
}

// A Step is one YAML step. The step tag of each field with a key says
// which steps read the key (StepKeys; the compiler, the schema and the
// reference docs read it):
//
//	step:"kind"      one of the kinds: exactly one is set (the schema and
//	                 the compiler both check)
//	step:"provider"  read only by a provider step; the compiler refuses it
//	                 on a step of another kind
//	step:"process"   read only by a step that runs a process (command,
//	                 provider or worker); the compiler refuses it on a
//	                 for_each, set_context, send or parallel step
//	step:"any"       read by a step of any kind
type Step struct {
	Pos source.Pos `json:"-"`

	// Unique name of the step in the whole workflow ([A-Za-z_][A-Za-z0-9_-]*).
	Name String `json:"name" step:"any"`

	// Kind: run a process, argv only (never a shell).
	Command StringList `json:"command,omitempty" step:"kind"`

	// Kind: run an LLM CLI through a provider (a name, or a list tried in
	// order).
	Provider StringOrList `json:"provider,omitempty" step:"kind"`

	// Kind: run an internal worker (Internal:TestRunner, ...).
	Worker String `json:"worker,omitempty" step:"kind"`

	// Kind: a loop over a list with a nested step list.
	ForEach *ForEach `json:"for_each,omitempty" step:"kind"`

	// Kind: merge keys into the context (dotted keys a.b allowed).
	SetContext Free `json:"set_context,omitempty" step:"kind"`

	// Kind: deliver a message into an agent's inbox.
	Send *Send `json:"send,omitempty" step:"kind"`

	// Kind: run named branches (step lists) at the same time and join.
	Parallel *Parallel `json:"parallel,omitempty" step:"kind"`

	// The agent this step acts as: its provider (when the step sets none),
	// model, permissions, instructions and ${agent.*}.
	Agent String `json:"agent,omitempty" step:"any"`

	// Model, passed with the CLI's own model flag. Default: the CLI's default.
	Model String `json:"model,omitempty" step:"process"`

	// read, edit or full: what the agent may do in its working directory (full
	// is dangerous). Default: edit.
	Permissions String `json:"permissions,omitempty" step:"process"`

	// The prompt text.
	Prompt String `json:"prompt,omitempty" step:"provider"`

	// File (relative to WORKSPACE) holding the prompt (at most 10 MiB, the
	// most a prompt holds).
	PromptFile String `json:"prompt_file,omitempty" step:"provider"`

	// Values for the provider template (model, script for mock, ...). Default:
	// {}.
	ProviderParams Free `json:"provider_params,omitempty" step:"provider"`

	// argv that replaces the provider's template entirely.
	CommandOverride StringList `json:"command_override,omitempty" step:"provider"`

	// How the prompt reaches a custom provider's CLI.
	PromptTransport *PromptTransport `json:"prompt_transport,omitempty" step:"provider"`

	// File (relative to WORKSPACE) piped to stdin, of any size; for a
	// provider it is appended to the prompt (at most 10 MiB in all).
	// Default: stdin is /dev/null.
	InputFile String `json:"input_file,omitempty" step:"process"`

	// File under WORKSPACE/artifacts/<Step>/ that receives the whole stdout.
	OutputFile String `json:"output_file,omitempty" step:"process"`

	// How stdout is captured: text, lines (${steps.S.lines}: the complete
	// lines of its first 1 MiB) or json (${steps.S.json...}: at most 8 MiB
	// parsed). Default: text.
	OutputCapture String `json:"output_capture,omitempty" step:"process"`

	// With output_capture: json, output that is not JSON leaves json null
	// instead of failing the step. Default: false.
	AllowParseError Bool `json:"allow_parse_error,omitempty" step:"process"`

	// Built-in CodeAndExplanation or CodeOnly, or a key of schemas: the reply
	// is cleaned and validated (outcome validation_fail when it fails).
	ValidationSchema String `json:"validation_schema,omitempty" step:"process"`

	// Condition; when false the step is recorded skipped. Default: always run.
	When *Cond `json:"when,omitempty" step:"any"`

	// Where control goes for each outcome.
	On *On `json:"on,omitempty" step:"any"`

	// Seconds before the step's process group gets SIGTERM (SIGKILL 10 s
	// later); exit code 124, outcome timeout. Default: 300.
	Timeout Number `json:"timeout,omitempty" step:"process" limit:">0"`

	// Retry policy. Default: 1 attempt.
	Retry *Retry `json:"retry,omitempty" step:"process"`

	// Variables for this step's process (over the workflow's env; a name that
	// is also a secret keeps the secret's value). Default: {}.
	Env StringMap `json:"env,omitempty" step:"process"`

	// Which of the workflow's secrets this step's process gets. Default: all
	// of them.
	Secrets StringList `json:"secrets,omitempty" step:"process"`

	// Block until files matching a glob exist (an agent waiting for its
	// inbox).
	WaitFor *WaitFor `json:"wait_for,omitempty" step:"process"`

	// Files the step needs; optionally injected into the prompt.
	DependsOn *DependsOn `json:"depends_on,omitempty" step:"process"`

	// References (e.g. steps.X.output) that resolve to "" instead of failing
	// when missing. Default: [].
	AllowMissingVars StringList `json:"allow_missing_vars,omitempty" step:"any"`

	// The N+1-th entry does not run the step; the outcome is max_visits.
	// Default: unbounded.
	MaxVisits Number `json:"max_visits,omitempty" step:"any" limit:"int 1.."`
}

// A PromptTransport says how the prompt reaches a provider.
type PromptTransport struct {
	Pos source.Pos `json:"-"`

	// argv, stdin or temp_file.
	Mode String `json:"mode"`

	// argv template used with mode argv.
	ArgvTemplate StringList `json:"argv_template,omitempty"`
}

// A ForEach is a sequential loop over a nested step list. Items is a literal
// list or a string holding one ${...} reference to a list.
type ForEach struct {
	Pos source.Pos `json:"-"`

	// A literal list, or one ${...} reference to a list (${steps.List.lines},
	// ${context.files}).
	Items Free `json:"items"`

	// Name of the loop variable. Default: item.
	As String `json:"as,omitempty"`

	// The loop body, run once per item.
	Steps []*Step `json:"steps"`

	// How many iterations may run at once; each iteration's body runs in
	// order, and results are recorded by index. Default: 1.
	Parallel Number `json:"parallel,omitempty" limit:"int 1.."`
}

// A Parallel step runs named branches (step lists) at the same time, at
// most Max at once (default: all; CONTRACT 12.3).
type Parallel struct {
	Pos source.Pos `json:"-"`

	// How many branches may run at once. Default: all.
	Max Number `json:"max,omitempty" limit:"int 1.."`

	// The branches by name, each a step list; a branch ends at its last step
	// or at goto: _branch_end.
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
	Pos source.Pos `json:"-"`

	// Tries in all (1 = no retry); only exit codes 1 and 124 are retried.
	// Default: 1.
	Attempts Number `json:"attempts,omitempty" limit:"int 1.."`

	// Seconds between tries (fractions allowed). Default: 2.
	BackoffSec Number `json:"backoff_sec,omitempty" limit:"0.."`
}

// A WaitFor blocks a step until min_count files match glob.
type WaitFor struct {
	Pos source.Pos `json:"-"`

	// Glob (relative to WORKSPACE) to wait for.
	Glob String `json:"glob"`

	// Seconds to wait; then the outcome is timeout (E_WAIT_TIMEOUT). Default:
	// 300.
	TimeoutSec Number `json:"timeout_sec,omitempty" limit:">0"`

	// Milliseconds between looks. Default: 500.
	PollMs Number `json:"poll_ms,omitempty" limit:"int 1..60000"`

	// How many files must match. Default: 1.
	MinCount Number `json:"min_count,omitempty" limit:"int 1.."`

	// Move the matched files to the agent's processed/ folder when the step
	// completes, exactly once. Default: false.
	Consume Bool `json:"consume,omitempty"`
}

// A DependsOn lists files a step needs, and whether they go into its prompt.
type DependsOn struct {
	Pos source.Pos `json:"-"`

	// Globs that must each match a file, else the step fails with
	// E_DEP_MISSING before it runs. Default: [].
	Required StringList `json:"required,omitempty"`

	// Globs that may match nothing. Default: [].
	Optional StringList `json:"optional,omitempty"`

	// true, or {mode, instruction, position}: add the matched paths (list) or
	// contents (content) to the prompt. Default: false.
	Inject *Inject `json:"inject,omitempty"`
}

// An Inject is `inject: true|false` (Enabled) or an object.
type Inject struct {
	Pos     source.Pos `json:"-"`
	Enabled Bool       `json:"-"` // the boolean form; the object form sets it true

	// list (the paths), content (the files' contents) or none. Default: list.
	Mode String `json:"mode,omitempty"`

	// Text put before the injected material.
	Instruction String `json:"instruction,omitempty"`

	// prepend or append to the prompt. Default: prepend.
	Position String `json:"position,omitempty"`
}

// A Cond is one condition (CONTRACT 3.2): exactly one field is set.
type Cond struct {
	Pos source.Pos `json:"-"`

	// True when the named step completed successfully.
	StepOK String `json:"step_ok,omitempty"`

	// True when the path (relative to WORKSPACE) exists.
	FileExists String `json:"file_exists,omitempty"`

	// True when left and right are equal strings.
	Equals *Equals `json:"equals,omitempty"`

	// Compare a step's exit code.
	ExitCode *ExitCodeCond `json:"exit_code,omitempty"`

	// True when the environment variable is set, any name (only whether it
	// is set: reading its value with ${env.NAME} needs NAME in env_allow or
	// secrets).
	EnvSet String `json:"env_set,omitempty"`

	// True when haystack contains needle.
	Contains *Contains `json:"contains,omitempty"`

	// True when text matches the RE2 pattern.
	Regex *Regex `json:"regex,omitempty"`

	// Compare two numbers.
	Number *NumberCond `json:"number,omitempty"`

	// True when every condition of the list is true.
	All []*Cond `json:"all,omitempty"`

	// True when some condition of the list is true.
	Any []*Cond `json:"any,omitempty"`

	// True when the condition is false.
	Not *Cond `json:"not,omitempty"`
}

// Equals compares two strings.
type Equals struct {
	Pos source.Pos `json:"-"`

	// Left operand (usually a ${...} reference).
	Left Scalar `json:"left"`

	// Right operand.
	Right Scalar `json:"right"`
}

// ExitCodeCond compares a step's exit code.
type ExitCodeCond struct {
	Pos source.Pos `json:"-"`

	// The step whose exit code is compared.
	Step String `json:"step"`

	// ==, !=, >, <, >= or <=.
	Op String `json:"op"`

	// The number compared with.
	Value Number `json:"value" limit:"-"`
}

// Contains tests for a substring.
type Contains struct {
	Pos source.Pos `json:"-"`

	// Text searched in.
	Haystack Scalar `json:"haystack"`

	// Text searched for.
	Needle Scalar `json:"needle"`
}

// Regex matches text against an RE2 pattern.
type Regex struct {
	Pos source.Pos `json:"-"`

	// Text matched.
	Text Scalar `json:"text"`

	// RE2 regular expression.
	Pattern String `json:"pattern"`

	// RE2 flags put before the pattern as (?flags): i case-insensitive, m
	// multi-line, s dot matches newline.
	Flags String `json:"flags,omitempty"`
}

// NumberCond compares numbers (left is usually a ${...} reference).
type NumberCond struct {
	Pos source.Pos `json:"-"`

	// Left operand (usually a ${...} reference).
	Left Scalar `json:"left"`

	// ==, !=, >, <, >= or <=.
	Op String `json:"op"`

	// Right operand.
	Right Scalar `json:"right"`
}

// On maps outcomes to handlers (CONTRACT 3.3).
type On struct {
	Pos source.Pos `json:"-"`

	// Handler when the step succeeded. Default: strict_flow: required; else
	// the next step.
	Success *Handler `json:"success,omitempty"`

	// Handler when the step failed. Default: strict_flow: required; else the
	// run fails.
	Failure *Handler `json:"failure,omitempty"`

	// Handler when the step timed out. Default: failure's handler.
	Timeout *Handler `json:"timeout,omitempty"`

	// Handler when the step's when was false. Default: the next step.
	Skipped *Handler `json:"skipped,omitempty"`

	// Handler when the reply failed validation_schema. Default: failure's
	// handler.
	ValidationFail *Handler `json:"validation_fail,omitempty"`

	// Handler when the step was entered more than max_visits times. Default:
	// failure's handler.
	MaxVisits *Handler `json:"max_visits,omitempty"`

	// Handler for every outcome that has no handler of its own.
	Always *Handler `json:"always,omitempty"`

	// Handlers of custom signals (SIGNAL:APPROVED: {goto: Merge}); an unrouted
	// one follows success for exit 0, else failure. Default: {}.
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
	Pos source.Pos `json:"-"`

	// Go to a step, or _end, _error, _loop_break, _loop_continue.
	Goto String `json:"goto,omitempty"`

	// true: end the run successfully.
	End Bool `json:"end,omitempty"`

	// End the run in failure with this message (ERROR: MSG; exit 1, or 124
	// after a timeout).
	Error String `json:"error,omitempty"`

	// true: stop the run halted at this step for a person (exit 4); smithvm
	// resume runs the step again, or with --signal takes its transition for
	// that signal.
	Halt Bool `json:"halt,omitempty"`
}

// Manifest is a workflows.json Node/Block manifest (CONTRACT section 7).
type Manifest struct {
	File string     `json:"-"`
	Pos  source.Pos `json:"-"`

	// Format version of the document; write "1".
	Version String `json:"version"`

	// Name of the runs of this manifest (smithvm list, status); default: the
	// file's name, or for workflows.json the name of its folder.
	Name String `json:"name,omitempty"`

	// The node the run starts in (Node:X or X); smithvm run --start NODE
	// starts another.
	Entry String `json:"entry"`

	// Commands of the internal workers and the isolation mode.
	Config *Config `json:"config,omitempty"`

	// Names of environment variables the run needs; a missing, empty or short one
	// (under 4 characters, line breaks at its end not counted) stops the run
	// before it starts (E_SECRET_MISSING). Their values are masked as ***
	// everywhere (a value that ends in a line break also without it). Default: [].
	Secrets StringList `json:"secrets,omitempty"`

	// Names of environment variables that every child process inherits.
	// Default: [].
	EnvAllow StringList `json:"env_allow,omitempty"`

	// Variables set for every child process of the run. Default: {}.
	Env StringMap `json:"env,omitempty"`

	// Model, permissions, timeout and retry for every block that sets none.
	Defaults *Defaults `json:"defaults,omitempty"`

	// Provider templates by name; they override or add to the built-in
	// {presets} presets. Default: the presets.
	Providers map[string]*Provider `json:"providers,omitempty"`

	// Named agents, each with a provider and an inbox folder; an AI worker
	// names one with agent. Default: {}.
	Agents map[string]*Agent `json:"agents,omitempty"`

	// Worker definitions by name: AI workers (provider) and command workers
	// (command, conventionally keyed Command:NAME). Default: {}.
	Workers map[string]*WorkerDef `json:"workers,omitempty"`

	// Named JSON Schemas (2020-12) that validationSchema may name, besides the
	// built-in CodeAndExplanation and CodeOnly. Default: {}.
	Schemas map[string]*SchemaDef `json:"schemas,omitempty"`

	// The nodes by id (Node:X): context containers of blocks.
	Nodes map[string]*Node `json:"nodes"`
}

// Config holds the project commands and the isolation mode.
type Config struct {
	Pos source.Pos `json:"-"`

	// argv that Internal:TestRunner runs in worktree_path.
	TestCommand StringList `json:"test_command,omitempty"`

	// argv that Internal:RunLinter runs; JSON output is parsed into
	// LINT_RESULT.
	LintCommand StringList `json:"lint_command,omitempty"`

	// argv that Internal:RunBuilder runs.
	BuildCommand StringList `json:"build_command,omitempty"`

	// none, or git-worktree: the run works in its own git worktree on branch
	// smith/<run_id> when WORKSPACE is in a git repository (otherwise in
	// WORKSPACE itself, with a warning at the start). Default: none.
	Isolation String `json:"isolation,omitempty"`

	// true puts artifacts/ into the run's step commits (with isolation
	// git-worktree); by default they are left out, as are the agents' inboxes.
	// Default: false.
	CommitArtifacts Bool `json:"commit_artifacts,omitempty"`
}

// A WorkerDef is an AI worker (Provider set) or a command worker (Command set).
type WorkerDef struct {
	Key   string     `json:"-"`
	Pos   source.Pos `json:"-"`
	Order int        `json:"-"`

	// AI worker: a provider name or a list tried in order on retryable
	// failures.
	Provider StringOrList `json:"provider,omitempty"`

	// AI worker: the agent whose provider, model, permissions and instructions
	// apply.
	Agent String `json:"agent,omitempty"`

	// AI worker: values for the provider template (model, script for mock,
	// ...). Default: {}.
	ProviderParams Free `json:"provider_params,omitempty"`

	// AI worker: the model, passed with the CLI's own model flag. Default: the
	// CLI's default.
	Model String `json:"model,omitempty"`

	// AI worker: read, edit or full (full removes every approval and sandbox:
	// dangerous). Default: edit.
	Permissions String `json:"permissions,omitempty"`

	// AI worker: the CONTRACT prompt layer.
	Instructions String `json:"instructions,omitempty"`

	// Type of the segment the worker's output becomes. Default: AI_RESPONSE
	// (AI), COMMAND_OUTPUT (command).
	OutputType String `json:"output_type,omitempty"`

	// Command worker: argv; gets the payload (JSON array of segments) on
	// stdin, a last stdout line SIGNAL:X names its signal (unrouted, in a
	// block without SIGNAL:FAIL_DEFAULT, the exit code decides).
	Command StringList `json:"command,omitempty"`

	// Seconds before the worker is stopped. Default: 300.
	Timeout Number `json:"timeout,omitempty" limit:">0"`
}

// A Node is a context container of blocks.
type Node struct {
	Key   string     `json:"-"`
	Pos   source.Pos `json:"-"`
	Order int        `json:"-"`

	// The block a CALL of this node (or the run, for the entry node) starts
	// at.
	EntryBlock String `json:"entry_block"`

	// true shares the caller's payload and static memory; false makes a pure
	// subroutine that starts with an empty payload. Default: false.
	ContextInheritance Bool `json:"context_inheritance,omitempty"`

	// Key/value facts for the node's AI workers (the STATIC_MEMORY prompt
	// layer). Default: {}.
	StaticMemory Free `json:"static_memory,omitempty"`

	// The node's blocks by id (Block:X); block ids are global.
	Blocks map[string]*Block `json:"blocks"`
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

	// Internal:NAME, or a key of workers.
	Worker String `json:"worker"`

	// Built-in CodeAndExplanation or CodeOnly, or a key of schemas: the reply
	// is cleaned and validated; failure emits SIGNAL:VALIDATION_FAIL.
	ValidationSchema *String `json:"validationSchema,omitempty"`

	// Order of the prompt layers: PAYLOAD, PAYLOAD:<TYPE>, PAYLOAD:LAST,
	// CONTRACT, STATIC_MEMORY, STATIC_MEMORY:<key>, ARTIFACT:<path>, METADATA.
	// Default: [PAYLOAD, CONTRACT, STATIC_MEMORY, METADATA].
	PayloadMergeStrategy *StringList `json:"payload_merge_strategy,omitempty"`

	// Signal-to-action table; lookup tries the exact signal, then FAILURE for
	// a TIMEOUT, then SIGNAL:FAIL_DEFAULT.
	Transitions []*Transition `json:"transitions"`

	// The N+1-th entry does not run the block but emits SIGNAL:MAX_VISITS.
	// Default: unbounded.
	MaxVisits *Number `json:"max_visits,omitempty" limit:"int 1.."`

	// Seconds before the worker is stopped (SIGNAL:TIMEOUT). Default: 300.
	Timeout *Number `json:"timeout,omitempty" limit:">0"`
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
	Pos source.Pos `json:"-"`

	// The signal this row handles (SIGNAL:SUCCESS, SIGNAL:FAIL_DEFAULT, ...).
	OnSignal String `json:"on_signal"`

	// JUMP:Block, CALL:Node, RETURN, HALT_AND_FLAG, END or FAIL:message.
	Action String `json:"action"`

	// With CALL: the block to continue at after the callee's RETURN, instead
	// of running the calling block again. Default: the calling block.
	ReturnTo *String `json:"return_to,omitempty"`
}
