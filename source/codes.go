package source

// A Code names one kind of diagnostic or runtime error: E_* for errors,
// W_* for warnings. Every code is in the table below, and nowhere else.
type Code string

// MaxDepth bounds the nesting of every value: a document (E_PARSE at load),
// --context-file, and every value that enters a run (E_LIMIT), so that a
// state holding them always stays readable (the JSON decoder stops at
// 10000 levels).
const MaxDepth = 100

// MaxCallDepth bounds the return stack of a run: a CALL with this many
// frames on the stack already (CALLs not RETURNed yet) ends the run with
// E_LIMIT. A manifest nests nodes a few levels deep, and a node that calls
// itself on purpose is bounded by its blocks' max_visits, which are rarely
// above this; past it the cause is a RETURN missing or a CALL: meant as a
// JUMP:. A frame costs about 300 bytes of state.json (more with a saved
// payload), and every CALL and RETURN journals the whole stack, so a
// step's cost grows with the depth: 100 frames are 30 KB of state.json;
// unbounded, a self-CALL reached 5,820 frames and 1.7 MB in 20 s.
const MaxCallDepth = 100

// Exit statuses of CONTRACT section 11.
const (
	ExitOK          = 0
	ExitExec        = 1
	ExitConfig      = 2
	ExitPathEscape  = 3
	ExitHalted      = 4
	ExitTimeout     = 124
	ExitInterrupted = 130
)

// Static (check-time) codes.
const (
	EParse         Code = "E_PARSE"
	ESchema        Code = "E_SCHEMA"
	EDupStep       Code = "E_DUP_STEP"
	EStrictFlow    Code = "E_STRICT_FLOW"
	EUnknownTarget Code = "E_UNKNOWN_TARGET"
	EUnknownWorker Code = "E_UNKNOWN_WORKER"
	EUnknownSchema Code = "E_UNKNOWN_SCHEMA"
	EUnknownProv   Code = "E_UNKNOWN_PROVIDER"
	EUnknownAgent  Code = "E_UNKNOWN_AGENT"
	EBadTarget     Code = "E_BAD_TARGET"
	ENestedPar     Code = "E_NESTED_PARALLEL"
	EBadAction     Code = "E_BAD_ACTION"
	ENoFallback    Code = "E_NO_FALLBACK"
	ENoExit        Code = "E_NO_EXIT"
	EVarMissing    Code = "E_VAR_MISSING"
	EEnvNotAllowed Code = "E_ENV_NOT_ALLOWED"
	EPathEscape    Code = "E_PATH_ESCAPE"
	ETemplateKey   Code = "E_TEMPLATE_KEY"
	ENoReply       Code = "E_NO_REPLY"
	WUnreachable   Code = "W_UNREACHABLE"
	WUnboundedLoop Code = "W_UNBOUNDED_LOOP"
	WDeadSignal    Code = "W_DEAD_SIGNAL"
	WCallNoReturn  Code = "W_CALL_NO_RETURN"
	WConfigMissing Code = "W_CONFIG_MISSING"
	EBytecode      Code = "E_BYTECODE"
	ESecretMissing Code = "E_SECRET_MISSING"
	EStateCorrupt  Code = "E_STATE_CORRUPT"
	EStateNotFound Code = "E_STATE_NOT_FOUND"
	ERunLocked     Code = "E_RUN_LOCKED"
	EUnknownSignal Code = "E_UNKNOWN_SIGNAL"
	EUsage         Code = "E_USAGE"
	EJSONParse     Code = "E_JSON_PARSE"
	ETooLarge      Code = "E_TOO_LARGE"
	ELinesCut      Code = "E_LINES_TRUNCATED"
	EWaitTimeout   Code = "E_WAIT_TIMEOUT"
	EDepMissing    Code = "E_DEP_MISSING"
	EReplayMiss    Code = "E_REPLAY_MISS"
	ENoTransition  Code = "E_NO_TRANSITION"
	EStepBudget    Code = "E_STEP_BUDGET"
	EStepFailed    Code = "E_STEP_FAILED"
	ETimeout       Code = "E_TIMEOUT"
	EValidation    Code = "E_VALIDATION"
	EExec          Code = "E_EXEC"
	EInterrupted   Code = "E_INTERRUPTED"
	EInternal      Code = "E_INTERNAL"
	ELimit         Code = "E_LIMIT"
	EStateIO       Code = "E_STATE_IO"
	EMergeConflict Code = "E_MERGE_CONFLICT"
	EUnmerged      Code = "E_UNMERGED"
	ESecretChange  Code = "E_SECRET_IN_CHANGE"
	ERunNotDone    Code = "E_RUN_NOT_DONE"
	EServeNoToken  Code = "E_SERVE_NO_TOKEN"
	ETemporalConn  Code = "E_TEMPORAL_CONNECT"
	EGitVersion    Code = "E_GIT_VERSION"
)

