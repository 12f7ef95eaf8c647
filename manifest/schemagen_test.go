package manifest

// The generation of the two formats' JSON Schemas from the Go types, with
// invopop/jsonschema: what workflow.schema.json and manifest.schema.json
// hold. Only the tests generate them (TestSchemaGolden compares the files
// with the generator; -update rewrites them): the binaries embed the
// files and do not link the reflection library.

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/invopop/jsonschema"

	"smith/lang"
)

// stepKinds are the keys of which a step has exactly one.
var stepKinds = []string{"command", "provider", "worker", "for_each", "set_context", "send", "parallel"}

// handlerKinds are the keys of which a handler has exactly one.
var handlerKinds = []string{"goto", "end", "error", "halt"}

// Permissions are the values of permissions: (CONTRACT 5), least first.
var Permissions = []string{"read", "edit", "full"}

// stepNamePattern is what a step name must match.
const stepNamePattern = `^[A-Za-z_][A-Za-z0-9_-]*$`

// compareOps are the operators of exit_code and number conditions.
var compareOps = []string{"==", "!=", ">", "<", ">=", "<="}

// generateWorkflowSchema and generateManifestSchema generate the schemas
// from the Go types (what workflow.schema.json and manifest.schema.json
// hold).
func generateWorkflowSchema() []byte {
	return schemaText(&Workflow{}, WorkflowSchemaID, "Workflow")
}

func generateManifestSchema() []byte {
	return schemaText(&Manifest{}, ManifestSchemaID, "Manifest")
}

// schemaText reflects the type of v, refines the result, describes every
// key (root names the root object in keyDocs) and prints it.
func schemaText(v any, id, root string) []byte {
	r := &jsonschema.Reflector{Anonymous: true, ExpandedStruct: true}
	s := r.Reflect(v)
	s.ID = jsonschema.ID(id)
	refine(s.Definitions)
	if _, ok := s.Properties.Get("isolation"); ok {
		s.Properties.Set("isolation", enumSchema(lang.IsolationModes...)) // a workflow's own (the root)
	}
	describe(root, s)
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		panic(fmt.Sprintf("internal error: print schema %s: %v", id, err))
	}
	return append(b, '\n')
}

// refine adds what the json tags cannot say: enums, the step name pattern,
// and "exactly one of" for steps, conditions and handlers. Definitions the
// document does not use are skipped.
func refine(defs jsonschema.Definitions) {
	if s := defs["Step"]; s != nil {
		s.Properties.Set("name", &jsonschema.Schema{Type: "string", Pattern: stepNamePattern})
		s.Properties.Set("output_capture", enumSchema("text", "lines", "json"))
		// A step with agent: and none of the kinds is a provider step on
		// the agent's provider (CONTRACT 3).
		s.OneOf = append(exactlyOne(stepKinds), &jsonschema.Schema{
			Required: []string{"agent"},
			Not:      &jsonschema.Schema{AnyOf: exactlyOne(stepKinds)},
		})
	}
	for _, name := range []string{"Step", "Agent", "Defaults", "WorkerDef"} {
		if s := defs[name]; s != nil {
			s.Properties.Set("permissions", enumSchema(Permissions...))
		}
	}
	if s := defs["On"]; s != nil {
		s.Properties.Set("signals", &jsonschema.Schema{
			Type:                 "object",
			PropertyNames:        &jsonschema.Schema{Pattern: lang.SignalPattern},
			AdditionalProperties: &jsonschema.Schema{Ref: "#/$defs/Handler"},
		})
		delete(defs, "SignalHandler")
	}
	if s := defs["Parallel"]; s != nil {
		s.Required = []string{"branches"}
		if b, ok := s.Properties.Get("branches"); ok && b != nil {
			b.PropertyNames = &jsonschema.Schema{Pattern: stepNamePattern}
			one := uint64(1)
			b.MinProperties = &one
		}
	}
	if s := defs["Send"]; s != nil {
		s.OneOf = exactlyOne([]string{"file", "content"})
	}
	if s := defs["PromptTransport"]; s != nil {
		s.Properties.Set("mode", enumSchema("argv", "stdin", "temp_file"))
	}
	if s := defs["Provider"]; s != nil {
		s.Properties.Set("home", enumSchema(lang.HomeModes...))
	}
	if s := defs["Agent"]; s != nil {
		s.Properties.Set("session", enumSchema(lang.SessionModes...))
	}
	if s := defs["Config"]; s != nil {
		s.Properties.Set("isolation", enumSchema(lang.IsolationModes...))
	}
	if s := defs["ExitCodeCond"]; s != nil {
		s.Properties.Set("op", enumSchema(compareOps...))
	}
	if s := defs["NumberCond"]; s != nil {
		s.Properties.Set("op", enumSchema(compareOps...))
	}
	if s := defs["Cond"]; s != nil {
		var keys []string
		for k := range s.Properties.KeysFromOldest() {
			keys = append(keys, k)
		}
		s.OneOf = exactlyOne(keys)
	}
	if s := defs["Handler"]; s != nil {
		s.OneOf = exactlyOne(handlerKinds)
	}
}

