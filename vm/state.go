package vm

import (
	"maps"
	"strconv"

	"smith/lang"
	"smith/workers/step"
)

// Run statuses (State.Status).
const (
	StatusRunning     = "running"
	StatusCompleted   = "completed"
	StatusFailed      = "failed"
	StatusHalted      = "halted"
	StatusInterrupted = "interrupted"
)

// Step statuses (StepResult.Status).
const (
	StepCompleted = "completed"
	StepFailed    = "failed"
	StepSkipped   = "skipped"
	StepRunning   = "running"
)

// Phases (State.Phase): where re-entry into State.CurrentStep happens.
const (
	// PhaseStart re-enters at the block's first instruction: the block
	// runs (again).
	PhaseStart = "start"
	// PhaseDispatch re-enters at the block's DISPATCH with State.Signal:
	// the block is not run again.
	PhaseDispatch = "dispatch"
	// PhaseBody re-enters a loop block at the first instruction of its
	// body, for the iteration that the top loop frame names.
	PhaseBody = "body"
	// PhaseParallel re-enters a parallel for_each or parallel step whose
	// threads (State.Threads) were running: finished threads are kept,
	// the others run (again), then the join.
	PhaseParallel = "parallel"
)

// Thread statuses (Thread.Status) besides StatusRunning.
const (
	ThreadCompleted = "completed"
	ThreadFailed    = "failed"
	// ThreadBroken: an iteration that took _loop_break.
	ThreadBroken = "broken"
)

// Signals the machine itself produces or looks up.
const (
	SigSuccess     = lang.SigSuccess
	SigFailure     = lang.SigFailure
	SigTimeout     = lang.SigTimeout
	SigSkipped     = lang.SigSkipped
	SigMaxVisits   = lang.SigMaxVisits
	SigFailDefault = lang.SigFailDefault
)

// MaxInlineIterations is how many iteration records of a loop State keeps
// inline (the last ones); StepResult.IterationsTotal counts them all.
const MaxInlineIterations = 100

// outputExcerpt is how much of a step's output State keeps (CONTRACT 3.5).
const outputExcerpt = 8192

// A State is everything a run needs to continue: plain data with JSON tags
// (state.json, CONTRACT 6). It holds no pc: re-entry is by the name in
// CurrentStep and the Phase, so a recompiled program can be resumed.
type State struct {
	RunID        string `json:"run_id"`
	WorkflowName string `json:"workflow_name"`
	WorkflowPath string `json:"workflow_path"`
	ProgramHash  string `json:"program_hash"`
	// Status is running, completed, failed, halted or interrupted.
	Status    string `json:"status"`
	StartedAt string `json:"started_at"`
	EndedAt   string `json:"ended_at,omitempty"`
	// RunStep is the one step of a run made by smithvm run-step (Config.Only);
	// resuming such a run runs only that step too.
	RunStep string `json:"run_step,omitempty"`
	// CurrentStep is the step or block id where the run re-enters, as
	// Phase says.
	CurrentStep string `json:"current_step"`
	// Phase is start, dispatch or body (see the Phase constants).
	Phase       string `json:"phase"`
	IsHalted    bool   `json:"isHalted"`
	HaltedBlock string `json:"halted_block,omitempty"`
	// Signal is the signal register: the last signal produced.
	Signal  string                 `json:"signal,omitempty"`
	Context map[string]any         `json:"context"`
	Stats   Stats                  `json:"stats"`
	Payload []step.Segment         `json:"payload"`
	Steps   map[string]*StepResult `json:"steps"`
	// ReturnStack holds one frame per CALL not yet returned, outermost first.
	ReturnStack []ReturnFrame `json:"return_stack"`
	// LoopStack holds one frame per loop being run, outermost first.
	LoopStack []LoopFrame    `json:"loop_stack"`
	Visits    map[string]int `json:"visits"`
	// Workspace is the run's WORKSPACE (absolute; --workspace), which
	// resume uses.
	Workspace string `json:"workspace,omitempty"`
	// WorktreePath is the run's git worktree (config.isolation
	// git-worktree, CONTRACT 8), absolute; "" means WORKSPACE.
	WorktreePath string `json:"worktree_path,omitempty"`
	// Base is the run's starting commit (refs/smith-base/<run_id>), which
	// resume recreates the ref from when it is missing.
	Base string `json:"base,omitempty"`
	// Head is the commit the run's branch was at when this state was
	// saved: after the last saved step's commit or join. Resume of a run
	// cut off puts the branch and the worktree back to it (CONTRACT 12.4).
	Head string `json:"head,omitempty"`
	// ChangePlan is the run's change plan as Internal:UpdateChangePlan last
	// saved it (sorted paths relative to the worktree).
	ChangePlan []string `json:"change_plan,omitempty"`
	// ConflictNotices counts the conflict notices of other runs this run
	// has taken (RUN_ROOT/conflicts.jsonl, CONTRACT 12.4).
	ConflictNotices int `json:"conflict_notices,omitempty"`
	// Threads are the sub-states of the threads of the parallel step being
	// run (CurrentStep, phase parallel), keyed by iteration index ("3") or
	// branch name; nil otherwise.
	Threads map[string]*Thread `json:"threads,omitempty"`
	// Sessions are the agents' sessions (session: continue, CONTRACT
	// 12.1), keyed by step.SessionKey: the agent's name, or in a thread of
	// a parallel step the agent's name and the thread's key.
	Sessions map[string]step.Session `json:"sessions,omitempty"`
	// Seq is the Seq of the last Delta applied.
	Seq int `json:"seq"`
	// EventSeq is the Seq of the last event emitted (or reserved).
	EventSeq int `json:"event_seq"`
}

