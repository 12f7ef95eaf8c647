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
type coroutine struct{ cur workflow.Context }

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
	workflow.Go(g.co.cur, func(ctx workflow.Context) {
		defer func() { g.live-- }()
		g.co.cur = ctx
		f()
	})
}

func (g *group) Wait() {
	g.co.block(func(ctx workflow.Context) {
		_ = workflow.Await(ctx, func() bool { return g.live == 0 })
	})
}
