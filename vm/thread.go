package vm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"smith/isa"
	"smith/lang"
	"smith/source"
	"smith/workers/step"
)

// Threads (docs/isa.md, "Threads"): a parallel for_each runs each
// iteration, and a parallel step each branch, on a machine of its own (a
// thread) with its own pc, loop stack, step results and journal key. The
// threads share the program, the configuration and the run's State, which
// only their commits change, one at a time, under the group's lock; the
// main machine waits for them, then joins their sub-states in index (or
// branch name) order in one change.

// A thread is what the machine of one thread knows about itself.
type thread struct {
	key   string // the journal key: the iteration index or the branch name
	g     *group
	loop  int // the parallel loop's block index, or -1 (a branch)
	depth int // len(LoopStack) of an iteration: its own frame is on top
	par   int // the parallel block's index, or -1 (an iteration)
}

// A group is the threads of one parallel step.
type group struct {
	mu   sync.Mutex
	root *Machine // the main machine; its State changes only under mu
	// stop: a thread failed or took _loop_break, so no new one starts.
	stop bool
	// msg is the message number of every send of the group's threads:
	// one past the run's at the fork. A thread numbers its own sends
	// under it (MessageSub), so names do not depend on timing.
	msg int
	// tickets numbers the commits of the group's threads (under mu);
	// queue holds the events of the commits from ticket head on that have
	// not left the machine yet, in that order (under emitMu), so that
	// events leave in the order of their seqs, each after its change is
	// durable (commit).
	tickets int
	emitMu  sync.Mutex
	queue   []queuedEvents
	head    int
}

// queuedEvents are the events of one commit of a thread; ready once the
// commit is durable (or failed: then evs is nil).
type queuedEvents struct {
	evs   []Event
	ready bool
}

// maxMessage is the highest message number in steps.
func maxMessage(steps map[string]*StepResult) int {
	n := 0
	for _, r := range steps {
		n = max(n, r.Message)
	}
	return n
}

// errThreadEnd ends a thread's run loop.
var errThreadEnd = errors.New("end of thread")

// isolated reports whether the run has its own worktree (isolation:
// git-worktree), so that each thread gets one too.
func (m *Machine) isolated() bool {
	return m.p.Config.Isolation == lang.IsolationWorktree && m.st.WorktreePath != ""
}

// mergeUnits merges the branches of the threads keys that ran into the
// run's branch, in that order (isolation: git-worktree): see joinUnits.
func (m *Machine) mergeUnits(ctx context.Context, blk *isa.Block, keys []string) (string, *StepError, []string) {
	if !m.isolated() {
		return "", nil, nil
	}
	var ran []string
	for _, k := range keys {
		if m.st.Threads[k] != nil {
			ran = append(ran, k)
		}
	}
	return m.joinUnits(ctx, blk, ran)
}

// joinUnits merges the branches of the threads keys into the run's
// branch, in that order, and then removes them. It returns the run's
// commit after the merges. A conflict stops there and is the step's error
// (E_MERGE_CONFLICT); the run's branch and worktree are put back as they
// were before the join (the merges that went through are undone), every
// branch of keys is kept and returned, so that resume retries the join
// from them (CONTRACT 12.4).
func (m *Machine) joinUnits(ctx context.Context, blk *isa.Block, keys []string) (string, *StepError, []string) {
	for _, k := range keys {
		if err := m.cfg.Host.MergeUnit(ctx, m.st.WorktreePath, m.st.RunID, blk.ID, k); err != nil {
			var be *step.BranchError
			if errors.As(err, &be) {
				var kept []string
				if be.Code == source.EMergeConflict {
					kept = slices.Clone(keys)
					if m.st.Head != "" {
						if err := m.cfg.Host.RestoreWorktree(ctx, m.st.WorktreePath, step.WorktreeBranch(m.st.RunID), m.st.Head, m.restoreExcludes()); err != nil {
							return "", stepErrorOf(err, m.mask.String), kept
						}
					}
				}
				return "", &StepError{Code: string(be.Code), Message: m.mask.String(be.Msg)}, kept
			}
			return "", stepErrorOf(err, m.mask.String), nil
		}
	}
	// The branches are removed only once the join's result is saved
	// (finishPar): a crash before that merges them again on resume.
	m.joined = slices.Clone(keys)
	head, _ := m.cfg.Host.Head(ctx, m.st.WorktreePath)
	return head, nil, nil
}