// A Thread is the durable sub-state of one thread of a parallel step: one
// iteration of a parallel for_each or one branch of a parallel step. It
// holds only what the thread itself changed; at the join the main thread
// merges it in index (or name) order.
type Thread struct {
	// Status is running, completed, failed or broken.
	Status      string `json:"status"`
	CurrentStep string `json:"current_step"`
	Phase       string `json:"phase"`
	Signal      string `json:"signal,omitempty"`
	// LoopStack is the thread's whole loop stack (the enclosing loops'
	// frames, then, for an iteration, its own frame at its index).
	LoopStack []LoopFrame `json:"loop_stack"`
	// Steps are the results of the steps the thread ran.
	Steps map[string]*StepResult `json:"steps"`
	// Context is the thread's context when it changed it (set_context).
	Context map[string]any `json:"context,omitempty"`
	// Payload holds the segments the thread appended.
	Payload []step.Segment `json:"payload,omitempty"`
	// Visits are the visit counts of the blocks the thread visited.
	Visits map[string]int `json:"visits,omitempty"`
	// Record is an iteration's record, set when it ends.
	Record *Iteration `json:"record,omitempty"`
	// Error says why a thread failed.
	Error *StepError `json:"error,omitempty"`
	// WorktreePath is the thread's own git worktree (isolation:
	// git-worktree: branch smith-unit/<run_id>/<Step>/<key>), or the run's.
	WorktreePath string `json:"worktree_path,omitempty"`
	// Head is the commit of the thread's branch when its state was last
	// saved, as State.Head is the run's.
	Head string `json:"head,omitempty"`
}

// Stats are run-wide counters.
type Stats struct {
	TotalTokensUsed   int `json:"totalTokensUsed"`
	TotalLinesWritten int `json:"totalLinesWritten"`
}

