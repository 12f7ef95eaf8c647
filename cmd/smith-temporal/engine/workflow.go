package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"smith/isa"
	"smith/lang"
	"smith/source"
	"smith/vm"
	"smith/workers/confine"
	"smith/workers/step"
)

// Names shared by the client and the workers.
const (
	WorkflowName   = "smith.Run"
	StepActivity   = "smith.Step"
	EnvActivity    = "smith.Environment"
	FilesActivity  = "smith.Files"
	HostActivity   = "smith.Host"
	PinActivity    = "smith.Pin"
	ResumeSignal   = "resume"
	StatusQuery    = "status"
	ProgressQuery  = "progress"
	HostQuery      = "host"
	DefaultQueue   = "smith"
	defaultHistory = 3000 // events before a run continues as new (the server suggests it at 4,096)
)

// Input starts (or continues) one Smith run: one Temporal workflow per
// run, workflow id = run id.
type Input struct {
	RunID        string
	WorkflowPath string
	// ProgramRef is the compiled program's blob (--blobs); Program holds
	// it inline only when there is no blob directory.
	ProgramRef string `json:",omitempty"`
	Program    []byte `json:",omitempty"`
	Context    map[string]any
	// MaxSteps bounds the executed blocks of the run and of each resume,
	// as smithvm's --max-steps; 0 means vm.DefaultMaxSteps.
	MaxSteps int `json:",omitempty"`
	// MaxParallel caps the threads of a parallel step that run at once
	// (--max-parallel); 0 leaves each step's own parallelism.
	MaxParallel int `json:",omitempty"`
	// HistoryLimit is the history length after which the run continues as
	// new at the next step boundary; 0 means 3,000 events.
	HistoryLimit int `json:",omitempty"`

	// HostQueue is the task queue of the host that holds the run's
	// worktree (isolation: git-worktree): the PinActivity's answer,
	// carried across continue-as-new.
	HostQueue string `json:",omitempty"`
	// Pinned says the PinActivity was asked (its answer "" means the
	// fleet's WORKSPACE is shared: the run's activities go to any worker).
	Pinned bool `json:",omitempty"`

	// Set by the run itself when it continues as new.
	Env     *EnvOutput        `json:",omitempty"`
	State   *vm.State         `json:",omitempty"`
	Resume  *vm.ResumeOptions `json:",omitempty"`
	Halted  bool              `json:",omitempty"`
	Renewed int               `json:",omitempty"` // how many times the run continued as new
	// Lines are the last console lines of the execution that continued
	// as new, for the progress query.
	Lines []ConsoleLine `json:",omitempty"`
	// Executed is how many blocks the Run or Resume that continued as
	// new had executed: they count against MaxSteps in the next execution.
	Executed int `json:",omitempty"`
	// Activities is how many step activities the run has scheduled: the
	// ids ("N:Step") go on counting across resumes and continue-as-new.
	Activities int `json:",omitempty"`
	// Files is the snapshot of the run's WORKSPACE after its last step
	// (snapshot.go), carried across continue-as-new.
	Files string `json:",omitempty"`
}

// ResumeRequest is the resume signal: CONTRACT 7.4's --signal and --note.
type ResumeRequest struct {
	Signal string `json:",omitempty"`
	Note   string `json:",omitempty"`
	// MaxSteps bounds this resume's executed blocks (--max-steps); 0
	// keeps the run's.
	MaxSteps int `json:",omitempty"`
}

// A ConsoleLine is the console line of one event of the run (as smithvm
// prints it), numbered by the event's event_seq.
type ConsoleLine struct {
	Seq  int
	Text string
}

// Progress answers the progress query: the run's status and its console
// lines after a given event_seq (the last keepLines at most).
type Progress struct {
	Status string        `json:",omitempty"`
	Lines  []ConsoleLine `json:",omitempty"`
}

// keepLines is how many console lines the workflow keeps for the
// progress query (and carries across continue-as-new: carryLines).
const keepLines, carryLines = 1000, 100

// Output is how a run ended.
type Output struct {
	ExitCode int
	Code     string `json:",omitempty"`
	Message  string `json:",omitempty"`
	State    *vm.State
	// Renewed counts the times the run continued as new.
	Renewed int `json:",omitempty"`
	// Lines are the run's last console lines (100 at most), so that the
	// client prints them without a query to the closed workflow.
	Lines []ConsoleLine `json:",omitempty"`
	// Files is the snapshot of the run's WORKSPACE after its last step:
	// a resume of a failed run (a new execution) restores it.
	Files string `json:",omitempty"`
}