// retryJoinAt is the join of parallel step blk again, after a resume of
// the run that failed in it with a conflict: the threads' results are
// in the state since that join, and their branches are kept, so only the
// merges run (a person may have resolved the conflict on the branches
// meanwhile). It reports whether it did; a conflict again fails the step
// the same way, keeping the branches.
func (m *Machine) retryJoinAt(ctx context.Context, blk *isa.Block) (bool, error) {
	prev := m.st.Steps[blk.ID]
	if m.retryJoin != blk.ID || prev == nil || len(prev.JoinKept) == 0 || !m.isolated() {
		return false, nil
	}
	m.retryJoin = ""
	kept := slices.Clone(prev.JoinKept)
	started := m.now().Format(time.RFC3339Nano)
	m.emit(evStepStarted(blk.ID, try{}))
	// The running record keeps the branches to merge: a crash during the
	// retry retries again.
	m.setStep(blk.ID, StepResult{Status: StepRunning, Visits: m.st.Visits[blk.ID], StartedAt: started, JoinKept: kept})
	if err := m.finish(); err != nil {
		return true, err
	}
	commit, se, still := m.joinUnits(ctx, blk, kept)
	return true, m.finishPar(blk, started, se, commit, still)
}

// maxParallel is how many threads of a step with parallelism n (0: as
// many as there are) may run at once: n capped by --max-parallel, which by
// default caps nothing (CONTRACT 12.3: agent steps wait on the network, not
// on this machine's CPUs).
func (m *Machine) maxParallel(n, count int) int {
	if n <= 0 {
		n = count
	}
	if limit := m.cfg.MaxParallel; limit > 0 {
		n = min(n, limit)
	}
	return max(1, n)
}

// forkPC returns the pc of the instruction that starts the threads of block
// b (its PAR_BEGIN, or the LOOP_BEGIN of a parallel loop).
func (m *Machine) forkPC(b *isa.Block) (uint32, bool) {
	idx, ok := m.blockIdx[b.ID]
	if !ok {
		return 0, false
	}
	for pc := b.Start; pc <= b.Dispatch && int(pc) < len(m.p.Code); pc++ {
		in := m.p.Code[pc]
		if int(in.A) != idx {
			continue
		}
		if in.Op == isa.OpParBegin || in.Op == isa.OpLoopBegin && b.Loop != nil && b.Loop.Parallel > 1 {
			return pc, true
		}
	}
	return 0, false
}

// takeRejoin reports whether block blk continues its threads after a
// resume (rather than starting them).
func (m *Machine) takeRejoin(blk *isa.Block) bool {
	if m.rejoin && m.st.CurrentStep == blk.ID && m.st.Phase == PhaseParallel {
		m.rejoin = false
		return true
	}
	return false
}

// threadKey is the machine's thread key, "" on the main thread.
func (m *Machine) threadKey() string {
	if m.thr == nil {
		return ""
	}
	return m.thr.key
}

// threadLoop reports whether a loop instruction of loop a ends this
// machine's thread (the iteration's own loop, at its depth).
func (m *Machine) threadLoop(a uint32) bool {
	t := m.thr
	return t != nil && t.loop == int(a) && len(m.st.LoopStack) == t.depth
}

// commit ends a thread's finish (d holds its registers): under the
// group's lock it numbers the thread's events from the run's event_seq,
// tags the change with the thread's key, applies it to the run's State (to
// State.Threads[key]) and saves it (Machine.save: the Checkpoint, then the
// events). The journal's order of thread changes depends on timing; each
// thread's sub-state does not.
//
// With Config.CheckpointLater the group's lock is released before the
// change is durable: the threads that commit meanwhile share one sync, and
// the thread waits for its own before it goes on; its events are queued
// under the lock and leave in that order once their changes are durable.
func (t *thread) commit(m *Machine, d *Delta) error {
	d.Thread, m.d = t.key, &Delta{}
	g := t.g
	g.mu.Lock()
	root := g.root.st
	for i := range m.pending {
		root.EventSeq++
		m.pending[i].Seq = root.EventSeq
	}
	d.EventSeq = root.EventSeq
	d.Seq = root.Seq + 1
	root.Apply(d)
	if d.Status == ThreadFailed || d.Status == ThreadBroken {
		g.stop = true // set with the change, so nothing starts after it
	}
	if m.cfg.CheckpointLater == nil {
		defer g.mu.Unlock()
		return m.save(d, root)
	}
	wait, err := m.cfg.CheckpointLater(d, root)
	if err != nil {
		g.mu.Unlock()
		m.pending = m.pending[:0]
		return fmt.Errorf("save state of run %s: %w", root.RunID, err)
	}
	ticket := g.tickets
	g.tickets++
	g.emitMu.Lock()
	g.queue = append(g.queue, queuedEvents{evs: slices.Clone(m.pending)})
	g.emitMu.Unlock()
	m.pending = m.pending[:0]
	runID := root.RunID
	g.mu.Unlock()
	err = wait()
	g.emitted(m, ticket, err == nil)
	if err != nil {
		return fmt.Errorf("save state of run %s: %w", runID, err)
	}
	return nil
}

