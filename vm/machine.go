package vm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"smith/isa"
	"smith/lang"
	"smith/source"
	"smith/workers/confine"
	"smith/workers/reply"
	"smith/workers/step"
	"smith/workers/text"
)

// DefaultMaxSteps bounds the executed blocks of a run when Config.MaxSteps
// is 0.
const DefaultMaxSteps = 10000

// Config holds everything a run needs besides the Program. Host is
// required; the rest may be zero: no workers (every EXEC fails with
// E_EXEC), no events, no checkpoints, an empty environment.
type Config struct {
	// Registry executes EXEC blocks; nil makes every EXEC fail with E_EXEC.
	// Its Run must not keep the Request or its Argv (nor call its
	// callbacks) after it returns: the machine reuses them for the next
	// step.
	Registry step.Runner
	// Host performs every other effect of the run (the clock, git
	// worktrees, agents' folders, file_exists, ARTIFACT: reads, the change
	// plan, capture files); required: workers.Local is this machine's,
	// and New refuses a Config without one rather than act on this
	// machine's files unasked.
	Host Host
	// MaxSteps bounds the executed blocks (EXEC, SET_CONTEXT, LOOP_BEGIN,
	// skipped WHEN) of one Run or Resume; 0 means DefaultMaxSteps.
	MaxSteps int
	// StepsBefore is how many blocks the Run or Resume this Machine
	// continues executed before it took over (smith-temporal carries it
	// across continue-as-new): they count against MaxSteps.
	StepsBefore int
	// Events receives every event (the console and events.jsonl); nil
	// drops them.
	Events func(Event)
	// Checkpoint is called after every state change that must survive a
	// crash, with the change and the whole State. It must change neither,
	// and must not keep the change after it returns: the machine reuses
	// it. An error stops the run.
	Checkpoint func(d *Delta, st *State) error
	// CheckpointLater, when set, keeps a parallel thread's changes instead
	// of Checkpoint: it writes the change in order as Checkpoint does but
	// may return before it is durable, with wait, which returns once it
	// is. It is called under the lock of the thread's group, wait without
	// it, so the threads' changes can share their syncs (group commit);
	// the thread goes on, and the change's events leave the machine, only
	// once wait returns.
	CheckpointLater func(d *Delta, st *State) (wait func() error, err error)
	// Env is the parent environment (cmd passes os.LookupEnv); nil is
	// empty.
	Env func(string) (string, bool)
	// Dirs is the project layout; RunRoot the run's directory.
	Dirs    confine.Dir
	RunRoot string
	// WorkflowPath is recorded in the State (resume recompiles it).
	WorkflowPath string
	// RunID is the id of a fresh run; "" makes one from the clock.
	RunID string
	// Context holds --context/--context-file values: they override the
	// program's context keys (a fresh run only).
	Context map[string]any
	// Verbose receives each step's live output, masked; nil is off.
	Verbose io.Writer
	// Replaying says provider calls are answered from recordings (--replay):
	// no CLI runs, so a secret missing from the environment does not stop
	// the run; only a step that lists it in its own secrets: fails.
	Replaying bool
	// Debug adds DEBUG events: variable substitutions, condition
	// evaluations and transition lookups (--log-level debug).
	Debug bool
	// MaxParallel caps the threads of a parallel step that run at once
	// (--max-parallel); 0 leaves each step's own parallel: N or max: N.
	MaxParallel int
	// Threads returns the ThreadGroup that runs the threads of one
	// parallel step, at most limit at once; nil means goroutines.
	// smith-temporal runs them as workflow coroutines, whose order is
	// deterministic.
	Threads func(limit int) ThreadGroup
}

// A ThreadGroup runs the threads of one parallel step (Config.Threads).
type ThreadGroup interface {
	// Acquire waits until fewer than the group's limit of threads run.
	Acquire()
	// Release gives back what Acquire took (a thread ended, or was not
	// started after all).
	Release()
	// Go runs f concurrently with its caller.
	Go(f func())
	// Wait waits until every f started by Go has returned.
	Wait()
}

// ResumeOptions are resume's --signal and --note.
type ResumeOptions struct {
	// Signal, when set, takes the current block's transition for it
	// instead of running the block again.
	Signal string
	// Note, when set, is appended to the payload as a USER_NOTE segment.
	Note string
}

