package engine

import (
	"go.temporal.io/sdk/workflow"

	"smith/vm"
)

// coroutine is the workflow context of the coroutine that runs now. The
// VM calls its worker registry and its Host from whichever of its threads
// runs, and a coroutine must block on its own context; coroutines run one
// at a time and switch only where one blocks (in block, below), so each
// makes its context current again when it wakes.
type coroutine struct {
	cur workflow.Context
	// blobs is the fleet's blob store: the threads' snapshots of the
	// run's files merge there at the join (nil: no snapshots).
	blobs *Blobs
	// memo is the run's memo, flushed before the run waits for an
	// activity (memo.go); nil without one.
	memo *memo
	// hist counts the run's local activities for the history's length.
	hist *history
}

// beforeWait flushes the memo's pending change: the run is about to wait
// on an activity, which may take long.
func (c *coroutine) beforeWait() {
	if c.memo != nil {
		_ = c.memo.flush()
	}
}

// chain is the run's files as one thread (or the run's main thread) sees
// them: the ref of its last snapshot (snapshot.go), in the coroutine's
// context under filesKey.
type chain struct{ ref string }

type filesKey struct{}

// chainOf is the chain of the coroutine whose context is ctx.
func chainOf(ctx workflow.Context) *chain {
	c, _ := ctx.Value(filesKey{}).(*chain)
	return c
}

// block runs f, which may block, with the running coroutine's context.
func (c *coroutine) block(f func(ctx workflow.Context)) {
	ctx := c.cur
	f(ctx)
	c.cur = ctx
}

// group is the vm.ThreadGroup of workflow code: each thread of a parallel
// step is a workflow coroutine (workflow.Go), started in the VM's order,
// so its activities are scheduled, and their results applied, in an order
// that replays exactly.
type group struct {
	co             *coroutine
	limit, running int
	live           int
	// parent is the chain of the coroutine that forked the threads, base
	// its snapshot then; chains are the threads' own, in the VM's order.
	parent *chain
	base   string
	chains []*chain
}

func (c *coroutine) threads(limit int) vm.ThreadGroup {
	return &group{co: c, limit: max(limit, 1)}
}

func (g *group) Acquire() {
	g.co.block(func(ctx workflow.Context) {
		_ = workflow.Await(ctx, func() bool { return g.running < g.limit })
	})
	g.running++
}

func (g *group) Release() { g.running-- }

func (g *group) Go(f func()) {
	g.live++
	ctx := g.co.cur
	if p := chainOf(ctx); p != nil {
		if g.parent == nil {
			g.parent, g.base = p, p.ref
		}
		own := &chain{ref: g.base}
		g.chains = append(g.chains, own)
		ctx = workflow.WithValue(ctx, filesKey{}, own)
	}
	workflow.Go(ctx, func(ctx workflow.Context) {
		defer func() { g.live-- }()
		g.co.cur = ctx
		f()
	})
}

func (g *group) Wait() {
	g.co.block(func(ctx workflow.Context) {
		_ = workflow.Await(ctx, func() bool { return g.live == 0 })
	})
	if g.parent == nil || g.co.blobs == nil {
		return
	}
	refs := make([]string, len(g.chains))
	for i, c := range g.chains {
		refs[i] = c.ref
	}
	// A pure function of blobs named by their content: replays alike. A
	// store that cannot be read fails the workflow task, which Temporal
	// retries.
	ref, err := mergeFiles(g.co.blobs, g.base, refs)
	if err != nil {
		panic("the threads' files: " + err.Error())
	}
	g.parent.ref = ref
	g.parent, g.chains = nil, nil
}