// CodeInfo is everything known about one code.
type CodeInfo struct {
	Code     Code
	Severity Severity
	// Exit is the process exit status when this code ends a run or a check.
	Exit int
	// Static codes are found by smithc check; the others only at run time.
	Static  bool
	Summary string
}

// codeTable is the one table of codes, in documentation order.
var codeTable = [...]CodeInfo{
	{EParse, SevError, ExitConfig, true, "the document cannot be read: bad YAML/JSON syntax, a malformed action or ${...} reference, or a document too large or too deeply aliased"},
	{ESchema, SevError, ExitConfig, true, "the document does not match the format's JSON Schema: an unknown key, a missing required key, or a value of the wrong type"},
	{EDupStep, SevError, ExitConfig, true, "two steps (loop bodies included) or two blocks share one name"},
	{EStrictFlow, SevError, ExitConfig, true, "with strict_flow, a step lacks on.success or on.failure (and has no on.always)"},
	{EUnknownTarget, SevError, ExitConfig, true, "a goto, JUMP, CALL, entry or entry_block names no step, block or node"},
	{EUnknownWorker, SevError, ExitConfig, true, "a block's worker is neither an Internal:* worker nor a key of workers"},
	{EUnknownSchema, SevError, ExitConfig, true, "a validationSchema names neither a built-in schema nor a key of schemas"},
	{EUnknownProv, SevError, ExitConfig, true, "a provider (or an agent's provider) is neither a built-in preset nor a key of providers"},
	{EUnknownAgent, SevError, ExitConfig, true, "an agent:, a send's to: or an AI worker's agent names no agent of agents"},
	{EBadTarget, SevError, ExitConfig, true, "_end (or end: true) inside a parallel iteration or branch: it would end the whole run from a thread"},
	{ENestedPar, SevError, ExitConfig, true, "a parallel step inside a parallel iteration or branch: threads do not start threads"},
	{EBadAction, SevError, ExitConfig, true, "a transition's action is not one of JUMP:, CALL:, RETURN, HALT_AND_FLAG, END, FAIL:"},
	{ENoFallback, SevError, ExitConfig, true, "a block's worker can emit a signal that neither a transition nor SIGNAL:FAIL_DEFAULT covers"},
	{ENoExit, SevError, ExitConfig, true, "a cycle from which no end, return, halt or failure exit is reachable"},
	{EVarMissing, SevError, ExitConfig, true, "a ${...} reference names an unknown step, context key or loop variable"},
	{EEnvNotAllowed, SevError, ExitConfig, true, "${env.NAME} for a NAME that is neither in env_allow nor in secrets"},
	{EPathEscape, SevError, ExitPathEscape, true, "a path is absolute, leaves WORKSPACE (through '..', into BASE or BASE/.orchestrator), or passes through a symlink inside WORKSPACE"},
	{ETemplateKey, SevError, ExitConfig, true, "a provider template uses a ${key} that neither provider_params nor defaults define, or a key of a provider's defaults or of provider_params is used by no template of that provider"},
	{ENoReply, SevError, ExitConfig, true, "a YAML step runs an internal worker that reads the previous step's reply (FileSystemWriter, DocumentationWriter, PreambleValidator, UpdateChangePlan), but no provider step comes right before it"},
	{WUnreachable, SevWarning, ExitOK, true, "a step or block cannot be reached from the entry"},
	{WUnboundedLoop, SevWarning, ExitOK, true, "a cycle passes through a provider step or AI worker and has no max_visits on it"},
	{WDeadSignal, SevWarning, ExitOK, true, "a transition is on a custom signal that the block's worker never emits (a typo such as SIGNAL:SUCCES, or on.signals on a YAML step that is no provider step)"},
	{WCallNoReturn, SevWarning, ExitOK, true, "a block CALLs its own node and no RETURN is reachable from the node's entry block: each such CALL leaves a frame that is never popped, until the run fails with E_LIMIT past MaxCallDepth (use JUMP:, or add the RETURN)"},
	{WConfigMissing, SevWarning, ExitOK, true, "an internal worker runs a config command (test_command, lint_command, build_command) that the workflow does not set: its step fails when it runs, with an ERROR segment"},
	{EBytecode, SevError, ExitConfig, false, "a .smbc file is not a valid program: bad magic, another isa version, or code that fails verification"},
	{ESecretMissing, SevError, ExitConfig, false, "a declared secret is not set in the environment at run start, or is empty or shorter than 4 characters"},
	{EStateCorrupt, SevError, ExitConfig, false, "a run's state.json (or journal) is corrupt or incomplete"},
	{EStateNotFound, SevError, ExitConfig, false, "no run with that id exists under BASE"},
	{ERunLocked, SevError, ExitConfig, false, "another smithvm process is driving that run"},
	{EUnknownSignal, SevError, ExitConfig, false, "resume --signal names a signal that the halted block's transitions do not name"},
	{EUsage, SevError, ExitConfig, false, "bad command-line flags or arguments"},
	{EJSONParse, SevError, ExitExec, false, "a step with output_capture: json printed something that is not JSON"},
	{ETooLarge, SevError, ExitExec, false, "a step with output_capture: json printed more than 8 MiB, or a file read into a provider step's prompt (prompt_file, input_file, depends_on content, instructions_file) would make the prompt larger than 10 MiB, or an ARTIFACT: layer's file or a mock script is larger than 10 MiB"},
	{ELinesCut, SevError, ExitExec, false, "${steps.S.lines} needs lines that were not kept: S printed more than the 1 MiB a lines capture splits (or, without output_capture: lines, more than the 8 KiB of output the state keeps)"},
	{EWaitTimeout, SevError, ExitTimeout, false, "wait_for saw fewer than min_count matching files before its timeout"},
	{EDepMissing, SevError, ExitExec, false, "a required depends_on glob matched no file"},
	{EReplayMiss, SevError, ExitExec, false, "--replay found no recording for a provider call with that prompt"},
	{ENoTransition, SevError, ExitExec, false, "a block emitted a signal that no transition and no SIGNAL:FAIL_DEFAULT covers"},
	{EStepBudget, SevError, ExitExec, false, "the run executed more steps than --max-steps allows"},
	{EStepFailed, SevError, ExitExec, false, "a step failed and nothing handled it, or an error:/FAIL: action ended the run"},
	{ETimeout, SevError, ExitTimeout, false, "the run failed because a step timed out"},
	{EValidation, SevError, ExitExec, false, "a reply failed its validation schema and nothing handled it"},
	{EExec, SevError, ExitExec, false, "a process could not be started"},
	{EInterrupted, SevError, ExitInterrupted, false, "smithvm received SIGINT or SIGTERM; state was saved and the run can be resumed"},
	{EMergeConflict, SevError, ExitExec, false, "merging a run's branch (smithvm merge, or a join of parallel worktrees) conflicts; the files are named and nothing was changed"},
	{EUnmerged, SevError, ExitConfig, false, "smithvm clean would delete a branch with commits that are not merged (or a worktree with uncommitted changes); merge first or pass --force"},
	{ESecretChange, SevError, ExitExec, false, "a step's changes in the run's worktree contain a secret's value; the file and line are named, the value is not, and nothing was committed"},
	{ERunNotDone, SevError, ExitConfig, false, "smithvm merge of a run that is not completed (halted, failed, running); wait for it, resume it, or pass --force"},
	{EServeNoToken, SevError, ExitConfig, false, "smithvm serve was asked to listen on an address other than loopback without a token"},
	{EGitVersion, SevError, ExitConfig, false, "the git on PATH is older than 2.31, which ignores the settings Smith passes to keep a repository's hooks and drivers from running: an isolated run, its resume, smithvm diff, merge and clean refuse to run git with it"},
	{ETemporalConn, SevError, ExitConfig, false, "smith-temporal cannot use the Temporal server it was given: nothing answers at --address, the server has no such --namespace, or TLS or the API key is refused"},
	{ELimit, SevError, ExitExec, false, "a value entering the run (a json capture, set_context, loop items) nests deeper than MaxDepth levels, a CALL would put more than MaxCallDepth frames on the return stack, or a state would be too deep to read back"},
	{EStateIO, SevError, ExitExec, false, "the machine refused to write (or open) a run's state (state.json, journal, iteration records, the run's folder): a full disk, a read-only file system, permissions, a limit on file size or open files, or the run's folder deleted under it; the run stops where it was last saved and smithvm resume continues it once the cause is fixed"},
	{EInternal, SevError, ExitExec, false, "an internal error in Smith (a bug): please report it"},
}

// Codes returns every code's table row, in documentation order.
func Codes() []CodeInfo { return codeTable[:] }

// Info returns the table row of c, and false for a code not in the table.
func (c Code) Info() (CodeInfo, bool) {
	for _, ci := range codeTable {
		if ci.Code == c {
			return ci, true
		}
	}
	return CodeInfo{}, false
}

// Severity is the code's severity (SevError for unknown codes).
func (c Code) Severity() Severity {
	if ci, ok := c.Info(); ok {
		return ci.Severity
	}
	return SevError
}

// ExitStatus is the exit status the code calls for (1 for unknown codes).
func (c Code) ExitStatus() int {
	if ci, ok := c.Info(); ok {
		return ci.Exit
	}
	return ExitExec
}

// A Coded error carries a code from the table.
type Coded interface {
	error
	ErrCode() Code
}