// A Machine runs one Program for one run. It is not safe for concurrent
// use; it runs on the caller's goroutine.
type Machine struct {
	p    *isa.Program
	cfg  Config
	max  int
	mask *text.Masker
	// presets: the presets' variables, from the Host (masked; the keys
	// scanned for before a commit)
	presets step.PresetVars
	hash    string

	blockIdx map[string]int   // block id -> index
	entryAt  map[uint32]entry // pc -> the block that starts (or dispatches) there
	bodyAll  [][]string       // loop block index -> every block nested in its body

	st       *State
	d        *Delta        // the change being built; commit hands it on
	pushed   bool          // d pushes the top loop frame
	pending  []Event       // events waiting for the finish that saves their seq
	executed *atomic.Int64 // blocks executed by this Run or Resume, every thread's included
	at       uint32        // pc of the instruction being executed
	ids      int           // newID counter
	idBase   int           // State.Seq when this machine started (id prefix)
	lateErr  error         // a checkpoint error inside a worker callback
	// revisit is the block a resume re-enters whose visit was already
	// counted (it was cut off while running); cleared by the next finish.
	revisit string

	// captures caches the capture files read, by step; stale are capture
	// files to remove once the next finish is durable.
	captures map[string]*cachedCapture
	stale    []string

	// thr is set on the machine of a thread (thread.go); rejoin says
	// the next LOOP_BEGIN or PAR_BEGIN of State.CurrentStep continues
	// its threads (a resume in phase parallel).
	thr    *thread
	rejoin bool
	// retryJoin is the parallel step whose join conflicted, set by a
	// resume that re-enters it: it merges the kept branches again instead
	// of running its threads.
	retryJoin string
	// resumeLoop is the loop a resume of a failed run re-enters: its
	// LOOP_BEGIN keeps the iterations that completed (resumeloop.go).
	resumeLoop string
	// joined are the threads whose branches the last join merged: their
	// worktrees and branches are removed once the join's result is saved
	// (a crash in between leaves them to SweepUnits on resume).
	joined []string

	// schemas is the run's validation SchemaSet, built on first use
	// (schemaErr when the program's schemas do not compile).
	schemas   *reply.SchemaSet
	schemaErr error

	// cur is the step being executed and callbacks its Request's callbacks
	// (exec.go); req is the Request exec hands the Registry, rebuilt for
	// every step (a Runner keeps no Request after its Run returns).
	cur       stepCall
	callbacks stepCallbacks
	req       step.Request
	// owned are the step results that only m.st.Steps holds (setStep).
	owned map[string]*StepResult
	// visit holds the Delta's visit change (Delta.Visit points here: no
	// Checkpoint keeps a change); scratch is a buffer for formatting.
	visitChg VisitChange
	scratch  []byte
	stamps   stampCache // formats the steps' started_at and ended_at
}

// An entry is a block and the phase that a pc re-enters it in.
type entry struct {
	block int
	phase string
}

// errEnd ends the run loop with success.
var errEnd = errors.New("end of run")

// New returns a Machine for one run of p, after verifying p.
func New(p *isa.Program, cfg Config) (*Machine, error) {
	if p == nil {
		return nil, errors.New("no program")
	}
	if err := p.Verify(); err != nil {
		return nil, err
	}
	if cfg.Host == nil {
		return nil, errors.New("vm: Config.Host is nil: give the run a Host (workers.Local is this machine's)")
	}
	m := &Machine{p: p, cfg: cfg, max: cfg.MaxSteps, executed: new(atomic.Int64), captures: map[string]*cachedCapture{}}
	if m.max <= 0 {
		m.max = DefaultMaxSteps
	}
	m.executed.Store(int64(cfg.StepsBefore))
	var secrets []string
	for _, name := range p.Secrets {
		if v, ok := m.env(name); ok {
			secrets = append(secrets, v)
		}
	}
	// The presets' own variables (keys, tokens, endpoints, config homes)
	// pass to their CLIs from Smith's environment: masked like secrets
	// wherever a value enters the run (CONTRACT 5).
	m.presets = cfg.Host.PresetVars()
	secrets = append(secrets, m.presets.Values(m.env)...)
	m.mask = text.NewMasker(secrets)
	m.hash = p.Hash()
	m.index()
	return m, nil
}

// Executed returns the blocks executed towards MaxSteps so far, every
// thread's and StepsBefore included.
func (m *Machine) Executed() int { return int(m.executed.Load()) }