// A StepResult is the outcome of the last run of one step or block.
type StepResult struct {
	// Status is completed, failed, skipped or running.
	Status   string   `json:"status"`
	ExitCode int      `json:"exit_code"`
	Output   string   `json:"output"`
	Lines    []string `json:"lines"`
	JSON     any      `json:"json"`
	// Duration is in seconds.
	Duration        float64 `json:"duration"`
	Attempts        int     `json:"attempts"`
	Truncated       bool    `json:"truncated"`
	SpillStdoutPath string  `json:"spill_stdout_path,omitempty"`
	// LinesTruncated: the step printed more than the 1 MiB a lines capture
	// splits, and its lines are only the complete lines of that 1 MiB;
	// ${steps.S.lines} then fails (E_LINES_TRUNCATED) rather than give a
	// partial list, except for an index inside the kept lines.
	LinesTruncated bool `json:"lines_truncated,omitempty"`
	// OutputFile is this run's copy of the step's output_file, under
	// RUN_ROOT/outputs/<Step>/ (absolute): it stays this run's when
	// another run overwrites WORKSPACE/artifacts/<Step>/.
	OutputFile string     `json:"output_file,omitempty"`
	Error      *StepError `json:"error,omitempty"`
	// Signal is the signal the step produced (manifests).
	Signal string `json:"signal,omitempty"`
	Visits int    `json:"visits,omitempty"`
	// Executions counts the runs of an AI worker block in this run, the
	// current one included (the METADATA layer's attempt); 0 for other
	// blocks.
	Executions int `json:"executions,omitempty"`
	// Iterations are the last MaxInlineIterations records of a loop.
	Iterations      []Iteration `json:"iterations,omitempty"`
	IterationsTotal int         `json:"iterations_total,omitempty"`
	Provider        string      `json:"provider,omitempty"`
	// Message is the message number of a send step (its NNNN), kept when a
	// crash cuts the step off so that delivering again replaces the file.
	Message int `json:"message,omitempty"`
	// MessageSub numbers a send in a thread of a parallel step: the
	// thread's J-th send, Message being the parallel step's number.
	MessageSub int `json:"message_sub,omitempty"`
	// Consumed are the messages a wait_for with consume: true took: moved to
	// the agent's processed folder once this result is on disk (resume
	// finishes the moves a crash cut short).
	Consumed []step.Move `json:"consumed,omitempty"`
	// Feedback is what a running YAML provider step's prompt got appended
	// (its previous validation failure), kept so a step cut off by a crash
	// runs again with the same prompt.
	Feedback string `json:"feedback,omitempty"`
	// Commit is the commit on the run's branch holding what the step
	// changed in its worktree (isolation: git-worktree, CONTRACT 12.4).
	Commit string `json:"commit,omitempty"`
	// CapturePath is the file (absolute) that holds the whole lines or json
	// capture when Lines and JSON hold only an excerpt (no json at all),
	// and stderr's first 1 MiB when Stderr holds only an excerpt.
	CapturePath string `json:"capture_path,omitempty"`
	// Stderr is the step's stderr (masked, trailing newlines removed), cut
	// like Output; ${steps.S.stderr} gives its first 1 MiB, from
	// CapturePath when it is longer (CONTRACT 12.5).
	Stderr string `json:"stderr,omitempty"`
	// StartedAt and EndedAt are when the step's run started and ended
	// (ISO-8601 UTC, CONTRACT 12.5).
	StartedAt string `json:"started_at,omitempty"`
	EndedAt   string `json:"ended_at,omitempty"`
	// Tokens is the model tokens the step's last execution used (provider
	// steps and AI workers), shown by smithvm status.
	Tokens int `json:"tokens,omitempty"`
	// JoinKept are the threads (keys) of a parallel step whose join
	// conflicted (E_MERGE_CONFLICT): their branches are kept, and resume
	// retries the join from them instead of running the threads again
	// (CONTRACT 12.4).
	JoinKept []string `json:"join_kept,omitempty"`
}

// A StepError is the code and message of a failed step.
type StepError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// An Iteration is the record of one iteration of a loop: exit_code, output
// and duration are those of the last step run in it.
type Iteration struct {
	Index    int                    `json:"index"`
	Item     any                    `json:"item"`
	Status   string                 `json:"status"`
	ExitCode int                    `json:"exit_code"`
	Duration float64                `json:"duration"`
	Output   string                 `json:"output"`
	Steps    map[string]*StepResult `json:"steps"`
}

// A ReturnFrame is one CALL not yet returned.
type ReturnFrame struct {
	// ReturnBlock is the block RETURN re-enters (at its start).
	ReturnBlock string `json:"return_block"`
	// Node is the called node.
	Node string `json:"node"`
	// CallBlock is the block whose transition made the call (tracebacks).
	CallBlock string `json:"call_block,omitempty"`
	// ReturnPhase is "" (re-enter ReturnBlock at its start) or dispatch.
	ReturnPhase string `json:"return_phase,omitempty"`
	// Saved says the caller's payload was saved (the callee does not
	// inherit context); SavedPayload is restored by RETURN.
	Saved        bool           `json:"saved,omitempty"`
	SavedPayload []step.Segment `json:"saved_payload,omitempty"`
}

