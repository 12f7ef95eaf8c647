package vm

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"smith/source"
	"smith/workers/step"

	"smith/isa"
)

// Messages between agents (CONTRACT 12.2), the VM's part: numbering sends
// from durable state, and consuming messages only once a step's
// completion is on disk.

// A msgNum numbers one send: seq is its NNNN, sub its number in its
// thread (0 outside threads), again that it runs again after a crash.
type msgNum struct {
	seq, sub int
	again    bool
}

// messageSeq is the message number of send step id: the one recorded for
// it when a crash cut it off while running (delivering it again replaces
// the same file), else one more than any number the run has used. In a
// thread it is the group's number and one more than the thread's sends
// under it: deterministic, whatever order the threads run in.
func (m *Machine) messageSeq(id string) msgNum {
	if old := m.st.Steps[id]; old != nil && old.Status == StepRunning && old.Message > 0 {
		return msgNum{seq: old.Message, sub: old.MessageSub, again: true}
	}
	if m.thr != nil {
		seq, sub := m.thr.g.msg, 0
		for _, r := range m.st.Steps {
			if r.Message == seq {
				sub = max(sub, r.MessageSub)
			}
		}
		return msgNum{seq: seq, sub: sub + 1}
	}
	return msgNum{seq: maxMessage(m.st.Steps) + 1}
}

// mailWorkspace is where the run's messages are: the run's worktree in an
// isolated run (also for its threads, which work in worktrees of their
// own), else WORKSPACE.
func (m *Machine) mailWorkspace() string {
	st := m.st
	if m.thr != nil {
		st = m.thr.g.root.st // its WorktreePath does not change while threads run
	}
	if st.WorktreePath != "" {
		return st.WorktreePath
	}
	return m.cfg.Dirs.Workspace
}

// mail is the step.Mail of block blk's request.
func (m *Machine) mail(blk *isa.Block) *step.Mail {
	if len(m.p.Agents) == 0 && (blk.Step == nil || blk.Step.Send == nil) {
		return nil
	}
	claimant := m.st.RunID + "/" + blk.ID
	if k := m.threadKey(); k != "" {
		claimant = m.st.RunID + "/" + blk.ID + "[" + k + "]"
	}
	return &step.Mail{Workspace: m.mailWorkspace(), Folders: agentFolders(m.p),
		Tag: step.RunTag(m.st.RunID), Claimant: claimant}
}

// afterStep does what must follow the durable record of block blk's
// result: a send's message_sent event, and the moves of the messages the
// step consumed.
func (m *Machine) afterStep(blk *isa.Block, res step.Result) error {
	r := m.st.Steps[blk.ID]
	if r == nil || r.Status != StepCompleted {
		return nil
	}
	if blk.Kind == isa.KindSend && blk.Step != nil && blk.Step.Send != nil {
		m.emit(evMessage(EvMessageSent, blk.ID, blk.Step.Send.To, res.Output))
	}
	if len(r.Consumed) > 0 {
		m.consume(blk.ID, blk.Agent, r.Consumed)
	}
	if len(m.pending) > 0 {
		return m.finish()
	}
	return nil
}

// consume carries out the moves of step id (idempotent) and reports each
// in a message_consumed event; a failure is a warning, and resume tries
// again.
func (m *Machine) consume(id, agent string, moves []step.Move) {
	dirs := m.cfg.Dirs
	dirs.Workspace = m.mailWorkspace()
	done, err := m.cfg.Host.ConsumeMessages(dirs, moves)
	for _, mv := range done {
		m.emit(evMessage(EvMessageConsumed, id, agent, mv.From))
	}
	if err != nil {
		m.emit(Event{Kind: EvMessageConsumed, Level: LevelWarning, Step: id,
			Msg: "could not move consumed messages (resume finishes it): " + err.Error()})
	}
}

