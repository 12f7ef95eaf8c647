package serve

import (
	"io"
	"sort"

	"smith/compiler"
	"smith/isa"
	"smith/vm"
)

// BlockStatus maps each block (or step) of the run to the status its graph
// shows: the step result's status, "halted" for the block a halted run
// waits at and "running" for the current step of a running run (one not
// cut off: its step reads interrupted). st is the state as shown
// (vm.State.Shown). It is what `smithvm graph` and the viewer colour by.
func BlockStatus(st *vm.State) map[string]string {
	status := make(map[string]string, len(st.Steps)+1)
	for n, r := range st.Steps {
		status[n] = r.Status
	}
	if st.IsHalted && st.HaltedBlock != "" {
		status[st.HaltedBlock] = vm.StatusHalted
	} else if st.Status == vm.StatusRunning && st.CurrentStep != "" && status[st.CurrentStep] != vm.StepInterrupted {
		status[st.CurrentStep] = vm.StepRunning
	}
	return status
}

// WriteDOT writes the DOT of prog coloured by the run's state as shown
// (vm.State.Shown): the output of `smithvm graph`.
func WriteDOT(prog *isa.Program, st *vm.State, w io.Writer) error {
	return compiler.DOT(prog, w, compiler.DOTOptions{Status: BlockStatus(st)})
}

// StepOrder lists the run's step results in the program's order (prog may
// be nil: a workflow changed or removed since the run), then any others
// sorted, so every result shows. depth maps a step to how deep in loop
// bodies it is.
func StepOrder(st *vm.State, prog *isa.Program) (names []string, depth map[string]int) {
	seen := map[string]bool{}
	depth = map[string]int{}
	if prog != nil {
		for _, b := range prog.Blocks {
			if _, ok := st.Steps[b.ID]; ok && !seen[b.ID] {
				names = append(names, b.ID)
				seen[b.ID] = true
				for q := b; q.Parent != 0; q = prog.Blocks[q.Parent-1] {
					depth[b.ID]++
				}
			}
		}
	}
	var rest []string
	for n := range st.Steps {
		if !seen[n] {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	return append(names, rest...), depth
}

// bigGraph is the number of blocks above which the run page first shows
// the overview of a program with several Nodes (one box per Node): Graphviz
// in the browser lays out a few hundred blocks in well under a second, but
// 2,000 blocks take several seconds.
const bigGraph = 300