// IterationRef is the iteration the run is in: the indices of its loop
// stack, outermost first, joined by '.' ("1", "0.2"); "" outside loops.
// It is the form the console and the step logs name iterations in
// (`'Gate' [1]`, `--- attempt 1, iteration 1 ---`).
func (s *State) IterationRef() string { return string(s.AppendIterationRef(nil)) }

// AppendIterationRef appends IterationRef to b.
func (s *State) AppendIterationRef(b []byte) []byte {
	for i, f := range s.LoopStack {
		if i > 0 {
			b = append(b, '.')
		}
		b = strconv.AppendInt(b, int64(f.Index), 10)
	}
	return b
}

// A LoopFrame is one loop being run.
type LoopFrame struct {
	Loop  string `json:"loop"`
	Index int    `json:"index"`
	Total int    `json:"total"`
	// Items is the evaluated item list; a Delta carries it only when it
	// pushes the frame.
	Items []any `json:"items,omitempty"`
	// Last is the last step run in the current iteration ("" when none).
	Last string `json:"last,omitempty"`
	// Elapsed is the seconds spent in the loop's steps so far.
	Elapsed float64 `json:"elapsed"`
	// Started is when LOOP_BEGIN pushed the frame (RFC 3339, nanoseconds):
	// the loop's duration is its wall time, like any step's.
	Started string `json:"started,omitempty"`
}

// A Delta is what one state change did: the machine passes one to
// Config.Checkpoint after every change that must survive a crash. It is
// small and its size does not grow with the run: State.Apply rebuilds the
// State from a snapshot and the deltas that follow it.
type Delta struct {
	Seq int `json:"seq"`
	// Registers, copied whole.
	CurrentStep string `json:"current_step"`
	Phase       string `json:"phase"`
	Signal      string `json:"signal,omitempty"`
	Status      string `json:"status"`
	IsHalted    bool   `json:"isHalted,omitempty"`
	HaltedBlock string `json:"halted_block,omitempty"`
	EndedAt     string `json:"ended_at,omitempty"`
	EventSeq    int    `json:"event_seq"`
	// WorktreePath, Head and ConflictNotices are copied whole, like the
	// registers.
	WorktreePath    string `json:"worktree_path,omitempty"`
	Head            string `json:"head,omitempty"`
	ConflictNotices int    `json:"conflict_notices,omitempty"`
	// LoopStack is the whole loop stack, without items except for a frame
	// this delta pushed.
	LoopStack []LoopFrame `json:"loop_stack"`
	// ReturnStack is the whole return stack when SetReturn.
	SetReturn   bool          `json:"set_return,omitempty"`
	ReturnStack []ReturnFrame `json:"return_stack,omitempty"`
	// Reset lists step results removed before Steps is applied (a loop
	// body at the start of an iteration).
	Reset []string `json:"reset,omitempty"`
	// Steps are the step results that changed.
	Steps []StepChange `json:"steps,omitempty"`
	// Iteration is the iteration record this change closed.
	Iteration *IterationChange `json:"iteration,omitempty"`
	// Context is the whole context when it changed.
	Context map[string]any `json:"context,omitempty"`
	// Payload holds the appended segments, or the whole payload when
	// ReplacePayload (CALL, RETURN).
	Payload        []step.Segment `json:"payload,omitempty"`
	ReplacePayload bool           `json:"replace_payload,omitempty"`
	// ChangePlan is the whole change plan when SetChangePlan.
	SetChangePlan bool     `json:"set_change_plan,omitempty"`
	ChangePlan    []string `json:"change_plan,omitempty"`
	// Stats holds increments.
	Stats Stats `json:"stats"`
	// Visit is the new visit count of the visited block.
	Visit *VisitChange `json:"visit,omitempty"`
	// Start is set on the first delta of a fresh run: it carries the run's
	// identity (the rest of State is empty then or in the registers).
	Start *RunStart `json:"start,omitempty"`

	// Thread, when set, says this change is one thread's (a parallel
	// step's iteration index or branch name): it applies to
	// State.Threads[Thread], its registers are the thread's, and only
	// EventSeq and Stats reach the run's own fields.
	Thread string `json:"thread,omitempty"`
	// ThreadRecord and ThreadError: what a thread's last change closes
	// (an iteration's record; why the thread failed).
	ThreadRecord *Iteration `json:"thread_record,omitempty"`
	ThreadError  *StepError `json:"thread_error,omitempty"`
	// Join: the iteration records a parallel for_each's join closes, in
	// index order; the visit counts it sets; and DropThreads removes the
	// threads' sub-states.
	Iterations  []IterationChange `json:"iterations,omitempty"`
	Visits      map[string]int    `json:"visits,omitempty"`
	DropThreads bool              `json:"drop_threads,omitempty"`
	// Sessions are the agents' sessions that changed (State.Sessions), a
	// thread's too: their keys name the thread.
	Sessions map[string]step.Session `json:"sessions,omitempty"`

	// Deferred (never saved) says the change may become durable with the
	// next one instead of on its own: a step's running record, written
	// just before the step's process starts. Config.Checkpoint may append
	// it without a sync; the sync of the step's result makes both durable
	// before the next step starts. A crash of smithvm loses nothing (the
	// append is in the page cache); a crash of the machine may lose the
	// running record only, and the resume then starts the step from the
	// state before it, as it would have repeated it anyway.
	Deferred bool `json:"-"`
	// SyncWithNext (never saved) says the change, a step's result, may be
	// made durable by the sync of the next change instead of its own:
	// nothing outside the run's state follows it before the next change
	// (no message moves, no capture file removed, not a thread's).
	// Config.Checkpoint may append it without a sync if it syncs it with
	// the next change, whatever that is, before that one returns: the next
	// step's running record (one fdatasync for both, before the next
	// step's process starts) or the run's end (its snapshot). A crash of
	// smithvm loses nothing (the append is in the page cache); a crash of
	// the machine before the next change may lose the result, and the
	// resume runs the step again, as if it had been cut off.
	SyncWithNext bool `json:"-"`
}

