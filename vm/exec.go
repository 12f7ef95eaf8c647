package vm

import (
	"context"
	"math"
	"time"

	"smith/isa"
	"smith/lang"
	"smith/source"
	"smith/workers/step"
	"smith/workers/text"
)

// Step defaults (CONTRACT 3.5).
const (
	defaultTimeout = lang.DefaultTimeout
	defaultBackoff = 2 * time.Second
)

// exec runs block a's worker and records its result and signal. A
// cancelled run records nothing: the step runs again on resume.
func (m *Machine) exec(ctx context.Context, a uint32) error {
	blk := &m.p.Blocks[a]
	m.cur = stepCall{blk: blk, ids: m.cur.ids[:0]}
	defer func() { m.cur.blk = nil }() // its tries end with it (tryOf)
	// Provider steps number their executions. A step found running was cut
	// off by a crash: repeating it keeps its number, so the mock and --replay
	// answer it as before and the resumed run matches an uninterrupted one.
	execs := 0
	if blk.Kind == isa.KindProvider {
		execs = 1
		if old := m.st.Steps[blk.ID]; old != nil {
			execs = old.Executions + 1
			if old.Status == StepRunning && old.Executions > 0 {
				execs = old.Executions
			}
		}
	}
	// What failed validation last time, read before the running record
	// replaces the step's last result.
	feedback := m.feedback(blk)
	var msg msgNum
	if blk.Kind == isa.KindSend {
		msg = m.messageSeq(blk.ID)
	}
	m.takeNotices(blk)
	// The running record says when the step started and which attempt
	// runs (onRetry counts on), so status, list and the viewer show the
	// step running now, with its elapsed time (CONTRACT 6).
	now := m.now() // the step_started event's time too
	started := string(m.stamps.append(m.scratch[:0], now))
	m.setStep(blk.ID, StepResult{Status: StepRunning, Visits: m.st.Visits[blk.ID], Executions: execs, Message: msg.seq, MessageSub: msg.sub, Feedback: feedback,
		StartedAt: started, Attempts: 1})
	m.enter(blk.ID, PhaseStart, m.st.Signal)
	m.d.Deferred = true // made durable by the sync of the step's result
	ev := evStepStarted(blk.ID, m.try(1))
	ev.Time = now
	if err := m.finish(ev); err != nil {
		return err
	}
	req, err := m.request(blk, execs)
	if err == nil {
		req.Feedback = feedback
		if s := blk.Step; s != nil {
			req.PayloadStdin, req.KeepReply, req.ReplyFrom = s.PayloadIO, s.KeepReply, s.ReplyFrom
		}
		if req.Send != nil {
			req.Send.Seq, req.Send.Sub, req.Send.Again = msg.seq, msg.sub, msg.again
			if msg.sub > 0 {
				req.Send.Thread = m.threadKey()
			}
		}
	}
	var res step.Result
	switch {
	case err != nil:
		res = step.Result{Signal: SigFailure, Err: err}
	case m.cfg.Registry == nil:
		res = step.Result{Signal: SigFailure, Err: &source.Error{Code: source.EExec, Msg: "no worker registry"}}
	default:
		m.bindCallbacks()
		req.AttemptID, req.OnRetry, req.OnFallback = m.callbacks.attemptID, m.callbacks.onRetry, m.callbacks.onFallback
		var live interface{ Close() error }
		if m.cfg.Verbose != nil {
			w := m.mask.Writer(threadLines(m.cfg.Verbose, blk.ID, m.threadKey()))
			req.Live, live = w, w
		}
		res = m.cfg.Registry.Run(ctx, req)
		if live != nil {
			live.Close()
		}
		if res.Attempts == 0 {
			res.Attempts = 1
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	if m.lateErr != nil {
		return m.lateErr
	}
	commit := m.commitStep(ctx, blk, &res)
	if err := m.record(blk, res, m.try(res.Attempts), execs, msg, commit); err != nil {
		return err
	}
	return m.afterStep(blk, res)
}

// A stepCall is what the callbacks of the step being executed need: its
// block and the attempt ids given out so far (one per try, made when first
// asked for). A machine executes one step at a time, so it keeps one,
// reset by exec, and binds its callbacks once (bindCallbacks) instead of
// making closures for every step.
type stepCall struct {
	blk *isa.Block
	ids []string
}

// stepCallbacks are the Request callbacks of a machine, bound once.
type stepCallbacks struct {
	attemptID  func(int) string
	onRetry    func(attempt, exitCode int, wait time.Duration)
	onFallback func(from, to, reason string)
}

// bindCallbacks makes the machine's Request callbacks on first use.
func (m *Machine) bindCallbacks() {
	if m.callbacks.attemptID == nil {
		m.callbacks = stepCallbacks{attemptID: m.attemptID, onRetry: m.onRetry, onFallback: m.onFallback}
	}
}

// attemptID returns the id of try n (from 1) of the step being executed.
func (m *Machine) attemptID(n int) string {
	for len(m.cur.ids) < max(n, 1) {
		m.cur.ids = append(m.cur.ids, m.newID())
	}
	return m.cur.ids[max(n, 1)-1]
}

// try returns try n (from 1) of the step being executed: its number and
// its unique id.
func (m *Machine) try(n int) try {
	n = max(n, 1)
	return try{n: n, uid: m.attemptID(n)}
}

// tryOf is the number and id of the current try of step name: the step
// being executed's last try, or 1 (and no id) for a step that has no tries
// of its own (set_context, a loop, a parallel step, a skip).
func (m *Machine) tryOf(name string) (int, string) {
	if c := m.cur; c.blk != nil && c.blk.ID == name && len(c.ids) > 0 {
		return len(c.ids), c.ids[len(c.ids)-1]
	}
	return 1, ""
}

// onRetry logs a retry of the step being executed (Request.OnRetry):
// attempt is the try that failed, and the running record names the next.
func (m *Machine) onRetry(attempt, exitCode int, wait time.Duration) {
	if r := m.st.Steps[m.cur.blk.ID]; r != nil && r.Status == StepRunning {
		rec := *r
		rec.Attempts = attempt + 1
		m.setStep(m.cur.blk.ID, rec)
		// As the step's first running record: durable with the step's
		// result, and brought into state.json while the try runs.
		m.d.Deferred = true
	}
	if err := m.finish(evStepRetry(m.cur.blk.ID, m.try(attempt), exitCode, wait)); err != nil && m.lateErr == nil {
		m.lateErr = err
	}
}

// onFallback logs a provider fallback of the step being executed
// (Request.OnFallback).
func (m *Machine) onFallback(from, to, reason string) {
	if err := m.finish(evProviderFallback(m.cur.blk.ID, from, to, reason)); err != nil && m.lateErr == nil {
		m.lateErr = err
	}
}

// record stores the result of block blk's run and sets the signal.
func (m *Machine) record(blk *isa.Block, res step.Result, t try, execs int, msg msgNum, commit string) error {
	if res.HasJSON && tooDeep(res.JSON) {
		// Never saved: a state holding it could not be read back.
		res.JSON, res.HasJSON = nil, false
		res.Signal, res.Err = SigFailure, errTooDeep("the json capture")
	}
	sig := res.Signal
	if sig == "" {
		sig = SigSuccess
		if res.ExitCode != 0 || res.Err != nil {
			sig = SigFailure
		}
	}
	sig = m.reply(blk, &res, sig)
	out, cut := text.Excerpt(res.Output, outputExcerpt, res.Truncated)
	stderr, errCut := text.Excerpt(res.Stderr, outputExcerpt, false)
	dur := res.Duration.Seconds()
	r := StepResult{
		Status:          StepFailed,
		ExitCode:        res.ExitCode,
		Output:          m.mask.String(out),
		Lines:           m.maskStrings(res.Lines),
		Duration:        dur,
		Attempts:        res.Attempts,
		Truncated:       cut || res.Truncated,
		SpillStdoutPath: res.SpillStdout,
		LinesTruncated:  res.LinesTruncated,
		OutputFile:      res.OutputFile,
		Error:           stepErrorOf(res.Err, m.mask.String),
		Signal:          sig,
		Visits:          m.st.Visits[blk.ID],
		Executions:      execs,
		Provider:        res.Provider,
		Message:         msg.seq,
		MessageSub:      msg.sub,
		Commit:          commit,
		Tokens:          res.Tokens,
		Stderr:          m.mask.String(stderr),
	}
	if stepSucceeded(sig, r.Error) {
		r.Status = StepCompleted
		r.Consumed = res.Consumed
	} else if len(res.Consumed) > 0 {
		m.release(blk.ID, res.Consumed) // failed after all: consumes nothing
	}
	if res.HasJSON {
		r.JSON = m.maskValue(res.JSON)
	}
	wholeErr := ""
	if errCut {
		wholeErr = m.mask.String(res.Stderr)
	}
	if err := m.capCapture(blk.ID, &r, wholeErr); err != nil {
		r.Status, r.Signal, r.Lines, r.JSON = StepFailed, SigFailure, nil, nil
		r.Error = stepErrorOf(&source.Error{Code: source.EExec, Msg: err.Error()}, m.mask.String)
	}
	if res.Tokens != 0 || res.LinesWritten != 0 {
		m.st.Stats.TotalTokensUsed += res.Tokens
		m.st.Stats.TotalLinesWritten += res.LinesWritten
		m.d.Stats = Stats{TotalTokensUsed: res.Tokens, TotalLinesWritten: res.LinesWritten}
	}
	if len(res.Segments) > 0 {
		m.appendPayload(m.stamp(res.Segments))
	}
	if res.Session != nil && blk.Agent != "" {
		m.keepSession(blk, *res.Session)
	}
	if blk.Step != nil && blk.Step.Worker == lang.InternalUpdateChangePlan && m.cfg.RunRoot != "" {
		if plan, err := m.cfg.Host.ChangePlan(m.cfg.RunRoot); err == nil {
			m.st.ChangePlan = plan
			m.d.SetChangePlan, m.d.ChangePlan = true, plan
		}
	}
	// The step's end is the time of its event (one clock reading).
	ended := m.now()
	r.StartedAt, r.EndedAt = m.formatSpan(ended.Add(-res.Duration), ended)
	ev := evOutcome(blk.ID, t, &r)
	ev.Provider = res.Provider
	ev.Tokens, ev.Cost = res.Tokens, res.Cost
	ev.Time = ended // the step's ended_at
	// The result shares the next change's sync unless something must
	// follow it once durable (afterStep: a send's event, the moves of the
	// messages it consumed) or it belongs to a thread.
	m.d.SyncWithNext = m.thr == nil && len(r.Consumed) == 0 && blk.Kind != isa.KindSend
	return m.done(blk, r, true, ev)
}

// formatSpan returns start and end in RFC 3339 with nanoseconds, both
// cut from one string (one allocation for the two).
func (m *Machine) formatSpan(start, end time.Time) (string, string) {
	b := m.stamps.append(m.scratch[:0], start)
	n := len(b)
	b = m.stamps.append(b, end)
	m.scratch = b
	both := string(b)
	return both[:n], both[n:]
}

// stepSucceeded reports whether a step that produced sig completed: a
// custom signal from a worker that ran (SIGNAL:APPROVED) is data, not a
// failure; failures, timeouts, validation failures and coded errors are.
func stepSucceeded(sig string, e *StepError) bool {
	switch sig {
	case SigFailure, SigTimeout, SigValidationFail, SigMaxVisits:
		return false
	}
	return e == nil
}

// request builds the step.Request of block blk, substituting every
// template.
func (m *Machine) request(blk *isa.Block, execs int) (*step.Request, error) {
	s := blk.Step
	if s == nil {
		s = &isa.Step{}
	}
	sc := blockScope(blk)
	prov := scope{b: blk, passUnknown: true}
	req := &m.req
	argv := req.Argv[:0] // its array is reused too
	*req = step.Request{
		RunID:           m.st.RunID,
		Step:            blk.ID,
		Thread:          m.threadKey(),
		Iteration:       m.iteration(),
		Execution:       execs,
		Node:            m.p.Nodes[blk.Node].ID,
		Kind:            blk.Kind,
		Providers:       s.Providers,
		Worker:          s.Worker,
		OutputCapture:   s.OutputCapture,
		AllowParseError: s.AllowParseError,
		Timeout:         defaultTimeout,
		Attempts:        max(s.Attempts, 1),
		Backoff:         defaultBackoff,
		EnvAllow:        m.p.EnvAllow,
		OutputType:      s.OutputType,
		Config:          m.p.Config,
		Payload:         append([]step.Segment{}, m.st.Payload...),
		Dirs:            m.cfg.Dirs,
		RunRoot:         m.cfg.RunRoot,
		Mask:            m.mask,
		WorktreePath:    m.st.WorktreePath,
	}
	if wt := m.st.WorktreePath; wt != "" {
		// The worktree stands in for WORKSPACE: the cwd of processes and
		// the directory relative paths resolve in.
		req.Dirs.Workspace = wt
	}
	if s.Timeout > 0 {
		req.Timeout = seconds(s.Timeout)
	}
	if s.HasBackoff {
		req.Backoff = seconds(s.BackoffSec)
	}
	if blk.Agent != "" {
		a := m.agent(blk.Agent)
		if len(req.Providers) == 0 {
			req.Providers = a.Providers
		}
		if blk.Kind == isa.KindProvider {
			req.AgentInstructions, req.AgentInstructionsFile = a.Instructions, a.InstructionsFile
			req.Agent = blk.Agent
			if a.Session == lang.SessionContinue {
				req.Continue, req.Session = true, m.session(blk.Agent)
			}
		}
	}
	var err error
	sub := func(t *lang.Template) string {
		if err != nil {
			return ""
		}
		var v string
		v, err = m.substOpt(sc, t)
		return v
	}
	subAll := func(sc scope, ts []lang.Template) []string {
		if err != nil {
			return nil
		}
		var v []string
		v, err = m.substAll(sc, ts)
		return v
	}
	if s.Command != nil && err == nil {
		req.Argv, err = m.substInto(argv, sc, s.Command)
	}
	req.Prompt = sub(s.Prompt)
	req.PromptFile = sub(s.PromptFile)
	req.InputFile = sub(s.InputFile)
	// A secret in the path is masked where it enters, as a send's name is:
	// the path is kept in state.json and printed (CONTRACT 4).
	req.OutputFile = m.mask.String(sub(s.OutputFile))
	if s.OutputFile != nil && req.OutputFile == "" && err == nil {
		err = &source.Error{Code: source.EPathEscape, Msg: "output_file: path '' is empty: it names no file"}
	}
	req.CommandOverride = subAll(prov, s.CommandOverride)
	if s.Transport != nil {
		req.Transport = &step.Transport{Mode: s.Transport.Mode, ArgvTemplate: subAll(prov, s.Transport.ArgvTemplate)}
	}
	if s.AI != nil {
		req.Instructions = s.AI.Instructions
		if s.AI.OutputType != "" {
			req.OutputType = s.AI.OutputType
		}
		req.ProviderParams = m.params(prov, s.AI.ProviderParams, &err)
		if err == nil {
			req.Prompted, err = m.prompt(blk, execs)
		}
	}
	req.ProviderParams = append(req.ProviderParams, m.params(prov, s.ProviderParams, &err)...)
	// The compiler resolved model: (or provider_params.model) over the
	// agent's and the defaults', and permissions likewise.
	req.Model, req.Permissions = sub(s.Model), s.Permissions
	// The document's env for every child, then the step's own over it.
	for _, list := range [][]isa.EnvVar{m.p.Env, s.Env} {
		for _, e := range list {
			v := sub(&e.Val)
			req.Env = append(req.Env, step.EnvVar{Name: e.Name, Value: v})
		}
	}
	names := m.p.Secrets
	if s.HasSecrets {
		names = s.Secrets
	}
	for _, n := range names {
		v, ok := m.env(n)
		switch {
		case ok:
			req.Secrets = append(req.Secrets, step.EnvVar{Name: n, Value: v})
		case s.HasSecrets && err == nil:
			// Only possible with --replay, which checks no secret up front.
			err = errSecretMissing(n)
		}
	}
	if w := s.WaitFor; w != nil {
		req.WaitFor = &step.WaitFor{Glob: sub(&w.Glob), Timeout: seconds(w.TimeoutSec),
			Poll: time.Duration(w.PollMs) * time.Millisecond, MinCount: w.MinCount}
		if w.Consume && blk.Agent != "" {
			req.WaitFor.Processed = m.agent(blk.Agent).Processed
		}
	}
	if d := s.DependsOn; d != nil {
		req.DependsOn = &step.DependsOn{Required: subAll(sc, d.Required), Optional: subAll(sc, d.Optional),
			Inject: d.Inject, Instruction: d.Instruction, Position: d.Position}
	}
	if sd := s.Send; sd != nil {
		req.Send = &step.Send{To: sd.To, Inbox: m.agent(sd.To).Inbox, File: sub(sd.File), Content: sub(sd.Content), Name: sub(sd.Name)}
	}
	req.Mail = m.mail(blk)
	req.ProviderDefs = m.providerDefs(prov, &err)
	if err != nil {
		return nil, err
	}
	return req, nil
}

// params substitutes provider_params into strings; the first error is
// kept in *errp.
func (m *Machine) params(sc scope, fs []isa.Field, errp *error) []step.ProviderParam {
	var out []step.ProviderParam
	for _, f := range fs {
		if *errp != nil {
			return nil
		}
		v, err := m.tvalue(sc, f.Val)
		if err != nil {
			*errp = err
			return nil
		}
		out = append(out, step.ProviderParam{Key: f.Key, Value: render(v)})
	}
	return out
}

// providerDefs converts the program's providers.
func (m *Machine) providerDefs(sc scope, errp *error) []step.ProviderDef {
	var out []step.ProviderDef
	for _, d := range m.p.Providers {
		pd := step.ProviderDef{Name: d.Name, Command: d.Command, Defaults: m.params(sc, d.Defaults, errp), Isolated: d.Isolated}
		for _, e := range d.Env {
			v, err := m.subst(scope{}, e.Val)
			if err != nil && *errp == nil {
				*errp = err
			}
			pd.Env = append(pd.Env, step.EnvVar{Name: e.Name, Value: v})
		}
		for _, n := range d.Secrets {
			if v, ok := m.env(n); ok {
				pd.Secrets = append(pd.Secrets, step.EnvVar{Name: n, Value: v})
			}
		}
		if d.Transport != nil {
			argv, err := m.substAll(sc, d.Transport.ArgvTemplate)
			if err != nil && *errp == nil {
				*errp = err
			}
			pd.Transport = &step.Transport{Mode: d.Transport.Mode, ArgvTemplate: argv}
		}
		out = append(out, pd)
	}
	return out
}

// seconds converts seconds (fractions allowed) to a Duration; more than a
// Duration holds (about 292 years) is the longest one, never a wrapped,
// negative one.
func seconds(s float64) time.Duration {
	if ns := s * float64(time.Second); ns < math.MaxInt64 {
		return time.Duration(ns)
	}
	return math.MaxInt64
}

// iteration names where the current step runs for the header of its stderr
// log and the name of its spill file: the index of every loop iteration
// entered, outermost first ("1.0", as the console names it), else the
// parallel branch (the thread's key), else "".
func (m *Machine) iteration() string {
	if len(m.st.LoopStack) > 0 {
		return m.iterationRef()
	}
	return m.threadKey()
}