// emitted marks the commit ticket durable (ok) or failed, and sends the
// events of every commit up to the first one still waiting, in order.
func (g *group) emitted(m *Machine, ticket int, ok bool) {
	g.emitMu.Lock()
	defer g.emitMu.Unlock()
	q := &g.queue[ticket-g.head]
	q.ready = true
	if !ok {
		q.evs = nil // the events of a change that was not saved are dropped
	}
	n := 0
	for n < len(g.queue) && g.queue[n].ready {
		if m.cfg.Events != nil {
			for _, ev := range g.queue[n].evs {
				m.cfg.Events(ev)
			}
		}
		n++
	}
	g.queue = g.queue[n:]
	g.head += n
}

// loopStackDelta copies a loop stack for a Delta into dst (whose array it
// reuses): items only in the top frame, and only when the change pushed it.
// The result is never nil (an empty stack is written as []).
func loopStackDelta(dst, stack []LoopFrame, pushed bool) []LoopFrame {
	out := append(dst[:0], stack...)
	if out == nil {
		out = []LoopFrame{}
	}
	for i := range out {
		if !pushed || i != len(out)-1 {
			out[i].Items = nil
		}
	}
	return out
}

// threadEnd ends this machine's thread with status (completed, failed or
// broken): an iteration's record and a failure's reason go with its last
// change.
func (m *Machine) threadEnd(status string, se *StepError) error {
	t := m.thr
	if t.loop >= 0 {
		blk := &m.p.Blocks[t.loop]
		f := &m.st.LoopStack[len(m.st.LoopStack)-1]
		rs := StepCompleted
		if status == ThreadFailed {
			rs = StepFailed
		}
		rec := m.iterationRecord(blk, f, rs)
		m.d.ThreadRecord = &rec
	}
	if status == ThreadFailed && se == nil {
		se = &StepError{Code: string(source.EStepFailed), Message: fmt.Sprintf("step '%s' failed", m.st.CurrentStep)}
		if r := m.st.Steps[m.st.CurrentStep]; r != nil && r.Error != nil {
			se = &StepError{Code: r.Error.Code, Message: fmt.Sprintf("step '%s' failed: %s", m.st.CurrentStep, r.Error.Message)}
		}
	}
	m.st.Status = status
	m.d.ThreadError = se
	if err := m.finish(); err != nil {
		return err
	}
	return errThreadEnd
}

// branchEnd is BRANCH_END and BRANCH_FAIL of parallel block a.
func (m *Machine) branchEnd(a uint32, status string) error {
	if m.thr == nil || m.thr.par != int(a) {
		return m.internal(fmt.Sprintf("%s of block '%s' outside its branch", isa.OpBranchEnd, m.p.Blocks[a].ID))
	}
	return m.threadEnd(status, nil)
}

// threadAbort is a thread's runtime error (E_STEP_BUDGET, E_NO_TRANSITION,
// ...): the thread stays as it is in the state, so resume runs its current
// step again, and the main machine ends the run with the error.
func (m *Machine) threadAbort(code source.Code, msg string) error {
	m.pending, m.d = m.pending[:0], &Delta{}
	return &RuntimeError{Code: code, Msg: m.mask.String(msg), Pos: m.pos()}
}