func enumSchema(vals ...string) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "string"}
	for _, v := range vals {
		s.Enum = append(s.Enum, v)
	}
	return s
}

// exactlyOne is a oneOf whose branches each require one of keys.
func exactlyOne(keys []string) []*jsonschema.Schema {
	out := make([]*jsonschema.Schema, len(keys))
	for i, k := range keys {
		out[i] = &jsonschema.Schema{Required: []string{k}}
	}
	return out
}

func stringSchema() *jsonschema.Schema { return &jsonschema.Schema{Type: "string"} }

func stringArraySchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "array", Items: stringSchema()}
}

// JSONSchema is the schema of a string value.
func (String) JSONSchema() *jsonschema.Schema { return stringSchema() }

// JSONSchema is the schema of a number value.
func (Number) JSONSchema() *jsonschema.Schema { return &jsonschema.Schema{Type: "number"} }

// JSONSchema is the schema of a boolean value.
func (Bool) JSONSchema() *jsonschema.Schema { return &jsonschema.Schema{Type: "boolean"} }

// JSONSchema is the schema of a list of strings.
func (StringList) JSONSchema() *jsonschema.Schema { return stringArraySchema() }

// JSONSchema is the schema of a string or a list of strings.
func (StringOrList) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{stringSchema(), stringArraySchema()}}
}

// JSONSchema is the schema of a string, number or boolean.
func (Scalar) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
		stringSchema(), {Type: "number"}, {Type: "boolean"},
	}}
}

// JSONSchema is the schema of an object of strings.
func (StringMap) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", AdditionalProperties: stringSchema()}
}

// JSONSchema is the schema of a value of any shape (the true schema).
func (Free) JSONSchema() *jsonschema.Schema { return &jsonschema.Schema{} }

// JSONSchema is the schema of inject: a boolean or an object.
func (Inject) JSONSchema() *jsonschema.Schema {
	props := jsonschema.NewProperties()
	props.Set("mode", enumSchema("list", "content", "none"))
	props.Set("instruction", stringSchema())
	props.Set("position", enumSchema("prepend", "append"))
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
		{Type: "boolean"},
		{Type: "object", Properties: props, AdditionalProperties: jsonschema.FalseSchema},
	}}
}

// JSONSchema is the schema of a named schema: a JSON Schema document, which
// is an object or a boolean.
func (SchemaDef) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Type: "object"}, {Type: "boolean"}}}
}

// A KeyDoc documents one key of a source format: what it means and, when
// the key may be left out, the value that applies then ("" when there is
// no default worth naming).
type KeyDoc struct {
	Desc    string
	Default string
}