// Workflows is the workflow side of a worker.
type Workflows struct {
	// Dirs is the worker's project layout (--base): the VM names
	// directories in it; its reads of files (file_exists, ARTIFACT
	// layers) are activities (files.go).
	Dirs confine.Dir
	// Blobs is the fleet's blob store (--blobs), which holds the programs.
	Blobs *Blobs
}

// Run is the workflow: the compiled program runs here, in the VM; every
// step is the StepActivity; a halt waits for the resume signal; the
// status query returns the state (the shape of state.json).
func (w *Workflows) Run(ctx workflow.Context, in Input) (*Output, error) {
	data := in.Program
	if in.ProgramRef != "" {
		var err error
		// A blob is named by its hash: reading it is deterministic.
		if w.Blobs == nil {
			return nil, temporal.NewNonRetryableApplicationError("the program is a blob and this worker has no blob store", "E_BYTECODE", nil)
		}
		if data, err = w.Blobs.Get(in.ProgramRef); err != nil {
			return nil, err
		}
	}
	prog, err := isa.Decode(data)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError("decode the program: "+err.Error(), "E_BYTECODE", err)
	}
	// Histories recorded before the memo replay without it (memo.go).
	truth := workflow.GetVersion(ctx, truthChange, workflow.DefaultVersion, 1) >= 1
	// Steps that start no process, the files' reads and the host's
	// effects run as local activities (local.go) from the same version;
	// older histories as activities.
	local := truth
	cur := in.State
	if err := workflow.SetQueryHandler(ctx, StatusQuery, func() (*vm.State, error) { return cur, nil }); err != nil {
		return nil, err
	}
	lines := in.Lines
	progress := func(after int) (*Progress, error) {
		p := &Progress{}
		if cur != nil {
			p.Status = cur.Status
		}
		i, _ := slices.BinarySearchFunc(lines, after+1, func(l ConsoleLine, seq int) int { return l.Seq - seq })
		p.Lines = lines[i:]
		return p, nil
	}
	if err := workflow.SetQueryHandler(ctx, ProgressQuery, progress); err != nil {
		return nil, err
	}
	// host names the queue of the host that holds the run's worktree.
	if err := workflow.SetQueryHandler(ctx, HostQuery, func() (string, error) { return in.HostQueue, nil }); err != nil {
		return nil, err
	}
	event := func(e vm.Event) {
		if len(lines) >= 2*keepLines {
			lines = slices.Clone(lines[len(lines)-keepLines:])
		}
		lines = append(lines, ConsoleLine{Seq: e.Seq, Text: e.Console()})
	}
	if in.Env == nil {
		var env EnvOutput
		ein := EnvInput{Names: prog.EnvAllow, Secrets: prog.Secrets}
		var f workflow.Future
		if local {
			f = workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: time.Minute}), EnvActivity, ein)
		} else {
			f = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute}), EnvActivity, ein)
		}
		if err := f.Get(ctx, &env); err != nil {
			return nil, err
		}
		in.Env = &env
	}
	if prog.Config.Isolation == lang.IsolationWorktree && !in.Pinned {
		// The worktree will live on one host: the worker that answers
		// here names its host's queue, and every later activity of the
		// run goes there (a host that is gone is waited for: no other
		// host has the worktree).
		ao := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
		if err := workflow.ExecuteActivity(ao, PinActivity).Get(ctx, &in.HostQueue); err != nil {
			return nil, err
		}
		in.Pinned = true
	}
	mm := &memo{ctx: ctx, on: truth, hostQueue: &in.HostQueue}
	if in.Halted { // continued as new while halted: the memo starts empty
		if err := mm.update(in.State); err != nil {
			return nil, err
		}
	}
	limit := in.HistoryLimit
	if limit <= 0 {
		limit = defaultHistory
	}
	resumeCh := workflow.GetSignalChannel(ctx, ResumeSignal)
	files := &chain{ref: in.Files}
	hist := &history{}
	ctx = workflow.WithValue(ctx, filesKey{}, files)
	st, opts := in.State, in.Resume
	// before is what this Run or Resume executed in earlier executions.
	before := in.Executed
	if in.Halted {
		// Continued as new while halted: wait for the resume first.
		opts = waitResume(ctx, resumeCh, &in)
		before = 0
	}
	for {
		mctx, cancel := context.WithCancel(context.Background())
		renew := false
		co := &coroutine{cur: ctx, blobs: w.Blobs, memo: mm, hist: hist}
		if !truth {
			in.Activities = 0 // the ids of older histories restart at each resume
		}
		cfg := vm.Config{
			Registry:    &stepRunner{co: co, secrets: prog.Secrets, queue: in.HostQueue, n: &in.Activities, summary: truth, local: local},
			MaxSteps:    in.MaxSteps,
			StepsBefore: before,
			Events:      event,
			Env:         in.Env.lookup(prog.Secrets),
			Checkpoint: func(d *vm.Delta, s *vm.State) error {
				cur = s
				if err := mm.update(s); err != nil {
					return err
				}
				// Continue as new at a step boundary (the step's result
				// saved, its transition not taken): resume there.
				if s.Status == vm.StatusRunning && s.Phase == vm.PhaseDispatch && hist.full(ctx, limit) {
					renew = true
					cancel()
				}
				return nil
			},
			Dirs:         w.Dirs,
			Host:         &workflowHost{co: co, dirs: w.Dirs, queue: in.HostQueue, runID: in.RunID, local: local},
			Threads:      co.threads,
			MaxParallel:  maxParallel(in.MaxParallel),
			WorkflowPath: in.WorkflowPath,
			RunID:        in.RunID,
			Context:      in.Context,
		}
		m, err := vm.New(prog, cfg)
		if err != nil {
			cancel()
			return nil, err
		}
		var final *vm.State
		var runErr error
		if st == nil {
			final, runErr = m.Run(mctx)
		} else {
			o := vm.ResumeOptions{}
			if opts != nil {
				o = *opts
			}
			final, runErr = m.Resume(mctx, st, o)
		}
		cancel()
		if final != nil {
			cur = final
		}
		if renew && final != nil && final.Status == vm.StatusInterrupted {
			next := in
			next.State, next.Resume, next.Halted, next.Renewed = final, nil, false, in.Renewed+1
			next.Executed = m.Executed()
			next.Lines = lastLines(lines)
			next.Files = files.ref
			return nil, workflow.NewContinueAsNewError(ctx, WorkflowName, next)
		}
		if err := mm.update(final); err != nil {
			return nil, err
		}
		if final == nil || !errors.Is(runErr, vm.ErrHalted) {
			if final == nil {
				// A resume refused before anything ran (a step of the
				// state gone from the recompiled workflow): the run keeps
				// its state, to be resumed again.
				final = st
			}
			out := outputOf(final, runErr)
			out.Renewed = in.Renewed
			if truth {
				out.Lines = lastLines(lines)
				out.Files = files.ref
			}
			if truth && out.ExitCode != 0 {
				return nil, failure(out)
			}
			return out, nil
		}
		if hist.full(ctx, limit) {
			next := in
			next.State, next.Resume, next.Halted, next.Renewed = final, nil, true, in.Renewed+1
			next.Executed = 0
			next.Lines = lastLines(lines)
			next.Files = files.ref
			return nil, workflow.NewContinueAsNewError(ctx, WorkflowName, next)
		}
		// A resume is a new Run or Resume: its own step budget.
		st, opts, before = final, waitResume(ctx, resumeCh, &in), 0
	}
}