// newThread returns the machine of thread key, whose state st the caller
// built.
func (m *Machine) newThread(g *group, key string, loop, par int, st *State) *Machine {
	c := &Machine{p: m.p, cfg: m.cfg, max: m.max, mask: m.mask, hash: m.hash,
		blockIdx: m.blockIdx, entryAt: m.entryAt, bodyAll: m.bodyAll,
		st: st, d: &Delta{}, idBase: m.idBase, executed: m.executed, captures: map[string]*cachedCapture{},
		thr: &thread{key: key, g: g, loop: loop, par: par, depth: len(st.LoopStack)}}
	c.schemas, c.schemaErr = m.schemaSet()
	return c
}

// threadState builds the State a thread starts (or continues) from: the
// run's State as it is at the fork, with the thread's own sub-state, when
// it has one, laid over it. base is the thread's loop stack at its start.
// Call with the group's lock held.
func (m *Machine) threadState(key string, base []LoopFrame) (*State, bool) {
	root := m.st
	clear(m.owned) // the thread's state shares every result
	st := &State{
		RunID: root.RunID, WorkflowName: root.WorkflowName, WorkflowPath: root.WorkflowPath,
		ProgramHash: root.ProgramHash, Status: StatusRunning, StartedAt: root.StartedAt, RunStep: root.RunStep,
		Phase: PhaseStart, Context: root.Context, Payload: slices.Clone(root.Payload),
		Steps: maps.Clone(root.Steps), ReturnStack: []ReturnFrame{}, LoopStack: base,
		Visits: maps.Clone(root.Visits), WorktreePath: root.WorktreePath, Head: root.Head, ChangePlan: root.ChangePlan,
		ConflictNotices: root.ConflictNotices, EventSeq: root.EventSeq, Seq: root.Seq,
		Sessions: maps.Clone(root.Sessions),
	}
	st.init()
	t := root.Threads[key]
	if t == nil {
		return st, false
	}
	st.CurrentStep, st.Phase, st.Signal = t.CurrentStep, t.Phase, t.Signal
	maps.Copy(st.Steps, t.Steps)
	if t.Context != nil {
		st.Context = t.Context
	}
	st.Payload = append(st.Payload, t.Payload...)
	maps.Copy(st.Visits, t.Visits)
	st.LoopStack = slices.Clone(t.LoopStack)
	for i := range st.LoopStack {
		if i < len(base) && st.LoopStack[i].Items == nil && st.LoopStack[i].Loop == base[i].Loop {
			st.LoopStack[i].Items = base[i].Items
		}
	}
	if t.WorktreePath != "" {
		st.WorktreePath = t.WorktreePath
	}
	if t.Head != "" {
		st.Head = t.Head
	}
	return st, true
}

// A threadSpec says how to start one thread: its key, its start pc and
// loop stack.
type threadSpec struct {
	key  string
	pc   uint32
	base []LoopFrame
}

// runThreads runs the threads of block blk (at most limit at once) until
// every started one has ended. Threads that ended before a crash are not
// run again; threads that were running are, from their own current step;
// after a failure or a _loop_break no new thread starts. It returns the
// run's error when a thread's could not be handled in the join (an
// interrupt, a runtime error, a failed save).
func (m *Machine) runThreads(ctx context.Context, blk *isa.Block, specs []threadSpec, loop, par, limit int) error {
	g := &group{root: m, msg: maxMessage(m.st.Steps) + 1}
	st := m.st
	ended := func(t *Thread) bool { return t != nil && t.Status != StatusRunning }
	for _, s := range specs {
		if t := st.Threads[s.key]; ended(t) && t.Status != ThreadCompleted {
			g.stop = true
		}
	}
	tg := m.threadGroup(limit)
	errs := make([]error, len(specs))
	for i, s := range specs {
		g.mu.Lock()
		t := st.Threads[s.key]
		skip := ended(t) || (g.stop && t == nil) || ctx.Err() != nil
		g.mu.Unlock()
		if skip {
			continue
		}
		tg.Acquire()
		g.mu.Lock()
		if t == nil && g.stop || ctx.Err() != nil {
			g.mu.Unlock()
			tg.Release()
			continue
		}
		tst, resumed := m.threadState(s.key, slices.Clone(s.base))
		g.mu.Unlock()
		c := m.newThread(g, s.key, loop, par, tst)
		if m.isolated() {
			wt, err := m.unitWorktree(ctx, blk, s.key, tst, resumed)
			if err != nil {
				tg.Release()
				errs[i] = &RuntimeError{Code: source.EExec, Msg: err.Error()}
				break
			}
			tst.WorktreePath = wt
		}
		pc := s.pc
		if resumed {
			var err error
			if pc, err = c.reentry(); err != nil {
				tg.Release()
				errs[i] = err
				break
			}
		} else if e, ok := m.entryAt[pc]; ok {
			tst.CurrentStep = m.p.Blocks[e.block].ID
		}
		tg.Go(func() {
			defer tg.Release()
			_, err := c.loop(ctx, pc)
			errs[i] = err
			if err != nil || c.st.Status == ThreadFailed || c.st.Status == ThreadBroken {
				g.mu.Lock()
				g.stop = true
				g.mu.Unlock()
			}
		})
	}
	tg.Wait()
	if ctx.Err() != nil {
		return m.interrupted()
	}
	for _, err := range errs {
		if err == nil {
			continue
		}
		var re *RuntimeError
		if errors.As(err, &re) {
			if re.Code == source.EInterrupted {
				return m.interrupted()
			}
			return m.abort(re.Code, fmt.Sprintf("step '%s': %s", blk.ID, re.Msg))
		}
		return err
	}
	return nil
}