// keyDocs documents every key of both formats, keyed "Object.key": Object
// is the schema definition ($defs name, or Workflow/Manifest for the
// roots). It is the one place descriptions live: the printed schemas carry
// them (so an editor shows them) and docs/workflow-reference.md and
// docs/manifest-reference.md print them (TestSchemaDescriptions and
// TestReferenceDocs keep all three in step).
var keyDocs = map[string]KeyDoc{
	// The YAML workflow (root).
	"Workflow.version":          {"Format version of the document; write \"1.0\".", ""},
	"Workflow.name":             {"Name of the workflow, shown in run listings and console lines.", ""},
	"Workflow.strict_flow":      {"When true, every step needs on.success and on.failure (or on.always); when false a missing handler means: success goes to the next step, failure or timeout fails the run.", "true"},
	"Workflow.context":          {"Initial variables, read as ${context.KEY}; --context and --context-file override them.", "{}"},
	"Workflow.secrets":          {"Names of environment variables the run needs; a missing one stops the run before it starts (E_SECRET_MISSING). Their values are masked as *** everywhere.", "[]"},
	"Workflow.env_allow":        {"Names of environment variables that ${env.NAME} may read and that every child process inherits.", "[]"},
	"Workflow.env":              {"Variables set for every child process of the run (a step's own env wins; a name that is also a secret keeps the secret's value).", "{}"},
	"Workflow.defaults":         {"Model, permissions, timeout and retry for every step that sets none.", ""},
	"Workflow.providers":        {"Provider templates by name; they override or add to the built-in claude, gemini, codex and mock presets.", "the presets"},
	"Workflow.agents":           {"Named agents, each with a provider and an inbox folder; steps name one with agent:.", "{}"},
	"Workflow.schemas":          {"Named JSON Schemas (2020-12) that validation_schema may name, besides the built-in CodeAndExplanation and CodeOnly.", "{}"},
	"Workflow.test_command":     {"argv that Internal:TestRunner runs.", ""},
	"Workflow.lint_command":     {"argv that Internal:RunLinter runs.", ""},
	"Workflow.build_command":    {"argv that Internal:RunBuilder runs.", ""},
	"Workflow.isolation":        {"none, or git-worktree: the run works in its own git worktree on branch smith/<run_id> (the WORKSPACE must be in a git repository).", "none"},
	"Workflow.commit_artifacts": {"true puts artifacts/ into the run's step commits (with isolation: git-worktree); by default they are left out, as are the agents' inboxes.", "false"},
	"Workflow.steps":            {"The steps, run in document order unless on: says otherwise.", ""},

	// The manifest (root).
	"Manifest.version":   {"Format version of the document; write \"1\".", ""},
	"Manifest.name":      {"Name of the runs of this manifest (smithvm list, status); default: the file's name, or for workflows.json the name of its folder.", ""},
	"Manifest.entry":     {"The node the run starts in (Node:X or X); smithvm run --start NODE starts another.", ""},
	"Manifest.config":    {"Commands of the internal workers and the isolation mode.", ""},
	"Manifest.secrets":   {"Names of environment variables the run needs; a missing one stops the run before it starts (E_SECRET_MISSING). Their values are masked as *** everywhere.", "[]"},
	"Manifest.env_allow": {"Names of environment variables that every child process inherits.", "[]"},
	"Manifest.env":       {"Variables set for every child process of the run.", "{}"},
	"Manifest.defaults":  {"Model, permissions, timeout and retry for every block that sets none.", ""},
	"Manifest.providers": {"Provider templates by name; they override or add to the built-in claude, gemini, codex and mock presets.", "the presets"},
	"Manifest.agents":    {"Named agents, each with a provider and an inbox folder; an AI worker names one with agent.", "{}"},
	"Manifest.workers":   {"Worker definitions by name: AI workers (provider) and command workers (command, conventionally keyed Command:NAME).", "{}"},
	"Manifest.schemas":   {"Named JSON Schemas (2020-12) that validationSchema may name, besides the built-in CodeAndExplanation and CodeOnly.", "{}"},
	"Manifest.nodes":     {"The nodes by id (Node:X): context containers of blocks.", ""},

	"Config.test_command":     {"argv that Internal:TestRunner runs in worktree_path.", ""},
	"Config.lint_command":     {"argv that Internal:RunLinter runs; JSON output is parsed into LINT_RESULT.", ""},
	"Config.build_command":    {"argv that Internal:RunBuilder runs.", ""},
	"Config.commit_artifacts": {"true puts artifacts/ into the run's step commits (with isolation git-worktree); by default they are left out, as are the agents' inboxes.", "false"},
	"Config.isolation":        {"none, or git-worktree: the run works in its own git worktree on branch smith/<run_id>.", "none"},

	"Node.entry_block":         {"The block a CALL of this node (or the run, for the entry node) starts at.", ""},
	"Node.context_inheritance": {"true shares the caller's payload and static memory; false makes a pure subroutine that starts with an empty payload.", "false"},
	"Node.static_memory":       {"Key/value facts for the node's AI workers (the STATIC_MEMORY prompt layer).", "{}"},
	"Node.blocks":              {"The node's blocks by id (Block:X); block ids are global.", ""},

	"Block.worker":                 {"Internal:NAME, or a key of workers.", ""},
	"Block.validationSchema":       {"Built-in CodeAndExplanation or CodeOnly, or a key of schemas: the reply is cleaned and validated; failure emits SIGNAL:VALIDATION_FAIL.", ""},
	"Block.payload_merge_strategy": {"Order of the prompt layers: PAYLOAD, PAYLOAD:<TYPE>, PAYLOAD:LAST, CONTRACT, STATIC_MEMORY, STATIC_MEMORY:<key>, ARTIFACT:<path>, METADATA.", "[PAYLOAD, CONTRACT, STATIC_MEMORY, METADATA]"},
	"Block.transitions":            {"Signal-to-action table; lookup tries the exact signal, then FAILURE for a TIMEOUT, then SIGNAL:FAIL_DEFAULT.", ""},
	"Block.max_visits":             {"The N+1-th entry does not run the block but emits SIGNAL:MAX_VISITS.", "unbounded"},
	"Block.timeout":                {"Seconds before the worker is stopped (SIGNAL:TIMEOUT).", "300"},

	"Transition.on_signal": {"The signal this row handles (SIGNAL:SUCCESS, SIGNAL:FAIL_DEFAULT, ...).", ""},
	"Transition.action":    {"JUMP:Block, CALL:Node, RETURN, HALT_AND_FLAG, END or FAIL:message.", ""},
	"Transition.return_to": {"With CALL: the block to continue at after the callee's RETURN, instead of running the calling block again.", "the calling block"},

	"WorkerDef.provider":        {"AI worker: a provider name or a list tried in order on retryable failures.", ""},
	"WorkerDef.agent":           {"AI worker: the agent whose provider, model, permissions and instructions apply.", ""},
	"WorkerDef.provider_params": {"AI worker: values for the provider template (model, script for mock, ...).", "{}"},
	"WorkerDef.model":           {"AI worker: the model, passed with the CLI's own model flag.", "the CLI's default"},
	"WorkerDef.permissions":     {"AI worker: read, edit or full (full removes every approval and sandbox: dangerous).", "edit"},
	"WorkerDef.instructions":    {"AI worker: the CONTRACT prompt layer.", ""},
	"WorkerDef.output_type":     {"Type of the segment the worker's output becomes.", "AI_RESPONSE (AI), COMMAND_OUTPUT (command)"},
	"WorkerDef.command":         {"Command worker: argv; gets the payload (JSON array of segments) on stdin, a last stdout line SIGNAL:X names its signal.", ""},
	"WorkerDef.timeout":         {"Seconds before the worker is stopped.", "300"},

	// Shared by both formats.
	"Provider.command":          {"argv template: ${PROMPT}, ${PROMPT_FILE}, ${INPUT_FILE}, ${OUTPUT_FILE}, ${model} and provider_params keys are substituted.", ""},
	"Provider.defaults":         {"Default values of template keys (a step's provider_params win).", "{}"},
	"Provider.prompt_transport": {"How the prompt reaches the CLI; by default argv when the template uses ${PROMPT}, temp_file for ${PROMPT_FILE}, else stdin.", ""},
	"Provider.env":              {"Variables only this provider's processes get (values may use ${...}).", "{}"},
	"Provider.secrets":          {"Secrets (names from the top-level secrets) only this provider's processes get.", "[]"},
	"Provider.home":             {"Which configuration a preset's CLI uses: user (the user's own HOME, login, settings and model provider) or isolated (a fresh config home under RUN_ROOT/providers/NAME, for CI and reproducible runs).", "user"},

	"PromptTransport.mode":          {"argv, stdin or temp_file.", ""},
	"PromptTransport.argv_template": {"argv template used with mode argv.", ""},

	"Defaults.model":       {"Model for every step or block that sets none.", "the CLI's default"},
	"Defaults.permissions": {"read, edit or full for every step or block that sets none.", "edit"},
	"Defaults.timeout":     {"Timeout in seconds for every step or block that sets none.", "300"},
	"Defaults.retry":       {"Retry policy for every step or block that sets none.", "1 attempt"},

	"Agent.provider":          {"Provider name, or a list tried in order on retryable failures.", ""},
	"Agent.model":             {"Model for the agent's steps.", "the CLI's default"},
	"Agent.permissions":       {"read, edit or full for the agent's steps.", "edit"},
	"Agent.instructions":      {"Text prepended to every prompt of the agent's steps, followed by an empty line.", ""},
	"Agent.instructions_file": {"File (relative to WORKSPACE) whose content is used as instructions.", ""},
	"Agent.inbox":             {"Folder (relative to WORKSPACE) where send delivers the agent's messages; processed/ sits beside it.", "agents/NAME/inbox"},
	"Agent.session":           {"fresh (every provider call starts a new conversation) or continue (each call continues the agent's previous conversation with its CLI; the session id is kept in the run's state).", "fresh"},

	"Retry.attempts":    {"Tries in all (1 = no retry); only exit codes 1 and 124 are retried.", "1"},
	"Retry.backoff_sec": {"Seconds between tries (fractions allowed).", "2"},

	// YAML steps.
	"Step.name":               {"Unique name of the step in the whole workflow ([A-Za-z_][A-Za-z0-9_-]*).", ""},
	"Step.command":            {"Kind: run a process, argv only (never a shell).", ""},
	"Step.provider":           {"Kind: run an LLM CLI through a provider (a name, or a list tried in order).", ""},
	"Step.worker":             {"Kind: run an internal worker (Internal:TestRunner, ...).", ""},
	"Step.for_each":           {"Kind: a loop over a list with a nested step list.", ""},
	"Step.set_context":        {"Kind: merge keys into the context (dotted keys a.b allowed).", ""},
	"Step.send":               {"Kind: deliver a message into an agent's inbox.", ""},
	"Step.agent":              {"The agent this step acts as: its provider (when the step sets none), model, permissions, instructions and ${agent.*}.", ""},
	"Step.model":              {"Model, passed with the CLI's own model flag.", "the CLI's default"},
	"Step.permissions":        {"read, edit or full: what the agent may do in its working directory (full is dangerous).", "edit"},
	"Step.prompt":             {"The prompt text (provider steps).", ""},
	"Step.prompt_file":        {"File (relative to WORKSPACE) holding the prompt.", ""},
	"Step.provider_params":    {"Values for the provider template (model, script for mock, ...).", "{}"},
	"Step.command_override":   {"argv that replaces the provider's template entirely.", ""},
	"Step.prompt_transport":   {"How the prompt reaches a custom provider's CLI.", ""},
	"Step.input_file":         {"File (relative to WORKSPACE) piped to stdin; for a provider it is appended to the prompt.", "stdin is /dev/null"},
	"Step.output_file":        {"File under WORKSPACE/artifacts/<Step>/ that receives the whole stdout.", ""},
	"Step.output_capture":     {"How stdout is captured: text, lines (${steps.S.lines}) or json (${steps.S.json...}).", "text"},
	"Step.allow_parse_error":  {"With output_capture: json, output that is not JSON leaves json null instead of failing the step.", "false"},
	"Step.validation_schema":  {"Built-in CodeAndExplanation or CodeOnly, or a key of schemas: the reply is cleaned and validated (outcome validation_fail when it fails).", ""},
	"Step.when":               {"Condition; when false the step is recorded skipped.", "always run"},
	"Step.on":                 {"Where control goes for each outcome.", ""},
	"Step.timeout":            {"Seconds before the step's process group gets SIGTERM (SIGKILL 10 s later); exit code 124, outcome timeout.", "300"},
	"Step.retry":              {"Retry policy.", "1 attempt"},
	"Step.env":                {"Variables for this step's process (over the workflow's env; a name that is also a secret keeps the secret's value).", "{}"},
	"Step.secrets":            {"Which of the workflow's secrets this step's process gets.", "all of them"},
	"Step.wait_for":           {"Block until files matching a glob exist (an agent waiting for its inbox).", ""},
	"Step.depends_on":         {"Files the step needs; optionally injected into the prompt.", ""},
	"Step.allow_missing_vars": {"References (e.g. steps.X.output) that resolve to \"\" instead of failing when missing.", "[]"},
	"Step.max_visits":         {"The N+1-th entry does not run the step; the outcome is max_visits.", "unbounded"},

	"ForEach.items":    {"A literal list, or one ${...} reference to a list (${steps.List.lines}, ${context.files}).", ""},
	"ForEach.as":       {"Name of the loop variable.", "item"},
	"ForEach.steps":    {"The loop body, run once per item.", ""},
	"ForEach.parallel": {"How many iterations may run at once; each iteration's body runs in order, and results are recorded by index.", "1"},

	"Step.parallel":     {"Kind: run named branches (step lists) at the same time and join.", ""},
	"Parallel.branches": {"The branches by name, each a step list; a branch ends at its last step or at goto: _branch_end.", ""},
	"Parallel.max":      {"How many branches may run at once.", "all"},

	"Send.to":      {"The agent whose inbox receives the message.", ""},
	"Send.file":    {"File (relative to WORKSPACE) whose content is sent.", ""},
	"Send.content": {"Text that is sent.", ""},
	"Send.name":    {"Message name; it is delivered as NNNN-<name>.", "the base name of file, or message.md"},

	"WaitFor.glob":        {"Glob (relative to WORKSPACE) to wait for.", ""},
	"WaitFor.timeout_sec": {"Seconds to wait; then the outcome is timeout (E_WAIT_TIMEOUT).", "300"},
	"WaitFor.poll_ms":     {"Milliseconds between looks.", "500"},
	"WaitFor.min_count":   {"How many files must match.", "1"},
	"WaitFor.consume":     {"Move the matched files to the agent's processed/ folder when the step completes, exactly once.", "false"},

	"DependsOn.required": {"Globs that must each match a file, else the step fails with E_DEP_MISSING before it runs.", "[]"},
	"DependsOn.optional": {"Globs that may match nothing.", "[]"},
	"DependsOn.inject":   {"true, or {mode, instruction, position}: add the matched paths (list) or contents (content) to the prompt.", "false"},

	"Inject.mode":        {"list (the paths), content (the files' contents) or none.", "list"},
	"Inject.instruction": {"Text put before the injected material.", ""},
	"Inject.position":    {"prepend or append to the prompt.", "prepend"},

	"Cond.step_ok":     {"True when the named step completed successfully.", ""},
	"Cond.file_exists": {"True when the path (relative to WORKSPACE) exists.", ""},
	"Cond.equals":      {"True when left and right are equal strings.", ""},
	"Cond.exit_code":   {"Compare a step's exit code.", ""},
	"Cond.env_set":     {"True when the environment variable is set (names in env_allow or secrets).", ""},
	"Cond.contains":    {"True when haystack contains needle.", ""},
	"Cond.regex":       {"True when text matches the RE2 pattern.", ""},
	"Cond.number":      {"Compare two numbers.", ""},
	"Cond.all":         {"True when every condition of the list is true.", ""},
	"Cond.any":         {"True when some condition of the list is true.", ""},
	"Cond.not":         {"True when the condition is false.", ""},

	"Equals.left":        {"Left operand (usually a ${...} reference).", ""},
	"Equals.right":       {"Right operand.", ""},
	"ExitCodeCond.step":  {"The step whose exit code is compared.", ""},
	"ExitCodeCond.op":    {"==, !=, >, <, >= or <=.", ""},
	"ExitCodeCond.value": {"The number compared with.", ""},
	"Contains.haystack":  {"Text searched in.", ""},
	"Contains.needle":    {"Text searched for.", ""},
	"Regex.text":         {"Text matched.", ""},
	"Regex.pattern":      {"RE2 regular expression.", ""},
	"Regex.flags":        {"RE2 flags put before the pattern as (?flags): i case-insensitive, m multi-line, s dot matches newline.", ""},
	"NumberCond.left":    {"Left operand (usually a ${...} reference).", ""},
	"NumberCond.op":      {"==, !=, >, <, >= or <=.", ""},
	"NumberCond.right":   {"Right operand.", ""},

	"On.success":         {"Handler when the step succeeded.", "strict_flow: required; else the next step"},
	"On.failure":         {"Handler when the step failed.", "strict_flow: required; else the run fails"},
	"On.timeout":         {"Handler when the step timed out.", "failure's handler"},
	"On.skipped":         {"Handler when the step's when was false.", "the next step"},
	"On.validation_fail": {"Handler when the reply failed validation_schema.", "failure's handler"},
	"On.max_visits":      {"Handler when the step was entered more than max_visits times.", "failure's handler"},
	"On.always":          {"Handler for every outcome that has no handler of its own.", ""},
	"On.signals":         {"Handlers of custom signals (SIGNAL:APPROVED: {goto: Merge}); an unrouted one follows success for exit 0, else failure.", "{}"},

	"Handler.goto":  {"Go to a step, or _end, _error, _loop_break, _loop_continue.", ""},
	"Handler.end":   {"true: end the run successfully.", ""},
	"Handler.halt":  {"true: stop the run halted at this step for a person (exit 4); smithvm resume runs the step again, or with --signal takes its transition for that signal.", ""},
	"Handler.error": {"End the run in failure with this message (ERROR: MSG; exit 1, or 124 after a timeout).", ""},
}

// KeyDocFor returns the documentation of key in object (a $defs name, or
// Workflow/Manifest for the roots).
func KeyDocFor(object, key string) (KeyDoc, bool) {
	d, ok := keyDocs[object+"."+key]
	return d, ok
}

// describe sets the description of every property of s (named object)
// and of its definitions from keyDocs. A key with no entry keeps no
// description: TestSchemaDescriptions names it.
func describe(object string, s *jsonschema.Schema) {
	describeProps(object, s)
	names := make([]string, 0, len(s.Definitions))
	for n := range s.Definitions {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		describeProps(n, s.Definitions[n])
	}
}

func describeProps(object string, s *jsonschema.Schema) {
	if s == nil {
		return
	}
	for _, alt := range s.AnyOf {
		describeProps(object, alt)
	}
	if s.Properties == nil {
		return
	}
	for pair := s.Properties.Oldest(); pair != nil; pair = pair.Next() {
		d, ok := keyDocs[object+"."+pair.Key]
		if !ok || pair.Value == nil {
			continue
		}
		desc := d.Desc
		if d.Default != "" {
			desc = fmt.Sprintf("%s Default: %s.", desc, d.Default)
		}
		pair.Value.Description = desc
	}
}