// lastLines are the console lines a run carries across continue-as-new.
func lastLines(lines []ConsoleLine) []ConsoleLine {
	return slices.Clone(lines[max(0, len(lines)-carryLines):])
}

// maxParallel is the VM's --max-parallel on Temporal: n, or no cap but
// each step's own (the threads' steps run on the whole fleet, not on the
// CPUs of one machine, and a count read from the machine would not replay).
func maxParallel(n int) int {
	if n > 0 {
		return n
	}
	return math.MaxInt32
}

// waitResume blocks the run (HALT_AND_FLAG) until the resume signal; a
// resume's --max-steps replaces the run's budget from then on.
func waitResume(ctx workflow.Context, ch workflow.ReceiveChannel, in *Input) *vm.ResumeOptions {
	var r ResumeRequest
	ch.Receive(ctx, &r)
	if r.MaxSteps > 0 {
		in.MaxSteps = r.MaxSteps
	}
	return &vm.ResumeOptions{Signal: r.Signal, Note: r.Note}
}

// history estimates the length of the run's history: the length at the
// start of the workflow task plus the markers of the local activities run
// since (local.go), which a loop of cheap steps may run by the thousand
// in one workflow task. Both replay alike.
type history struct{ seen, local int }

// full says whether the run should continue as new.
func (h *history) full(ctx workflow.Context, limit int) bool {
	info := workflow.GetInfo(ctx)
	if n := info.GetCurrentHistoryLength(); n != h.seen {
		h.seen, h.local = n, 0
	}
	return info.GetContinueAsNewSuggested() || h.seen+h.local >= limit
}