// unitWorktree returns the worktree of thread key of parallel step blk
// (isolation: git-worktree): a new one at the run's commit for a thread
// that starts; for a thread that continues after a crash its own,
// repaired when a crash left it half made, and put back to the commit its
// state saved (tst.Head), so that its step cut off runs again from the
// files of its last saved step (CONTRACT 12.4).
func (m *Machine) unitWorktree(ctx context.Context, blk *isa.Block, key string, tst *State, resumed bool) (string, error) {
	wt, err := m.cfg.Host.UnitWorktree(ctx, m.cfg.Dirs, m.st.WorktreePath, m.st.RunID, blk.ID, key, m.st.Head, !resumed)
	if err != nil || !resumed || tst.Head == "" {
		return wt, err
	}
	branch := step.UnitBranch(m.st.RunID, blk.ID, key)
	if err := m.cfg.Host.RestoreWorktree(ctx, wt, branch, tst.Head, m.restoreExcludes()); err != nil {
		return "", fmt.Errorf("restore the worktree of %s: %w", branch, err)
	}
	return wt, nil
}

// threadGroup returns the ThreadGroup of a parallel step that runs at most
// limit threads at once: Config.Threads's, or goroutines.
func (m *Machine) threadGroup(limit int) ThreadGroup {
	if m.cfg.Threads != nil {
		return m.cfg.Threads(limit)
	}
	return &goGroup{sem: make(chan struct{}, limit)}
}

// goGroup is the local engine's ThreadGroup: a goroutine per thread.
type goGroup struct {
	sem chan struct{}
	wg  sync.WaitGroup
}

func (g *goGroup) Acquire()    { g.sem <- struct{}{} }
func (g *goGroup) Release()    { <-g.sem }
func (g *goGroup) Go(f func()) { g.wg.Go(f) }
func (g *goGroup) Wait()       { g.wg.Wait() }

// parLoop is LOOP_BEGIN of a parallel for_each: it starts (or, after a
// resume, continues) one thread per item, joins them, and goes on at disp
// (the loop's dispatch).
func (m *Machine) parLoop(ctx context.Context, a, disp uint32) (uint32, error) {
	blk := &m.p.Blocks[a]
	if done, err := m.retryJoinAt(ctx, blk); done {
		return disp, err
	}
	if !m.takeRejoin(blk) {
		if empty, err := m.openLoop(blk, a, PhaseParallel); empty || err != nil {
			return disp, err
		}
	}
	f, err := m.top(blk)
	if err != nil {
		return 0, err
	}
	specs := make([]threadSpec, f.Total)
	for i := range specs {
		base := slices.Clone(m.st.LoopStack)
		top := &base[len(base)-1]
		top.Index, top.Last, top.Elapsed = i, "", 0
		specs[i] = threadSpec{key: strconv.Itoa(i), pc: blk.Loop.Body, base: base}
	}
	if err := m.runThreads(ctx, blk, specs, int(a), -1, m.maxParallel(blk.Loop.Parallel, f.Total)); err != nil {
		return 0, err
	}
	return disp, m.joinLoop(ctx, blk, a)
}