// index builds the name and pc lookups.
func (m *Machine) index() {
	p := m.p
	m.blockIdx = make(map[string]int, len(p.Blocks))
	m.entryAt = make(map[uint32]entry, 2*len(p.Blocks))
	m.bodyAll = make([][]string, len(p.Blocks))
	for i, b := range p.Blocks {
		m.blockIdx[b.ID] = i
		if _, ok := m.entryAt[b.Dispatch]; !ok {
			m.entryAt[b.Dispatch] = entry{i, PhaseDispatch}
		}
	}
	for i, b := range p.Blocks {
		m.entryAt[b.Start] = entry{i, PhaseStart}
		// Every enclosing loop gets b in its body list.
		for par, n := b.Parent, 0; par > 0 && n <= len(p.Blocks); par, n = p.Blocks[par-1].Parent, n+1 {
			m.bodyAll[par-1] = append(m.bodyAll[par-1], b.ID)
		}
	}
}

// env looks name up in the parent environment.
func (m *Machine) env(name string) (string, bool) {
	if m.cfg.Env == nil {
		return "", false
	}
	return m.cfg.Env(name)
}

// newID returns a fresh segment or attempt id: not an effect but a count,
// unique in the run because it starts from State.Seq and names the thread.
func (m *Machine) newID() string {
	m.ids++
	b := strconv.AppendInt(append(m.scratch[:0], "id-"...), int64(m.idBase), 10)
	if m.thr != nil {
		b = append(append(b, '-'), m.thr.key...)
	}
	b = strconv.AppendInt(append(b, '-'), int64(m.ids), 10)
	m.scratch = b
	return string(b)
}

// now returns the Host's time in UTC.
func (m *Machine) now() time.Time { return m.cfg.Host.Now().UTC() }

// block returns the block named id, or nil.
func (m *Machine) block(id string) *isa.Block {
	if i, ok := m.blockIdx[id]; ok {
		return &m.p.Blocks[i]
	}
	return nil
}

// checkSecrets fails with E_SECRET_MISSING when a declared secret is not
// set in the environment, or to a value shorter than MinSecretLen.
func (m *Machine) checkSecrets() error {
	if m.cfg.Replaying {
		return nil
	}
	for _, name := range m.p.Secrets {
		if v, ok := m.env(name); !ok {
			return errSecretMissing(name)
		} else if SecretLen(v) == 0 {
			// Set but empty (or line breaks only): a mistake (an export of
			// an unset variable), and a value no output could be masked for.
			return &RuntimeError{Code: source.ESecretMissing,
				Msg: fmt.Sprintf("secret '%s' is set but empty: export its value before running", name)}
		} else if n := SecretLen(v); n < MinSecretLen {
			// Every occurrence of a secret is masked: one this short would
			// blank ordinary text (and Smith's own messages) all over the
			// run, and no credential is that short.
			// Its line breaks at the end do not count: the value is also
			// masked without them (text.Forms).
			unit := "characters"
			if n == 1 {
				unit = "character"
			}
			return &RuntimeError{Code: source.ESecretMissing,
				Msg: fmt.Sprintf("secret '%s' is %d %s long: too short to mask without replacing that text everywhere in the run's output; export the real value (at least %d characters), or pass a value that is no secret through env_allow", name, n, unit, MinSecretLen)}
		}
	}
	return nil
}

// MinSecretLen is the shortest value a declared secret may have: every
// occurrence of a secret's value is masked as ***, and a shorter value
// (a letter, "ab") would blank ordinary text wherever it appears.
const MinSecretLen = 4

// SecretLen is the length of a secret's value that MinSecretLen bounds:
// without the line breaks at its end (a value read from a file), since it
// is also masked without them (text.Forms).
func SecretLen(v string) int { return len(strings.TrimRight(v, "\r\n")) }

func errSecretMissing(name string) *RuntimeError {
	return &RuntimeError{Code: source.ESecretMissing,
		Msg: fmt.Sprintf("secret '%s' is not set in the environment: export it before running", name)}
}

