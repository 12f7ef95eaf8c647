package main

import (
	"smith/isa"
	"smith/vm"
	"smith/workers"
	"smith/workers/text"
)

// runMasker masks what smithvm prints from run st's repository (smithvm
// diff, status --diff, the viewer's diffs): the values of the run's
// secrets (its program's declared secrets, as this environment has them) and of the presets' own variables, as the run
// masks everything it writes (CONTRACT 5). The repository is not the
// run's output alone: a line that the run's steps removed from the
// starting commit may hold a value no step's commit could add. With no
// state, or a workflow that no longer loads, the presets' variables alone.
func (e *env) runMasker(st *vm.State) *text.Masker {
	if st == nil || st.WorkflowPath == "" {
		return e.maskerOf(nil)
	}
	return e.maskerOf(loadProgram(e, st))
}

// maskerOf is runMasker for a run whose workflow is compiled already (prog;
// nil when it no longer loads).
func (e *env) maskerOf(prog *isa.Program) *text.Masker {
	var vals []string
	if prog != nil {
		// A step's secrets are among these (the compiler checks it).
		for _, n := range prog.Secrets {
			// A value too short to be a secret (the run refuses to
			// start with one) would mask that text everywhere.
			if v, ok := e.lookup(n); ok && vm.SecretLen(v) >= vm.MinSecretLen {
				vals = append(vals, v)
			}
		}
	}
	vals = append(vals, workers.Local{}.PresetVars().Values(e.lookup)...)
	return text.NewMasker(vals)
}