// reset empties d for the next change and keeps the arrays of Steps,
// Reset and LoopStack. It writes only the fields a change set: assigning
// the whole struct (it has some twenty pointer words) runs the garbage
// collector's write barrier over every one of them at every block while
// a collection is marking. TestDeltaReset fills every field and checks
// that reset clears it, so a new field cannot be forgotten here.
func (d *Delta) reset() {
	clear(d.Steps)
	steps, reset, loops := d.Steps[:0], d.Reset[:0], d.LoopStack[:0]
	d.Seq, d.IsHalted, d.EventSeq, d.ConflictNotices = 0, false, 0, 0
	d.SetReturn, d.ReplacePayload, d.SetChangePlan, d.DropThreads, d.Deferred, d.SyncWithNext = false, false, false, false, false, false
	d.Stats = Stats{}
	for _, s := range []*string{&d.CurrentStep, &d.Phase, &d.Signal, &d.Status, &d.HaltedBlock, &d.EndedAt, &d.WorktreePath, &d.Head, &d.Thread} {
		if *s != "" {
			*s = ""
		}
	}
	if d.ReturnStack != nil {
		d.ReturnStack = nil
	}
	if d.Iteration != nil {
		d.Iteration = nil
	}
	if d.Context != nil {
		d.Context = nil
	}
	if d.Payload != nil {
		d.Payload = nil
	}
	if d.ChangePlan != nil {
		d.ChangePlan = nil
	}
	if d.Visit != nil {
		d.Visit = nil
	}
	if d.Start != nil {
		d.Start = nil
	}
	if d.ThreadRecord != nil {
		d.ThreadRecord = nil
	}
	if d.ThreadError != nil {
		d.ThreadError = nil
	}
	if d.Iterations != nil {
		d.Iterations = nil
	}
	if d.Visits != nil {
		d.Visits = nil
	}
	if d.Sessions != nil {
		d.Sessions = nil
	}
	d.Steps, d.Reset, d.LoopStack = steps, reset, loops
}

