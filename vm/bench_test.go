package vm_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"smith/isa"
	"smith/vm"
	"smith/workers"
	"smith/workers/step"
)

// stampRunner succeeds at once and records when each call happened.
type stampRunner struct{ stamps []time.Time }

func (s *stampRunner) Run(ctx context.Context, req *step.Request) step.Result {
	s.stamps = append(s.stamps, time.Now())
	return step.Result{Signal: vm.SigSuccess, Output: req.Argv[0], Attempts: 1}
}

// BenchmarkLoop10k runs a 10,000-iteration for_each whose Checkpoint
// marshals every Delta, and reports the cost per iteration of the first and
// the last 1,000 iterations: persistence must not grow with the run.
func BenchmarkLoop10k(b *testing.B) {
	const n, window = 10000, 1000
	items := make([]isa.TValue, n)
	for i := range items {
		items[i] = str("item-" + strconv.Itoa(i))
	}
	p := build(b, N{ID: "main", Blocks: []B{
		{ID: "L", Items: list(items...), Body: []B{{ID: "Work", Step: cmd("${item}"), On: ok}}, On: ok},
	}})
	var first, last time.Duration
	for b.Loop() {
		sr := &stampRunner{stamps: make([]time.Time, 0, n)}
		var bytes int
		m, err := vm.New(p, vm.Config{Registry: sr, Host: workers.Local{}, MaxSteps: 2 * n, Checkpoint: func(d *vm.Delta, st *vm.State) error {
			out, err := json.Marshal(d)
			bytes += len(out)
			return err
		}})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
		first += sr.stamps[window].Sub(sr.stamps[0])
		last += sr.stamps[n-1].Sub(sr.stamps[n-1-window])
	}
	b.ReportMetric(float64(first.Nanoseconds())/float64(b.N*window), "ns/iter-first1k")
	b.ReportMetric(float64(last.Nanoseconds())/float64(b.N*window), "ns/iter-last1k")
}