// Run runs the program from its entry in a fresh run. It returns the final
// state and nil when the run completed, and the state and a *RuntimeError
// (or an error wrapping ErrHalted) when it ended otherwise. Errors found
// before the run starts (a missing secret) return a nil state.
func (m *Machine) Run(ctx context.Context) (*State, error) {
	if err := m.checkSecrets(); err != nil {
		return nil, err
	}
	start := m.now()
	st := &State{
		RunID:        m.cfg.RunID,
		WorkflowName: m.p.Name,
		WorkflowPath: m.cfg.WorkflowPath,
		ProgramHash:  m.hash,
		Status:       StatusRunning,
		StartedAt:    start.Format(time.RFC3339),
		Phase:        PhaseStart,
		RunStep:      m.p.RunStep,
		Workspace:    m.customWorkspace(),
	}
	if st.RunID == "" {
		st.RunID = "run-" + start.Format(timestampLayout)
	}
	st.init()
	m.st, m.d = st, &Delta{}
	c, err := m.initialContext()
	if err != nil {
		return nil, err
	}
	st.Context = c
	tree, err := m.worktree(ctx, st.RunID, "")
	if err != nil {
		return nil, err
	}
	st.WorktreePath, st.Base, st.Head = tree.Path, tree.Base, tree.Head
	if err := m.prepareAgents(); err != nil {
		return nil, err
	}
	entry := m.p.Entry
	if e, ok := m.entryAt[entry]; ok {
		st.CurrentStep = m.p.Blocks[e.block].ID
	}
	m.d.Start = &RunStart{RunID: st.RunID, WorkflowName: st.WorkflowName, WorkflowPath: st.WorkflowPath,
		ProgramHash: st.ProgramHash, StartedAt: st.StartedAt, Context: c, RunStep: st.RunStep, Workspace: st.Workspace,
		Base: st.Base}
	if err := m.finish(evRunStarted(m.p.Name)); err != nil {
		return st, err
	}
	return m.loop(ctx, entry)
}

// customWorkspace is the WORKSPACE a run records (--workspace, CONTRACT 2):
// "" for the default, BASE/workspace.
func (m *Machine) customWorkspace() string {
	d := m.cfg.Dirs
	if def, err := confine.New(d.Base); d.Base == "" || err == nil && def.Workspace == d.Workspace {
		return ""
	}
	return d.Workspace
}

// initialContext evaluates the program's context and lays Config.Context
// over it.
func (m *Machine) initialContext() (map[string]any, error) {
	c := map[string]any{}
	if m.p.Context != nil {
		v, err := m.tvalue(scope{}, *m.p.Context)
		if err != nil {
			return nil, &RuntimeError{Code: source.CodeOf(err, source.EStepFailed), Msg: "context: " + err.Error()}
		}
		if mv, ok := v.(map[string]any); ok {
			c = mv
		}
	}
	for _, k := range sortedKeys(m.cfg.Context) {
		c[k] = m.cfg.Context[k]
	}
	if tooDeep(c) {
		err := errTooDeep("the context")
		return nil, &RuntimeError{Code: source.CodeOf(err, source.EStepFailed), Msg: err.Error()}
	}
	return m.maskValue(c).(map[string]any), nil
}

// Resume continues the run st (a failed, interrupted or halted one) in this
// machine's program, which may have been recompiled: re-entry is by the
// names in st. A completed run returns at once.
func (m *Machine) Resume(ctx context.Context, st *State, opt ResumeOptions) (*State, error) {
	if st == nil {
		return nil, &RuntimeError{Code: source.EStateCorrupt, Msg: "no state to resume"}
	}
	if st.Status == StatusCompleted {
		return st, nil
	}
	if err := CheckResumeSignal(m.p, st, opt.Signal); err != nil {
		return nil, err // nothing changed: no state to save
	}
	if err := m.checkSecrets(); err != nil {
		return st, err
	}
	st.init()
	m.st, m.d, m.idBase = st, &Delta{}, st.Seq
	tree, err := m.worktree(ctx, st.RunID, st.Base)
	if err != nil {
		return st, err
	}
	st.WorktreePath = tree.Path
	if err := m.restoreRun(ctx, tree); err != nil {
		return st, err
	}
	if err := m.prepareAgents(); err != nil {
		return st, err
	}
	m.finishConsumes()
	if opt.Signal != "" {
		st.Phase, st.Signal = PhaseDispatch, opt.Signal
	}
	pc, err := m.reentry()
	if err != nil {
		// Nothing ran: no state to save (finish prints the error).
		return nil, err
	}
	m.markResumeLoop()
	if opt.Note != "" {
		m.appendPayload([]step.Segment{{ID: m.newID(), Type: "USER_NOTE", Content: opt.Note,
			Timestamp: m.now().Format(time.RFC3339)}})
	}
	st.Status, st.IsHalted, st.HaltedBlock, st.EndedAt = StatusRunning, false, "", ""
	if m.resumeLoop != "" {
		// Saved with the loop's first change: until then a crash leaves
		// the run failed, and its resume keeps the same iterations.
		m.emit(evRunResumed(st.CurrentStep))
	} else if err := m.finish(evRunResumed(st.CurrentStep)); err != nil {
		return st, err
	}
	// A step found running was cut off (a crash, an interrupt): its visit
	// was counted with its running record, so re-entering it is the same
	// visit, as in an uninterrupted run.
	if r := st.Steps[st.CurrentStep]; r != nil && r.Status == StepRunning && (st.Phase == PhaseStart || st.Phase == "") {
		m.revisit = st.CurrentStep
	}
	if r := st.Steps[st.CurrentStep]; r != nil && len(r.JoinKept) > 0 && (st.Phase == PhaseStart || st.Phase == "") {
		m.retryJoin = st.CurrentStep
	}
	if m.resumeLoop != "" {
		m.revisit = m.resumeLoop // the loop's visit the failure ended, counted already
	}
	return m.loop(ctx, pc)
}

