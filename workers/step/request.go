// Package step holds the values every worker shares for one execution of a
// step: the Request the VM hands over (templates substituted, paths not yet
// confined), the Result a worker gives back, the Runner between them, and
// their facts (segment types, the exit codes of a step that ran no
// process). It is data only: it must never do I/O or run a step.
package step

import (
	"context"
	"io"
	"time"

	"smith/isa"
	"smith/lang"
	"smith/workers/confine"
	"smith/workers/text"
)

// A Request is one execution of a step or block, with every ${...}
// template already substituted by the VM. Paths are still as the user or
// model wrote them: the workers confine them (confine.Dir).
type Request struct {
	RunID string
	Step  string // the step or block id (logs/<Step>-stderr.log, artifacts/<Step>/)
	// Thread is the iteration index or branch name of a step run in a
	// thread of a parallel step ("" otherwise): the mock, --record and
	// --replay count its calls apart (CONTRACT 12.3).
	Thread string
	// Iteration names the loop iteration (its index) or parallel branch
	// the step runs in ("" outside both): the header of each try in
	// logs/<Step>-stderr.log says it.
	Iteration string
	// Attempt is the number of the try under way: the workers set it while
	// the step runs (retry); the VM leaves it zero.
	Attempt int
	// Execution numbers the executions of a provider step in its run, from
	// 1, taken from the run's durable state: an execution repeated after a
	// crash gets the same number, so the mock and --replay answer it as
	// before. 0 means unnumbered.
	Execution int
	Node      string        // the node id (manifests)
	Kind      isa.BlockKind // an Exec kind of isa's kind table

	Argv      []string // isa.KindCommand
	Providers []string // isa.KindProvider: provider names, tried in order on retryable failure
	Worker    string   // isa.KindInternal: Internal:NAME; manifests: the workers key

	Prompt          string          // the prompt text (prompt:), when given inline
	PromptFile      string          // prompt_file: a path relative to WORKSPACE
	ProviderParams  []ProviderParam // step provider_params over provider defaults
	CommandOverride []string        // replaces the provider template entirely
	Transport       *Transport      // prompt_transport override
	ProviderDefs    []ProviderDef
	// Model is the model to ask for (step, agent or defaults model:, or
	// provider_params.model); "" = the CLI's default. Presets pass it with
	// the CLI's own model flag.
	Model string
	// Permissions is what an agent may do in its cwd: "read", "edit" or
	// "full" ("" = edit). Presets map it to the CLI's approval/sandbox flags.
	Permissions string

	InputFile       string // piped to stdin (relative to WORKSPACE); "" = /dev/null
	OutputFile      string // relative to WORKSPACE/artifacts/<Step>/
	OutputCapture   string // text|lines|json ("" = text)
	AllowParseError bool

	Timeout  time.Duration // 0 = 300 s
	Attempts int           // all tries (0 or 1 = one)
	Backoff  time.Duration // between tries

	EnvAllow []string // names children inherit (and ${env.X} may read)
	Secrets  []EnvVar // this step's secrets with their values
	Env      []EnvVar // the step's env:, substituted

	WaitFor   *WaitFor
	DependsOn *DependsOn
	Send      *Send // isa.KindSend
	// Mail is where the run's messages are; nil when the run has no agents.
	Mail *Mail

	// The step's agent (CONTRACT 12.1): its instructions, or the content of
	// its instructions file (relative to WORKSPACE), are prepended to the
	// prompt, followed by an empty line.
	AgentInstructions     string
	AgentInstructionsFile string
	// Agent is the step's agent ("" = none); Continue is set when the
	// agent continues its conversation (session: continue, CONTRACT 12.1),
	// and Session is that conversation so far (nil: none yet). The worker
	// continues it when the provider that answers is Session.Provider,
	// and starts a new one otherwise.
	Agent    string
	Continue bool
	Session  *Session
	// Feedback is appended to the prompt after an empty line: what failed
	// validation the last time this step ran (the YAML fix loop, CONTRACT 9).
	Feedback string

	// WaitMatched are the files (absolute) that satisfied WaitFor: the
	// workers set it while the step runs; the VM leaves it empty.
	WaitMatched []string

	// Manifest AI, command and internal workers.
	Payload []Segment // the execution payload as the block sees it
	// PayloadStdin gives a command the payload on stdin, as a JSON array of
	// segments (manifest command workers, CONTRACT 12.5).
	PayloadStdin bool
	// KeepReply saves the whole (masked) reply of a provider step as
	// RUN_ROOT/replies/<Step>.txt; ReplyFrom makes a YAML writer read the
	// reply of that step as its CODE_OUTPUT or DOCUMENTATION_OUTPUT.
	KeepReply    bool
	ReplyFrom    string
	Prompted     string // the assembled prompt for AI workers (the VM assembles layers)
	Instructions string
	OutputType   string
	Config       lang.Config
	WorktreePath string // "" = WORKSPACE

	Dirs    confine.Dir
	RunRoot string
	Mask    *text.Masker
	Live    io.Writer // -v: live step output (masked); nil = none
	// OnRetry is called before each retry (attempt is the try that failed,
	// counting from 1) so the caller can log it.
	OnRetry func(attempt, exitCode int, wait time.Duration)
	// AttemptID returns a fresh attempt id for each try (events.jsonl).
	AttemptID func(attempt int) string
	// OnFallback is called when provider from failed retryably (after its
	// own retries) and the next one, to, is tried, so the caller can log it.
	OnFallback func(from, to, reason string)
}