// joinLoop merges the iterations of parallel loop blk in index order: their
// records, the body's results of the highest index run, their context
// changes, payload segments and visits; then the loop completes (or fails,
// when an iteration failed) in one change.
func (m *Machine) joinLoop(ctx context.Context, blk *isa.Block, a uint32) error {
	st := m.st
	f, err := m.top(blk)
	if err != nil {
		return err
	}
	keys := make([]string, f.Total)
	for i := range keys {
		keys[i] = strconv.Itoa(i)
	}
	last, failed := m.mergeThreads(keys)
	for _, k := range keys {
		if t := st.Threads[k]; t != nil && t.Record != nil {
			st.appendIteration(blk.ID, *t.Record)
			m.d.Iterations = append(m.d.Iterations, IterationChange{Loop: blk.ID, Record: *t.Record})
		}
	}
	m.keepSteps(a, last)
	st.LoopStack = slices.Clone(st.LoopStack[:len(st.LoopStack)-1])
	se, commit, kept := m.joinOutcome(ctx, blk, keys, failed, "iteration "+failed)
	return m.finishPar(blk, f.Started, se, commit, kept)
}

// mergeThreads merges the context changes, payload segments and visit
// counts of the threads keys, in that order, into the run's State and the
// change being built. It returns the last key that ran and the first that
// failed ("" when none).
func (m *Machine) mergeThreads(keys []string) (last, failed string) {
	st := m.st
	ctx := st.Context
	inc := map[string]int{}
	for _, k := range keys {
		t := st.Threads[k]
		if t == nil {
			continue
		}
		last = k
		if t.Status == ThreadFailed && failed == "" {
			failed = k
		}
		ctx = m.mergeContext(ctx, t)
		if len(t.Payload) > 0 {
			m.appendPayload(slices.Clone(t.Payload))
		}
		for b, n := range t.Visits {
			inc[b] += n - st.Visits[b]
		}
	}
	if !sameMap(ctx, st.Context) {
		m.setContextMap(ctx)
	}
	for b, n := range inc {
		if n == 0 {
			continue
		}
		if m.d.Visits == nil {
			m.d.Visits = map[string]int{}
		}
		st.Visits[b] += n
		m.d.Visits[b] = st.Visits[b]
	}
	return last, failed
}

// mergeContext lays what thread t set in its context over dst: the value
// the thread ends with at each path its set_context steps set ("cfg.a"),
// parent paths first, as the same steps run one after another would leave
// it; so threads that set different keys of one map (cfg.a, cfg.b) all
// keep theirs, and a thread that sets a key back to the value it had at
// the fork still sets it. dst is never changed in place (it may be the
// run's context): it is copied at the first change, and the result is
// dst itself when the thread set nothing.
func (m *Machine) mergeContext(dst map[string]any, t *Thread) map[string]any {
	var paths []string
	for name, r := range t.Steps {
		if i, ok := m.blockIdx[name]; ok && r != nil && r.Status == StepCompleted {
			for _, f := range m.p.Blocks[i].Set {
				paths = append(paths, f.Key)
			}
		}
	}
	slices.Sort(paths) // a parent path before the paths under it
	out := dst
	for _, path := range slices.Compact(paths) {
		v, ok := contextAt(t.Context, path)
		if !ok {
			continue // a later set_context of a parent path replaced it
		}
		if sameMap(out, dst) {
			out = cloneMap(dst)
		}
		if mv, isMap := v.(map[string]any); isMap {
			v = cloneMap(mv) // the thread's maps are never changed
		}
		SetPath(out, path, v)
	}
	return out
}

// contextAt is the value at dotted path in context c.
func contextAt(c map[string]any, path string) (any, bool) {
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := c[p].(map[string]any)
		if !ok {
			return nil, false
		}
		c = next
	}
	v, ok := c[parts[len(parts)-1]]
	return v, ok
}

// keepSteps records the results of the steps in block a's body that the
// threads keys left, in that order.
func (m *Machine) keepSteps(a uint32, keys ...string) {
	for _, k := range keys {
		if t := m.st.Threads[k]; t != nil {
			for _, name := range m.bodyAll[a] {
				if r := t.Steps[name]; r != nil {
					m.setStep(name, *r)
				}
			}
		}
	}
}