// reentry maps the names in the state to pcs of this program and returns
// the pc to continue at; a name that no longer exists is E_STATE_CORRUPT.
func (m *Machine) reentry() (uint32, error) {
	st := m.st
	corrupt := func(format string, args ...any) (uint32, error) {
		return 0, &RuntimeError{Code: source.EStateCorrupt, Msg: fmt.Sprintf(format, args...) +
			" (the workflow changed since the run stopped); nothing was changed: put it back in the workflow and resume, or start the workflow again with smithvm run"}
	}
	for _, f := range st.LoopStack {
		if b := m.block(f.Loop); b == nil || b.Loop == nil {
			return corrupt("state: loop '%s' is not a loop of the program", f.Loop)
		}
	}
	for _, f := range st.ReturnStack {
		if m.block(f.ReturnBlock) == nil {
			return corrupt("state: return block '%s' is not in the program", f.ReturnBlock)
		}
		if !slices.ContainsFunc(m.p.Nodes, func(n isa.Node) bool { return n.ID == f.Node }) {
			return corrupt("state: node '%s' is not in the program", f.Node)
		}
	}
	b := m.block(st.CurrentStep)
	if b == nil {
		return corrupt("state: current step '%s' is not in the program", st.CurrentStep)
	}
	switch st.Phase {
	case PhaseStart, "":
		return b.Start, nil
	case PhaseDispatch:
		return b.Dispatch, nil
	case PhaseBody:
		if b.Loop == nil {
			return corrupt("state: step '%s' is not a loop", st.CurrentStep)
		}
		return b.Loop.Body, nil
	case PhaseParallel:
		pc, ok := m.forkPC(b)
		if !ok {
			return corrupt("state: step '%s' is not a parallel step", st.CurrentStep)
		}
		m.rejoin = true
		return pc, nil
	}
	return corrupt("state: unknown phase '%s'", st.Phase)
}

// loop is the interpreter: one labelled loop, with cancellation and the
// step budget checked every iteration, short cases and one exit.
func (m *Machine) loop(ctx context.Context, pc uint32) (st *State, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = m.internal(fmt.Sprint(r))
		}
		if err == nil {
			err = m.lateErr
		}
		st = m.st
	}()
	code := m.p.Code
run:
	for {
		switch {
		case ctx.Err() != nil:
			err = m.interrupted()
			break run
		case int(pc) >= len(code):
			err = m.internal(fmt.Sprintf("pc %04d is past the end of the code", pc))
			break run
		case counted(code[pc].Op) && !m.reserve():
			err = m.abort(source.EStepBudget, fmt.Sprintf("step budget exceeded: more than %d steps", m.max))
			break run
		}
		in := code[pc]
		m.at = pc
		pc++
		switch in.Op {
		case isa.OpJump:
			pc = in.A
		case isa.OpCall:
			pc, err = m.call(in.A, in.B)
		case isa.OpReturn:
			pc, err = m.ret()
		case isa.OpHaltAndFlag:
			err = m.halt(in.A)
		case isa.OpEnd:
			err = m.end()
		case isa.OpFail:
			err = m.failTemplate(in.A)
		case isa.OpExec:
			err = m.exec(ctx, in.A)
		case isa.OpDispatch:
			pc, err = m.dispatch(in.A)
		case isa.OpWhen:
			pc, err = m.when(in.A, pc, in.B)
		case isa.OpVisit:
			pc, err = m.visit(in.A, pc, in.B)
		case isa.OpSetContext:
			err = m.setContext(in.A)
		case isa.OpLoopBegin:
			pc, err = m.loopBegin(ctx, in.A, pc, in.B)
		case isa.OpLoopNext:
			if m.threadLoop(in.A) {
				err = m.threadEnd(ThreadCompleted, nil)
				break
			}
			pc, err = m.loopNext(in.A, pc, in.B)
		case isa.OpLoopBreak:
			if m.threadLoop(in.A) {
				err = m.threadEnd(ThreadBroken, nil)
				break
			}
			pc, err = m.loopEnd(in.A, in.B, StepCompleted, SigSuccess)
		case isa.OpLoopFail:
			if m.threadLoop(in.A) {
				err = m.threadEnd(ThreadFailed, nil)
				break
			}
			pc, err = m.loopEnd(in.A, in.B, StepFailed, SigFailure)
		case isa.OpParBegin:
			pc, err = m.parBegin(ctx, in.A, in.B)
		case isa.OpBranchEnd:
			err = m.branchEnd(in.A, ThreadCompleted)
		case isa.OpBranchFail:
			err = m.branchEnd(in.A, ThreadFailed)
		case isa.OpEndStep:
			err = m.endStep(in.A)
		default:
			err = m.internal(fmt.Sprintf("unknown opcode %s", in.Op))
		}
		if err != nil {
			break run
		}
	}
	if errors.Is(err, errEnd) || errors.Is(err, errThreadEnd) {
		err = nil
	}
	return m.st, err
}