// release gives back the claims of step id on the messages it would have
// consumed: the step failed after its worker succeeded (validation, a
// commit), so another step may take them.
func (m *Machine) release(id string, moves []step.Move) {
	back := make([]step.Move, 0, len(moves))
	for _, mv := range moves {
		if mv.Claim != "" {
			back = append(back, step.Move{From: mv.From, Claim: mv.Claim})
		}
	}
	dirs := m.cfg.Dirs
	dirs.Workspace = m.mailWorkspace()
	if _, err := m.cfg.Host.ConsumeMessages(dirs, back); err != nil {
		m.emit(Event{Kind: EvMessageConsumed, Level: LevelWarning, Step: id,
			Msg: "could not give back claimed messages: " + err.Error()})
	}
}

// finishConsumes completes, on resume, the moves of completed steps that a
// crash cut short.
func (m *Machine) finishConsumes() {
	for _, id := range sortedStepNames(m.st.Steps) {
		r := m.st.Steps[id]
		if r.Status != StepCompleted || len(r.Consumed) == 0 {
			continue
		}
		agent := ""
		if b := m.block(id); b != nil {
			agent = b.Agent
		}
		m.consume(id, agent, r.Consumed)
	}
}

// sortedStepNames returns the keys of steps, sorted.
func sortedStepNames(steps map[string]*StepResult) []string {
	out := make([]string, 0, len(steps))
	for k := range steps {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// agentFolders are every agent's inbox and processed folder (relative to
// WORKSPACE), created at run start.
func agentFolders(p *isa.Program) []string {
	var out []string
	for _, d := range p.Agents {
		a := (&Machine{p: p}).agent(d.Name)
		out = append(out, a.Inbox, a.Processed)
	}
	return out
}

// prepareAgents creates every agent's folders in the run's workspace (its
// worktree when it has one).
func (m *Machine) prepareAgents() error {
	if len(m.p.Agents) == 0 || m.cfg.Dirs.Workspace == "" {
		return nil
	}
	dirs := m.cfg.Dirs
	if m.st != nil && m.st.WorktreePath != "" {
		dirs.Workspace = m.st.WorktreePath
	}
	if err := m.cfg.Host.PrepareAgents(dirs, agentFolders(m.p)); err != nil {
		return &RuntimeError{Code: source.CodeOf(err, source.EStepFailed), Msg: "create the agents' inbox folders: " + err.Error()}
	}
	return nil
}

// commitStep commits what block blk changed in the run's worktree on the
// run's branch (CONTRACT 12.4) and returns the commit ("" when nothing
// changed or the run has no worktree). It runs before the step's result is
// saved, so a crash in between re-runs the step on top of its commit. A
// failed commit fails the step: nothing it did is left unrecorded.
func (m *Machine) commitStep(ctx context.Context, blk *isa.Block, res *step.Result) string {
	if m.st.WorktreePath == "" {
		return ""
	}
	c := step.Commit{
		Worktree: m.st.WorktreePath,
		Branch:   m.branch(),
		Head:     m.st.Head,
		Msg:      step.CommitMessage(blk.ID, m.st.RunID, max(res.Attempts, 1)),
		Exclude:  step.CommitExcludes(agentFolders(m.p), m.p.Config.CommitArtifacts),
		Secrets:  append(append(slices.Clone(m.p.Secrets), m.presets.Keys...), res.KeyVars...),
	}
	hash, err := m.cfg.Host.CommitStep(ctx, c)
	if hash != "" {
		m.st.Head = hash // saved with the step's result
	}
	if lc, ok := m.cfg.Host.(lineCounter); ok && hash != "" && err == nil && res.LinesWritten == 0 {
		// An agent that edits files itself reports no lines: its commit
		// says what it wrote (stats.totalLinesWritten).
		if n, lerr := lc.CommitLines(ctx, m.st.WorktreePath, hash); lerr == nil {
			res.LinesWritten = n
		}
	}
	if err != nil && res.Err == nil {
		res.Signal, res.Err = SigFailure, &source.Error{Code: source.CodeOf(err, source.EExec), Msg: "commit the changes of step '" + blk.ID + "': " + err.Error()}
		if res.ExitCode == 0 {
			res.ExitCode = 1
		}
	}
	return hash
}

// branch is the branch of the machine's worktree: the run's, or a
// thread's own (isolation: git-worktree).
func (m *Machine) branch() string {
	if t := m.thr; t != nil {
		idx := t.par
		if idx < 0 {
			idx = t.loop
		}
		if idx >= 0 && idx < len(m.p.Blocks) {
			return step.UnitBranch(m.st.RunID, m.p.Blocks[idx].ID, t.key)
		}
	}
	return step.WorktreeBranch(m.st.RunID)
}

// restoreExcludes are the paths a restore of a worktree leaves as they are:
// Smith's own folders (inboxes, processed, sending, artifacts/).
func (m *Machine) restoreExcludes() []string {
	return OwnFolders(m.p)
}

// OwnFolders are the paths, relative to a run's worktree, that hold
// Smith's own files rather than the team's work: the agents' folders
// (inbox, processed, sending, claims) and artifacts/. smithvm clean does
// not count what is in them as work left uncommitted.
func OwnFolders(p *isa.Program) []string {
	return step.CommitExcludes(agentFolders(p), false)
}

// restoreRun brings the run's worktree back to the last saved state on
// resume (CONTRACT 12.4). A run cut off (running, interrupted) has its
// branch, index and files put back to the commit its state saved, so that
// the step cut off runs again from the files of the last saved step, and a
// commit or a join's merge made after that save (a merge cut off
// included) is undone and made again. A run that stopped by itself
// (failed, halted) keeps its branch as it is: a person may have committed
// on it meanwhile. Then every thread worktree and branch that no thread
// of the state and no conflicting join needs is removed.
func (m *Machine) restoreRun(ctx context.Context, tree step.RunTree) error {
	st := m.st
	if tree.Path == "" {
		return nil
	}
	if st.Base == "" {
		st.Base = tree.Base
	}
	cutOff := st.Status == StatusRunning || st.Status == StatusInterrupted
	if cutOff && st.Head != "" {
		if err := m.cfg.Host.RestoreWorktree(ctx, tree.Path, step.WorktreeBranch(st.RunID), st.Head, m.restoreExcludes()); err != nil {
			return &RuntimeError{Code: source.EExec, Msg: "restore the run's worktree: " + err.Error()}
		}
	} else {
		st.Head = tree.Head
	}
	var keep []string
	if st.Phase == PhaseParallel {
		for k := range st.Threads {
			keep = append(keep, st.CurrentStep+"/"+k)
		}
	}
	for name, r := range st.Steps {
		for _, k := range r.JoinKept {
			keep = append(keep, name+"/"+k)
		}
	}
	m.cfg.Host.SweepUnits(ctx, m.cfg.Dirs, tree.Path, st.RunID, keep)
	return nil
}

// takeNotices turns the conflict notices other runs left for this one
// since the last step into CONFLICT segments (manifests) or conflict
// events (YAML), saved with the step's start (CONTRACT 12.4).
func (m *Machine) takeNotices(blk *isa.Block) {
	if m.cfg.RunRoot == "" {
		return
	}
	ns, err := m.cfg.Host.Notices(m.cfg.RunRoot, m.st.ConflictNotices)
	if err != nil || len(ns) == 0 {
		return
	}
	m.st.ConflictNotices += len(ns)
	for _, n := range ns {
		if m.p.Format == "manifest" {
			m.appendPayload(m.stamp([]step.Segment{{Type: step.SegConflict, Content: n.Notice()}}))
			continue
		}
		m.emit(Event{Kind: EvConflict, Level: LevelWarning, Step: blk.ID,
			Msg: fmt.Sprintf("run '%s' changes the same files: %s", n.Run, strings.Join(n.Paths, ", "))})
	}
}