// A WaitFor blocks until MinCount files match Glob (relative to WORKSPACE).
type WaitFor struct {
	Glob     string
	Timeout  time.Duration
	Poll     time.Duration
	MinCount int
	// Processed is the agent's processed folder (relative to WORKSPACE)
	// when the step consumes what it waited for; "" = consume nothing.
	Processed string
}

// A Send delivers Content (or the content of File, relative to WORKSPACE)
// into Inbox (relative to the Mail's workspace) under the name
// MessageName(Seq, Mail.Tag, Thread, Sub, Name) (CONTRACT 12.2).
type Send struct {
	To      string
	Inbox   string
	File    string
	Content string
	Name    string
	Seq     int
	// Thread and Sub number a send in a thread of a parallel step: the
	// thread's key and the count of its sends (from 1). Seq is then the
	// parallel step's one number, the same for all its threads, so names
	// do not depend on which thread finishes first.
	Thread string
	Sub    int
	// Again is set when the send runs again after a crash cut it off: the
	// message replaces its earlier copy, and is not delivered again when
	// it was consumed already.
	Again bool
}

// A Move is one consumed message: From (in an inbox) moves to To (in the
// agent's processed folder), both relative to the run's Mail workspace.
// A Move with no To gives the claim back: the message stays.
type Move struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Claim is the message's claim file (step.ClaimPath), removed after
	// the move; "" when the message was not claimed.
	Claim string `json:"claim,omitempty"`
}

// A DependsOn lists globs a step needs; Inject is "", "list" or "content".
type DependsOn struct {
	Required    []string
	Optional    []string
	Inject      string
	Instruction string
	Position    string // prepend|append
}

// A Segment is one element of the execution payload.
type Segment struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Content   string `json:"content"`
	Timestamp string `json:"timestamp"`
}