// A RunStart is the identity of a run, set once.
type RunStart struct {
	RunID        string         `json:"run_id"`
	WorkflowName string         `json:"workflow_name"`
	WorkflowPath string         `json:"workflow_path"`
	ProgramHash  string         `json:"program_hash"`
	StartedAt    string         `json:"started_at"`
	Context      map[string]any `json:"context"`
	RunStep      string         `json:"run_step,omitempty"`
	Workspace    string         `json:"workspace,omitempty"`
	// Base is the run's starting commit (isolation: git-worktree).
	Base string `json:"base,omitempty"`
}

// A StepChange is one step result as it is now. A loop's result in a delta
// has no Iterations: they arrive one by one in Delta.Iteration and are kept.
type StepChange struct {
	Name   string     `json:"name"`
	Result StepResult `json:"result"`
}

// An IterationChange is one closed iteration record of a loop.
type IterationChange struct {
	Loop   string    `json:"loop"`
	Record Iteration `json:"record"`
}

// A VisitChange is the visit count of one block.
type VisitChange struct {
	Block string `json:"block"`
	Count int    `json:"count"`
}

// Apply applies d to s. It is idempotent: a delta whose Seq is not past
// s.Seq is skipped, so a journal may be replayed over a newer snapshot.
func (s *State) Apply(d *Delta) {
	if d.Seq <= s.Seq {
		return
	}
	s.Seq = d.Seq
	s.applySessions(d.Sessions)
	if d.Thread != "" {
		s.EventSeq = max(s.EventSeq, d.EventSeq)
		s.Stats.TotalTokensUsed += d.Stats.TotalTokensUsed
		s.Stats.TotalLinesWritten += d.Stats.TotalLinesWritten
		if s.Threads == nil {
			s.Threads = map[string]*Thread{}
		}
		t := s.Threads[d.Thread]
		if t == nil {
			t = &Thread{}
			s.Threads[d.Thread] = t
		}
		t.apply(d)
		return
	}
	if st := d.Start; st != nil {
		s.RunID, s.WorkflowName, s.WorkflowPath = st.RunID, st.WorkflowName, st.WorkflowPath
		s.ProgramHash, s.StartedAt, s.Context = st.ProgramHash, st.StartedAt, st.Context
		s.RunStep, s.Workspace, s.Base = st.RunStep, st.Workspace, st.Base
		s.init()
	}
	s.CurrentStep, s.Phase, s.Signal, s.Status = d.CurrentStep, d.Phase, d.Signal, d.Status
	s.IsHalted, s.HaltedBlock, s.EndedAt = d.IsHalted, d.HaltedBlock, d.EndedAt
	s.EventSeq = d.EventSeq
	s.WorktreePath, s.Head = d.WorktreePath, d.Head
	s.ConflictNotices = d.ConflictNotices
	if d.SetChangePlan {
		s.ChangePlan = append([]string{}, d.ChangePlan...)
	}
	s.LoopStack = mergeLoopStack(s.LoopStack, d.LoopStack)
	if d.SetReturn {
		s.ReturnStack = append([]ReturnFrame{}, d.ReturnStack...)
	}
	for _, name := range d.Reset {
		delete(s.Steps, name)
	}
	for _, c := range d.Steps {
		s.putStep(c.Name, &c.Result)
	}
	if it := d.Iteration; it != nil {
		s.appendIteration(it.Loop, it.Record)
	}
	if d.Context != nil {
		s.Context = d.Context
	}
	if d.ReplacePayload {
		s.Payload = append([]step.Segment{}, d.Payload...)
	} else if len(d.Payload) > 0 {
		s.Payload = append(s.Payload, d.Payload...)
	}
	s.Stats.TotalTokensUsed += d.Stats.TotalTokensUsed
	s.Stats.TotalLinesWritten += d.Stats.TotalLinesWritten
	if v := d.Visit; v != nil {
		if s.Visits == nil {
			s.Visits = map[string]int{}
		}
		s.Visits[v.Block] = v.Count
	}
	for _, it := range d.Iterations {
		s.appendIteration(it.Loop, it.Record)
	}
	for k, n := range d.Visits {
		if s.Visits == nil {
			s.Visits = map[string]int{}
		}
		s.Visits[k] = n
	}
	if d.DropThreads {
		s.Threads = nil
	}
}