// lookup is the VM's environment in workflow code: the recorded env_allow
// values, and a placeholder for each secret that is set.
func (e *EnvOutput) lookup(secrets []string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		if slices.Contains(secrets, name) {
			if slices.Contains(e.SecretsSet, name) {
				return Placeholder(name), true
			}
			return "", false
		}
		v, ok := e.Values[name]
		return v, ok
	}
}

// outputOf maps the end of a run to its exit status (CONTRACT 11).
func outputOf(st *vm.State, err error) *Output {
	out := &Output{State: st}
	if err == nil {
		return out
	}
	out.Message, out.ExitCode = err.Error(), vm.ExitStatus(err)
	var c source.Coded
	if errors.As(err, &c) {
		out.Code = string(c.ErrCode())
	}
	return out
}

// stepRunner is the VM's worker registry in workflow code: every
// execution is a StepActivity.
type stepRunner struct {
	co      *coroutine
	secrets []string
	queue   string // the run's host queue, or "" (workflowHost.queue)
	n       *int   // executions so far: activity ids are "N:Step"
	summary bool   // label each activity with its step (the truth version)
	local   bool   // steps that start no process are local activities
}

// Run executes req as an activity and replays the callbacks it saw.
func (r *stepRunner) Run(_ context.Context, req *step.Request) step.Result {
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = lang.DefaultTimeout
	}
	tries := time.Duration(max(req.Attempts, 1) * max(len(req.Providers), 1))
	ao := workflow.ActivityOptions{
		TaskQueue: r.queue,
		// Room for every try, its backoff and a wait_for.
		StartToCloseTimeout: tries*(timeout+req.Backoff) + time.Minute,
		HeartbeatTimeout:    10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 10 * time.Second,
		},
	}
	if req.WaitFor != nil {
		ao.StartToCloseTimeout += req.WaitFor.Timeout
	}
	// The step's name is in the activity id, so replaying a history with
	// a workflow that would run another step there fails (the replayer
	// compares activity ids), not only one that runs more or fewer.
	*r.n++
	ao.ActivityID = strconv.Itoa(*r.n) + ":" + req.Step
	if r.summary {
		ao.Summary = "step " + req.Step
	}
	var out WireResult
	wr := WireRequest{Request: *req, SecretNames: r.secrets}
	var err error
	r.co.block(func(ctx workflow.Context) {
		// The step sees the files after the last step of its thread.
		c := chainOf(ctx)
		if c != nil {
			wr.Files = c.ref
		}
		if r.local && r.queue == "" && !startsProcess(req) {
			r.co.hist.local++
			err = workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, localOptions(ao)), StepActivity, wr).Get(ctx, &out)
		} else {
			r.co.beforeWait()
			err = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, ao), StepActivity, wr).Get(ctx, &out)
		}
		if err == nil && out.Step != "" && out.Step != req.Step {
			// A history recorded with another step here (a local
			// activity's marker does not name its step as an id does).
			panic(fmt.Sprintf("nondeterministic run: the history has step %q where the workflow runs %q", out.Step, req.Step))
		}
		if err == nil && c != nil && out.Files != "" {
			c.ref = out.Files
		}
	})
	if err != nil {
		return step.Result{Signal: vm.SigFailure, ExitCode: 1, Attempts: 1,
			Err: &StepError{Code: source.EExec, Msg: "step activity: " + err.Error()}}
	}
	for _, c := range out.Calls {
		switch {
		case c.Kind == "attempt" && req.AttemptID != nil:
			req.AttemptID(c.Attempt)
		case c.Kind == "retry" && req.OnRetry != nil:
			req.OnRetry(c.Attempt, c.ExitCode, c.Wait)
		case c.Kind == "fallback" && req.OnFallback != nil:
			req.OnFallback(c.From, c.To, c.Reason)
		}
	}
	return out.Result
}
