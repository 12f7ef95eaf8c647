package vm_test

import (
	"context"
	"fmt"
	"time"

	"smith/isa"
	"smith/lang"
	"smith/source"
	"smith/vm"
	"smith/workers"
	"smith/workers/step"
)

// okRunner answers every request with success.
type okRunner struct{}

func (okRunner) Run(ctx context.Context, req *step.Request) step.Result {
	return step.Result{Signal: "SIGNAL:SUCCESS", Output: "done", Duration: 1200 * time.Millisecond}
}

// Example runs a one-step program: EXEC, then DISPATCH takes the
// SIGNAL:SUCCESS transition to END.
func Example() {
	p := &isa.Program{
		Name:  "demo",
		Nodes: []isa.Node{{ID: "main"}},
		Blocks: []isa.Block{{ID: "Build", Kind: isa.KindCommand, Start: 0, Dispatch: 1,
			Step: &isa.Step{Command: []lang.Template{lang.Lit("make")}}}},
		Tables: []isa.Table{{Block: 0, Entries: []isa.TableEntry{{Signal: "SIGNAL:SUCCESS", PC: 2}}}},
		Code: []isa.Instr{
			{Op: isa.OpExec, A: 0},
			{Op: isa.OpDispatch, A: 0},
			{Op: isa.OpEnd},
		},
		Pos: make([]source.Pos, 3),
	}
	m, err := vm.New(p, vm.Config{
		Registry: okRunner{},
		Host:     workers.Local{},
		RunID:    "r1",
		Events:   func(e vm.Event) { fmt.Println(e.Console()) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	st, err := m.Run(context.Background())
	fmt.Println(st.Status, st.Steps["Build"].Output, err)
	// Output:
	// INFO: Run r1 started (workflow 'demo').
	// INFO: Step 'Build' starting.
	// INFO: Step 'Build' completed successfully in 1.2s.
	// INFO: Run r1 completed.
	// completed done <nil>
}