// sameMap reports whether a and b are the same map (not equal ones).
func sameMap(a, b map[string]any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// finishPar records the result of parallel step blk after its join:
// completed, or failed with se (kept: the threads whose branches a
// conflicting join kept); started is when it began (RFC 3339).
func (m *Machine) finishPar(blk *isa.Block, started string, se *StepError, commit string, kept []string) error {
	st := m.st
	dur := 0.0
	if t, err := time.Parse(time.RFC3339Nano, started); err == nil {
		dur = m.now().Sub(t).Seconds()
	}
	status, sig := StepCompleted, SigSuccess
	r := StepResult{Status: status, Duration: dur, Attempts: 1, Signal: sig, Visits: st.Visits[blk.ID], StartedAt: started, Commit: commit}
	if se != nil {
		r.Status, r.Signal, r.ExitCode, r.Error, r.JoinKept = StepFailed, SigFailure, 1, se, kept
	}
	// The highest message number any thread sent keeps later sends
	// numbered past it (the threads' own results are not all kept).
	for _, t := range st.Threads {
		r.Message = max(r.Message, maxMessage(t.Steps))
	}
	st.Threads = nil
	m.d.DropThreads = true
	if commit != "" {
		st.Head = commit
	}
	joined := m.joined
	m.joined = nil
	if err := m.done(blk, r, true, evOutcome(blk.ID, try{}, &r)); err != nil {
		return err
	}
	for _, k := range joined {
		m.cfg.Host.RemoveUnit(context.Background(), m.cfg.Dirs, st.WorktreePath, st.RunID, blk.ID, k)
	}
	return nil
}

// parBegin is PAR_BEGIN: it starts (or, after a resume, continues) one
// thread per branch of parallel block a, joins them in branch name order
// and goes on at disp (the block's dispatch).
func (m *Machine) parBegin(ctx context.Context, a, disp uint32) (uint32, error) {
	blk := &m.p.Blocks[a]
	if m.thr != nil || blk.Par == nil {
		return 0, m.internal(fmt.Sprintf("parallel step '%s' inside a thread", blk.ID))
	}
	if done, err := m.retryJoinAt(ctx, blk); done {
		return disp, err
	}
	if !m.takeRejoin(blk) {
		m.reset(append([]string{blk.ID}, m.bodyAll[a]...))
		m.emit(evStepStarted(blk.ID, try{}))
		// The step's duration is its wall time, across a resume too.
		m.setStep(blk.ID, StepResult{Status: StepRunning, Visits: m.st.Visits[blk.ID],
			StartedAt: m.now().Format(time.RFC3339Nano)})
		m.st.Threads = nil
		m.enter(blk.ID, PhaseParallel, m.st.Signal)
		if err := m.finish(); err != nil {
			return 0, err
		}
	}
	started := ""
	if r := m.st.Steps[blk.ID]; r != nil {
		started = r.StartedAt
	}
	specs := make([]threadSpec, len(blk.Par.Branches))
	keys := make([]string, len(specs))
	for i, br := range blk.Par.Branches {
		specs[i] = threadSpec{key: br.Name, pc: br.Start, base: slices.Clone(m.st.LoopStack)}
		keys[i] = br.Name
	}
	if err := m.runThreads(ctx, blk, specs, -1, int(a), m.maxParallel(blk.Par.Max, len(specs))); err != nil {
		return 0, err
	}
	_, failed := m.mergeThreads(keys)
	m.keepSteps(a, keys...)
	se, commit, kept := m.joinOutcome(ctx, blk, keys, failed, "branch '"+failed+"'")
	return disp, m.finishPar(blk, started, se, commit, kept)
}

// joinOutcome is the error of a join (the thread failed, named by what, or
// else a merge conflict of the threads' worktrees) and the commit the
// threads' work was merged into, and the threads whose branches a
// conflict kept.
func (m *Machine) joinOutcome(ctx context.Context, blk *isa.Block, keys []string, failed, what string) (*StepError, string, []string) {
	var se *StepError
	if failed != "" {
		se = &StepError{Code: string(source.EStepFailed), Message: what + " failed"}
		if t := m.st.Threads[failed]; t != nil && t.Error != nil {
			se.Code = endCode(t.Error)
			se.Message += ": " + t.Error.Message
		}
	}
	commit, merr, kept := m.mergeUnits(ctx, blk, keys)
	if se == nil {
		se = merr
	}
	return se, commit, kept
}