// applySessions records the agents' sessions that changed.
func (s *State) applySessions(changed map[string]step.Session) {
	if len(changed) == 0 {
		return
	}
	if s.Sessions == nil {
		s.Sessions = map[string]step.Session{}
	}
	maps.Copy(s.Sessions, changed)
}

// apply applies a thread's change d to its sub-state.
func (t *Thread) apply(d *Delta) {
	t.Status, t.CurrentStep, t.Phase, t.Signal = d.Status, d.CurrentStep, d.Phase, d.Signal
	t.WorktreePath, t.Head = d.WorktreePath, d.Head
	t.LoopStack = mergeLoopStack(t.LoopStack, d.LoopStack)
	sub := State{Steps: t.Steps}
	for _, name := range d.Reset {
		delete(sub.Steps, name)
	}
	for _, c := range d.Steps {
		sub.putStep(c.Name, &c.Result)
	}
	if it := d.Iteration; it != nil {
		sub.appendIteration(it.Loop, it.Record)
	}
	t.Steps = sub.Steps
	if d.Context != nil {
		t.Context = d.Context
	}
	if len(d.Payload) > 0 {
		t.Payload = append(t.Payload, d.Payload...)
	}
	if v := d.Visit; v != nil {
		if t.Visits == nil {
			t.Visits = map[string]int{}
		}
		t.Visits[v.Block] = v.Count
	}
	if d.ThreadRecord != nil {
		t.Record = d.ThreadRecord
	}
	if d.ThreadError != nil {
		t.Error = d.ThreadError
	}
}

// init makes the collections of s non-nil, so that a fresh State prints
// them as empty ([] and {}) rather than null.
func (s *State) init() {
	if s.Context == nil {
		s.Context = map[string]any{}
	}
	if s.Payload == nil {
		s.Payload = []step.Segment{}
	}
	if s.Steps == nil {
		s.Steps = map[string]*StepResult{}
	}
	if s.ReturnStack == nil {
		s.ReturnStack = []ReturnFrame{}
	}
	if s.LoopStack == nil {
		s.LoopStack = []LoopFrame{}
	}
	if s.Visits == nil {
		s.Visits = map[string]int{}
	}
}

// mergeLoopStack returns next, with the items of each frame that next does
// not carry taken from the same frame of old.
func mergeLoopStack(old, next []LoopFrame) []LoopFrame {
	out := make([]LoopFrame, len(next))
	copy(out, next)
	for i := range out {
		if out[i].Items == nil && i < len(old) && old[i].Loop == out[i].Loop {
			out[i].Items = old[i].Items
		}
	}
	return out
}

// putStep stores r, which it owns from now on, as the result of name. A
// result without iterations keeps those already recorded (a loop's
// iterations arrive one by one). Results are not changed in place once
// shared (an iteration record, a thread's state; see Machine.setStep).
func (s *State) putStep(name string, r *StepResult) {
	if s.Steps == nil {
		s.Steps = map[string]*StepResult{}
	}
	r.keepIterations(s.Steps[name])
	s.Steps[name] = r
}

// keepIterations gives r, when it has no iterations, those of old (nil:
// none).
func (r *StepResult) keepIterations(old *StepResult) {
	if old != nil && r.Iterations == nil {
		r.Iterations, r.IterationsTotal = old.Iterations, old.IterationsTotal
	}
}

// appendIteration appends rec to the loop's result, keeping the last
// MaxInlineIterations records inline.
func (s *State) appendIteration(loop string, rec Iteration) {
	var r StepResult
	if old := s.Steps[loop]; old != nil {
		r = *old
	} else {
		r.Status = StepRunning
	}
	keep := r.Iterations
	if len(keep) >= MaxInlineIterations {
		keep = keep[len(keep)-MaxInlineIterations+1:]
	}
	its := make([]Iteration, 0, len(keep)+1)
	its = append(its, keep...)
	r.Iterations = append(its, rec)
	r.IterationsTotal++
	if s.Steps == nil {
		s.Steps = map[string]*StepResult{}
	}
	s.Steps[loop] = &r
}
