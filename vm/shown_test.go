package vm_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"smith/vm"
)

// TestShown: a step (or thread) still recorded running reads interrupted
// once the run no longer runs (it ended, or no process drives it: cut
// off), and running while the run runs; the state itself keeps running.
func TestShown(t *testing.T) {
	t.Parallel()
	state := func(status string) *vm.State {
		return &vm.State{Status: status, CurrentStep: "Each", Steps: map[string]*vm.StepResult{
			"A": {Status: vm.StepCompleted}, "Each": {Status: vm.StepRunning}},
			Threads: map[string]*vm.Thread{"0": {Status: vm.ThreadCompleted, Steps: map[string]*vm.StepResult{"B": {Status: vm.StepCompleted}}},
				"1": {Status: vm.StatusRunning, Steps: map[string]*vm.StepResult{"B": {Status: vm.StepRunning}}}}}
	}
	tests := []struct {
		name   string
		status string
		cutOff bool
		want   string
	}{
		{"running", vm.StatusRunning, false, "A=completed Each=running [0]=completed [0]B=completed [1]=running [1]B=running"},
		{"cut off", vm.StatusRunning, true, "A=completed Each=interrupted [0]=completed [0]B=completed [1]=interrupted [1]B=interrupted"},
		{"interrupted", vm.StatusInterrupted, false, "A=completed Each=interrupted [0]=completed [0]B=completed [1]=interrupted [1]B=interrupted"},
		{"failed", vm.StatusFailed, false, "A=completed Each=interrupted [0]=completed [0]B=completed [1]=interrupted [1]B=interrupted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := state(tt.status)
			if got := statuses(st.Shown(tt.cutOff)); got != tt.want {
				t.Errorf("Shown(%v) of a %s run = %s, want %s", tt.cutOff, tt.status, got, tt.want)
			}
			if got, orig := statuses(st), statuses(state(tt.status)); got != orig {
				t.Errorf("Shown changed the state: %s, want %s", got, orig)
			}
		})
	}
}

// statuses lists the step and thread statuses of st, sorted.
func statuses(st *vm.State) string {
	var out []string
	for n, r := range st.Steps {
		out = append(out, n+"="+r.Status)
	}
	for k, th := range st.Threads {
		out = append(out, fmt.Sprintf("[%s]=%s", k, th.Status))
		for n, r := range th.Steps {
			out = append(out, fmt.Sprintf("[%s]%s=%s", k, n, r.Status))
		}
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}
