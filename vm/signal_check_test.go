package vm_test

import (
	"strings"
	"testing"

	"smith/source"
	"smith/vm"
)

// TestCheckResumeSignal: a resume's signal must be one the block it
// re-enters names; a refusal lists them and suggests the nearest one, a
// name without its SIGNAL: prefix included.
func TestCheckResumeSignal(t *testing.T) {
	t.Parallel()
	p := compileYAML(t, `version: "1.0"
name: review
steps:
  - name: Review
    command: ["true"]
    on:
      success: {halt: true}
      failure: {error: "review failed"}
      signals: {"SIGNAL:APPROVED": {end: true}, "SIGNAL:REJECTED": {error: "no"}}
`)
	st := &vm.State{CurrentStep: "Review", HaltedBlock: "Review", IsHalted: true, Status: vm.StatusHalted}
	tests := []struct {
		name, sig, want string
	}{
		{"none", "", ""},
		{"accepted", "SIGNAL:APPROVED", ""},
		{"an outcome", "SIGNAL:FAILURE", ""},
		{"mistyped", "SIGNAL:APROVED", "did you mean 'SIGNAL:APPROVED'?"},
		{"without the prefix", "APPROVED", "did you mean 'SIGNAL:APPROVED'?"},
		{"lowercase, without the prefix", "rejected", "did you mean 'SIGNAL:REJECTED'?"},
		{"far from all", "SIGNAL:XYZZY_PLUGH", "(it accepts SIGNAL:APPROVED, SIGNAL:FAILURE"},
	}
	// A block the workflow lost is the re-entry's to report
	// (E_STATE_CORRUPT), whatever the signal.
	gone := &vm.State{CurrentStep: "Gone", HaltedBlock: "Gone", IsHalted: true, Status: vm.StatusHalted}
	if err := vm.CheckResumeSignal(p, gone, "SIGNAL:APPROVED"); err != nil {
		t.Errorf("CheckResumeSignal of a block not in the program = %v, want nil", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := vm.CheckResumeSignal(p, st, tt.sig)
			if tt.want == "" {
				if err != nil {
					t.Errorf("CheckResumeSignal(%q) = %v, want nil", tt.sig, err)
				}
				return
			}
			if source.CodeOf(err, "") != source.EUnknownSignal || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("CheckResumeSignal(%q) = %v, want E_UNKNOWN_SIGNAL containing %q", tt.sig, err, tt.want)
			}
		})
	}
}