// counted reports whether op executes a block for the step budget (a
// skipped WHEN counts too, when it happens).
// reserve counts one block towards MaxSteps, unless the budget is spent:
// one atomic check-and-count shared by every thread of the run, so that a
// thousand threads starting at once cannot all pass the check before any
// of them counted (a check, then a count later, let 10,000 parallel
// branches run under a budget of 10,000 blocks).
func (m *Machine) reserve() bool {
	for {
		n := m.executed.Load()
		if int(n) >= m.max {
			return false
		}
		if m.executed.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// counted reports the instructions that count towards MaxSteps: the run
// loop reserves one for each before running it.
func counted(op isa.Op) bool {
	return op == isa.OpExec || op == isa.OpSetContext || op == isa.OpLoopBegin || op == isa.OpParBegin
}

// emit queues e for the finish that follows; its seq is reserved now.
func (m *Machine) emit(ev Event) {
	m.pending = append(m.pending, ev)
	e := &m.pending[len(m.pending)-1] // filled in place: an Event is large
	if m.thr == nil {
		m.st.EventSeq++
		e.Seq = m.st.EventSeq
	} else {
		e.Thread = m.thr.key // numbered by the thread's commit
	}
	if e.Time.IsZero() {
		e.Time = m.now()
	}
	if e.Step != "" && !strings.HasPrefix(e.Kind, "run_") {
		if e.AttemptID == 0 {
			e.AttemptID, e.AttemptUID = m.tryOf(e.Step)
		}
		if m.thr == nil && len(m.st.LoopStack) > 0 {
			e.Iteration = m.iterationRef()
		}
	}
	e.RunID = m.st.RunID
	e.Msg = m.mask.String(atPos(e, m.pos()))
	for i, t := range e.Traceback {
		e.Traceback[i] = m.mask.String(t)
	}
}

// iterationRef is the index of the current iteration of every serial loop
// entered, outermost first, joined by ".": "2", "1.0".
func (m *Machine) iterationRef() string {
	m.scratch = m.st.AppendIterationRef(m.scratch[:0])
	return string(m.scratch)
}

// finish ends a handler's change: it queues evs after the events queued
// before, numbers the change, copies the registers into it and saves it.
// Every handler's change ends here (a thread's in thread.commit), and its
// events leave the machine only through save, after the change's
// Checkpoint.
func (m *Machine) finish(evs ...Event) error {
	for i := range evs {
		m.emit(evs[i])
	}
	d, st := m.d, m.st
	d.CurrentStep, d.Phase, d.Signal, d.Status = st.CurrentStep, st.Phase, st.Signal, st.Status
	d.WorktreePath, d.Head, d.LoopStack = st.WorktreePath, st.Head, loopStackDelta(d.LoopStack[:0], st.LoopStack, m.pushed)
	m.pushed, m.revisit = false, ""
	if len(m.stale) > 0 {
		d.SyncWithNext = false // the files are removed once the change is durable
	}
	if m.thr != nil {
		return m.thr.commit(m, d)
	}
	st.Seq++
	d.Seq = st.Seq
	d.IsHalted, d.HaltedBlock, d.EndedAt, d.EventSeq = st.IsHalted, st.HaltedBlock, st.EndedAt, st.EventSeq
	d.ConflictNotices = st.ConflictNotices
	err := m.save(d, st)
	// Nothing keeps the change (Config.Checkpoint may not): reuse it and
	// the arrays of its lists for the next one.
	d.reset()
	if err != nil {
		return err
	}
	// Capture files the saved state no longer names (a crash before this
	// leaves a stray file in logs/, never a missing one).
	for _, f := range m.stale {
		m.cfg.Host.Remove(f)
	}
	m.stale = m.stale[:0]
	return nil
}

// save hands change d of st to Config.Checkpoint and only then sends the
// queued events, whose seqs the change records (so a seq is never sent
// twice after a crash); the events of a change that was not saved are
// dropped. It is the one place where events leave the machine.
func (m *Machine) save(d *Delta, st *State) error {
	if m.cfg.Checkpoint != nil {
		if err := m.cfg.Checkpoint(d, st); err != nil {
			m.pending = m.pending[:0]
			return fmt.Errorf("save state of run %s: %w", st.RunID, err)
		}
	}
	if m.cfg.Events != nil {
		for i := range m.pending {
			m.cfg.Events(m.pending[i])
		}
	}
	m.pending = m.pending[:0]
	return nil
}

// done ends block blk's step with result r, r.Signal in the signal
// register and the block in its dispatch phase, and finishes with evs;
// ran says the step ran: in a loop body it is then the iteration's last
// step, and its r.Duration counts in the iteration's time.
func (m *Machine) done(blk *isa.Block, r StepResult, ran bool, evs ...Event) error {
	m.stampResult(blk.ID, &r, evs)
	m.setStep(blk.ID, r)
	if n := len(m.st.LoopStack); ran && n > 0 && blk.Parent != 0 && m.st.LoopStack[n-1].Loop == m.p.Blocks[blk.Parent-1].ID {
		f := &m.st.LoopStack[n-1]
		f.Last, f.Elapsed = blk.ID, f.Elapsed+r.Duration
	}
	m.enter(blk.ID, PhaseDispatch, r.Signal)
	return m.finish(evs...)
}

// stampResult gives r, when it has none, an ended_at and a started_at
// (CONTRACT 12.5: every step result records both). The end is the time of
// the step's last event, evs (stamped here, one clock reading each, as emit
// would), or now; the start is that of the step's running record when it
// has one (a loop, a parallel step), else the end (a step that takes no
// time: set_context, a skip, a failure before the step ran).
func (m *Machine) stampResult(name string, r *StepResult, evs []Event) {
	if r.EndedAt != "" && r.StartedAt != "" {
		return
	}
	for i := range evs {
		if evs[i].Time.IsZero() {
			evs[i].Time = m.now()
		}
	}
	start := r.StartedAt
	if old := m.st.Steps[name]; start == "" && old != nil && old.Status == StepRunning {
		start = old.StartedAt
	}
	if r.EndedAt == "" {
		var end time.Time
		if n := len(evs); n > 0 {
			end = evs[n-1].Time
		} else {
			end = m.now()
		}
		_, r.EndedAt = m.formatSpan(end, end)
	}
	if start == "" {
		start = r.EndedAt
	}
	r.StartedAt = start
}

// setStep records the result of a step.
//
// Results are never changed in place once something else may hold them
// (an iteration record, a thread's state), but a result that only the
// state holds is: setStep writes the new result over it instead of taking
// new memory for every step (a step's running record, then its result).
// m.owned names those results; iterationRecord and threadState, which
// share results, take them out of it.
func (m *Machine) setStep(name string, r StepResult) {
	old := m.st.Steps[name]
	if old != nil && old.CapturePath != "" && old.CapturePath != r.CapturePath {
		m.stale = append(m.stale, old.CapturePath)
	}
	m.d.Steps = append(m.d.Steps, StepChange{Name: name, Result: r})
	r.keepIterations(old) // as putStep does, before old is overwritten
	if old != nil && m.owned[name] == old {
		*old = r
		return
	}
	p := new(StepResult)
	*p = r
	if m.st.Steps == nil {
		m.st.Steps = map[string]*StepResult{}
	}
	m.st.Steps[name] = p
	if m.owned == nil {
		m.owned = map[string]*StepResult{}
	}
	m.owned[name] = p
}

// share marks the results of names as held by something besides the
// state: setStep no longer writes over them.
func (m *Machine) share(names ...string) {
	for _, n := range names {
		delete(m.owned, n)
	}
}

// reset removes step results (a loop body's, at an iteration start).
func (m *Machine) reset(names []string) {
	for _, n := range names {
		if old := m.st.Steps[n]; old != nil && old.CapturePath != "" {
			m.stale = append(m.stale, old.CapturePath)
		}
		delete(m.st.Steps, n)
	}
	m.share(names...)
	m.d.Reset = append(m.d.Reset, names...)
}

// appendPayload appends segments to the payload.
func (m *Machine) appendPayload(segs []step.Segment) {
	segs = slices.Clone(segs)
	for i := range segs {
		segs[i].Content = m.mask.String(segs[i].Content)
	}
	m.st.Payload = append(m.st.Payload, segs...)
	m.d.Payload = append(m.d.Payload, segs...)
}

// replacePayload replaces the whole payload (CALL, RETURN).
func (m *Machine) replacePayload(p []step.Segment) {
	m.st.Payload = p
	m.d.Payload = slices.Clone(p)
	if m.d.Payload == nil {
		m.d.Payload = []step.Segment{}
	}
	m.d.ReplacePayload = true
}

// setContextMap replaces the context (never changed in place).
func (m *Machine) setContextMap(c map[string]any) {
	m.st.Context = c
	m.d.Context = c
}

// enter sets the registers: the current step, its phase and the signal.
func (m *Machine) enter(id, phase, signal string) {
	m.st.CurrentStep, m.st.Phase, m.st.Signal = id, phase, signal
}

// pos returns the source position of the current instruction.
func (m *Machine) pos() source.Pos {
	if int(m.at) < len(m.p.Pos) {
		return m.p.Pos[m.at]
	}
	return source.Pos{}
}

// traceback lists the CALL sites on the return stack, outermost first.
func (m *Machine) traceback() []string {
	var tb []string
	for _, f := range m.st.ReturnStack {
		var at source.Pos
		if b := m.block(f.CallBlock); b != nil {
			at = b.Pos
		}
		tb = append(tb, fmt.Sprintf("%s: block '%s' called node '%s'", at, f.CallBlock, f.Node))
	}
	return tb
}

// abort ends the run in failure with a runtime error (E_NO_TRANSITION,
// E_STEP_BUDGET, ...), saving the state.
func (m *Machine) abort(code source.Code, msg string) error {
	if m.thr != nil {
		return m.threadAbort(code, msg)
	}
	tb := m.traceback()
	m.st.Status, m.st.EndedAt = StatusFailed, m.now().Format(time.RFC3339)
	if err := m.finish(evRunFailed(m.st.CurrentStep, string(code), msg, slices.Clone(tb))); err != nil {
		return err
	}
	return &RuntimeError{Code: code, Msg: m.mask.String(msg), Pos: m.pos(), Traceback: tb}
}

// internal ends the run after a broken invariant.
func (m *Machine) internal(what string) error {
	msg := fmt.Sprintf("internal error at pc %d (%s): %s", m.at, m.pos(), what)
	if m.st == nil {
		return &RuntimeError{Code: source.EInternal, Msg: msg}
	}
	m.pending = m.pending[:0]
	m.d = &Delta{}
	err := m.abort(source.EInternal, msg)
	var re *RuntimeError
	if !errors.As(err, &re) {
		return fmt.Errorf("%s: %w", msg, err)
	}
	return re
}

// interrupted saves the state of a cancelled run: the step being run
// re-runs on resume.
func (m *Machine) interrupted() error {
	if m.thr != nil {
		// The thread stays running in the state: resume runs it again.
		return &RuntimeError{Code: source.EInterrupted, Msg: fmt.Sprintf("run %s interrupted", m.st.RunID)}
	}
	m.st.Status = StatusInterrupted
	if err := m.finish(evRunInterrupted(m.st.CurrentStep)); err != nil {
		return err
	}
	return &RuntimeError{Code: source.EInterrupted, Msg: fmt.Sprintf("run %s interrupted", m.st.RunID),
		Pos: m.pos(), Traceback: m.traceback()}
}

// sortedKeys returns the keys of c in order.
func sortedKeys(c map[string]any) []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// worktree returns the run's worktree: with config.isolation
// git-worktree and a WORKSPACE that is a git repository, the run's own git
// worktree BASE/.orchestrator/worktrees/<run_id> on branch smith/<run_id>,
// created at the run's start and checked (repaired) on resume, with its
// starting commit (base: the state's, "" for a new run) and the branch's
// commit; otherwise a zero RunTree (WORKSPACE).
func (m *Machine) worktree(ctx context.Context, runID, base string) (step.RunTree, error) {
	d := m.cfg.Dirs
	if m.p.Config.Isolation != lang.IsolationWorktree || d.Workspace == "" {
		return step.RunTree{}, nil
	}
	tree, err := m.cfg.Host.RunWorktree(ctx, d, runID, base)
	if err != nil {
		// The host's code where it gives one (E_USAGE: a run id git
		// cannot name a branch after), else E_EXEC.
		return step.RunTree{}, &RuntimeError{Code: source.CodeOf(err, source.EExec), Msg: err.Error()}
	}
	return tree, nil
}
