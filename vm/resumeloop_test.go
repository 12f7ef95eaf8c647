package vm_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"smith/vm"
	"smith/workers/step"
)

const failLoopWorkflow = `version: "1.0"
name: failloop
strict_flow: false
steps:
  - name: Each
    for_each:
      items: [a, b, c, d, e, f]
      parallel: %d
      steps:
        - name: Work
          command: ["work", "${item}"]
    on: {success: {goto: _end}, failure: {error: "loop failed"}}
`

// TestResumeFailedLoopCrash: a for_each (serial, parallel) fails at one
// iteration; its resume is killed at every change in turn and resumed
// again: the iterations that completed before the failure never run
// again, and the loop ends with every iteration's record in index order.
func TestResumeFailedLoopCrash(t *testing.T) {
	for _, par := range []int{1, 2} {
		t.Run(fmt.Sprint("parallel", par), func(t *testing.T) { resumeFailedLoopCrash(t, par) })
	}
}

// itemWorker is a parWorker that counts the runs of each item.
func itemWorker() (*parWorker, func(item string) int) {
	var mu sync.Mutex
	runs := map[string]int{}
	w := &parWorker{before: func(req *step.Request) {
		mu.Lock()
		runs[req.Argv[1]]++
		mu.Unlock()
	}}
	return w, func(item string) int {
		mu.Lock()
		defer mu.Unlock()
		return runs[item]
	}
}

func resumeFailedLoopCrash(t *testing.T, par int) {
	p := compileYAML(t, fmt.Sprintf(failLoopWorkflow, par))
	first := &parRec{}
	m, err := vm.New(p, first.config(&parWorker{fail: map[string]bool{"c": true}}))
	if err != nil {
		t.Fatal(err)
	}
	failed, _ := m.Run(context.Background())
	if failed == nil || failed.Status != vm.StatusFailed {
		t.Fatal("the first run did not fail")
	}
	var done []string
	for _, it := range failed.Steps["Each"].Iterations {
		if it.Status == vm.StepCompleted {
			done = append(done, fmt.Sprint(it.Item))
		}
	}
	if len(done) == 0 {
		t.Fatal("no iteration completed before the failure")
	}
	start := failed.Seq
	for kill := start + 1; ; kill++ {
		crashed := &parRec{killAt: kill, deltas: slices.Clone(first.deltas)}
		w1, runs1 := itemWorker()
		m, err := vm.New(p, crashed.config(w1))
		if err != nil {
			t.Fatal(err)
		}
		st, err := m.Resume(context.Background(), crashed.rebuilt(t), vm.ResumeOptions{})
		last := err == nil
		if !last {
			w2, runs2 := itemWorker()
			m, err = vm.New(p, (&parRec{}).config(w2))
			if err != nil {
				t.Fatal(err)
			}
			if st, err = m.Resume(context.Background(), crashed.rebuilt(t), vm.ResumeOptions{}); err != nil {
				t.Fatalf("kill at %d: resume: %v", kill, err)
			}
			for _, k := range done {
				if runs2(k) > 0 {
					t.Errorf("kill at %d: iteration %s completed before the failure and ran again after the crash", kill, k)
				}
			}
		}
		for _, k := range done {
			if runs1(k) > 0 {
				t.Errorf("kill at %d: iteration %s completed before the failure and ran again", kill, k)
			}
		}
		r := st.Steps["Each"]
		if st.Status != vm.StatusCompleted || r.IterationsTotal != 6 || len(r.Iterations) != 6 {
			t.Fatalf("kill at %d: status %s, %d iterations (%d inline)", kill, st.Status, r.IterationsTotal, len(r.Iterations))
		}
		for i, it := range r.Iterations {
			if it.Index != i || it.Status != vm.StepCompleted {
				t.Errorf("kill at %d: iteration record %d is index %d, %s", kill, i, it.Index, it.Status)
			}
		}
		if last {
			break
		}
	}
}