// A Result is what one execution produced. A failure is data: Signal says
// what happened; Err carries the code of a failure the user should see.
type Result struct {
	Signal   string // SIGNAL:SUCCESS, SIGNAL:FAILURE, SIGNAL:TIMEOUT, or a custom signal
	ExitCode int
	// Output is stdout (masked) with trailing newlines removed: the whole
	// stream when it fit in memory, else the in-memory part.
	Output string
	Lines  []string // output_capture: lines
	// LinesTruncated: stdout passed the 1 MiB a lines capture splits, and
	// Lines holds only the complete lines of its first 1 MiB.
	LinesTruncated bool
	JSON           any // output_capture: json (nil when absent or unparsable)
	HasJSON        bool
	Truncated      bool
	SpillStdout    string // absolute path of the spill file, "" if none
	OutputFile     string // absolute path of this run's copy of output_file (RUN_ROOT/outputs/<Step>/...), "" if none
	StderrLog      string
	Stderr         string // stderr (masked) with trailing newlines removed, at most its in-memory part
	Duration       time.Duration
	Attempts       int
	Provider       string  // the provider that answered
	Tokens         int     // token usage reported by the provider
	Cost           float64 // the call's cost in US dollars where the provider's CLI reports it (claude), else 0
	LinesWritten   int     // lines written by FileSystemWriter/DocumentationWriter
	Segments       []Segment
	// Session is the agent's conversation after this call when the step's
	// agent continues its sessions (Request.Continue); nil otherwise, or
	// when no provider answered with a session.
	Session *Session
	// KeyVars are variables holding a key that the call passed beyond the
	// workflow's secrets and the presets' key variables (the key variable
	// of the model provider a user's codex configuration chose, its
	// env_key): the step's commit is refused if it holds their values, as
	// it is for theirs.
	KeyVars []string
	// Consumed are the messages a wait_for with consume: true matched; the
	// caller moves them (ConsumeMessages) once the step's completion is
	// durable.
	Consumed []Move
	Err      error // a source.Coded error (E_JSON_PARSE, E_DEP_MISSING, E_WAIT_TIMEOUT, E_PATH_ESCAPE, E_EXEC, ...)
}

// A Runner executes requests. *workers.Registry implements it; tests use
// fakes.
type Runner interface {
	Run(ctx context.Context, req *Request) Result
}

// Exit codes of a step that ran no process to its end.
const (
	// ExitNotRun is the exit code of a step that failed before any process ran
	// (a path violation, a missing dependency, an unknown template key).
	ExitNotRun = -1
	// ExitNotFound is the exit code of a command that could not be started.
	ExitNotFound = 127
)

// Segment types the internal workers read and write.
const (
	SegCodeOutput      = "CODE_OUTPUT"
	SegDocOutput       = "DOCUMENTATION_OUTPUT"
	SegTestResult      = "TEST_RESULT"
	SegLintResult      = "LINT_RESULT"
	SegBuildResult     = "BUILD_RESULT"
	SegError           = "ERROR"
	SegValidationError = "VALIDATION_ERROR"
	SegNewFiles        = "NEW_FILES_IDENTIFIED"
	SegConflict        = "CONFLICT"
)

// Failed returns a failure result with exit code exit and err.
func Failed(exit int, err error) Result {
	return Result{Signal: lang.SigFailure, ExitCode: exit, Err: err}
}

// CallKey names the calls of one step for the mock, --record and
// --replay: the step, and in a thread of a parallel step its iteration
// index or branch name ("Work[2]"), so that each thread consumes its own
// replies whatever the order the threads run in.
func (req *Request) CallKey() string {
	if req.Thread != "" {
		return req.Step + "[" + req.Thread + "]"
	}
	return req.Step
}

// A Commit is what the VM asks its host to commit after a step changed
// files in a worktree (CONTRACT 12.4).
type Commit struct {
	Worktree string `json:"worktree"` // the worktree, absolute
	// Branch is the branch the worktree's HEAD must be on (the run's or
	// the thread's): the commit is refused on any other.
	Branch string `json:"branch,omitempty"`
	Msg    string `json:"msg"` // the commit message
	// Head is the commit the branch was at when the step started (the
	// last saved one; "" when unknown): what the step committed by itself
	// is taken back into the index, so the scan sees the step's whole
	// change and the branch gets one commit of Smith's for it.
	Head string `json:"head,omitempty"`
	// Exclude are paths relative to the worktree kept out of the commit:
	// the agents' inboxes, processed and sending folders, and artifacts/
	// unless the workflow commits them.
	Exclude []string `json:"exclude,omitempty"`
	// Secrets are the names (never the values) of the variables whose
	// values must not be committed: the document's secrets and the
	// presets' key variables. The host looks the values up in its own
	// environment, so a value never travels with the request.
	Secrets []string `json:"secrets,omitempty"`
}
