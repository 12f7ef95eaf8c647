package vm_test

import (
	"testing"

	"smith/vm"
)

func TestIterationRef(t *testing.T) {
	for _, tt := range []struct {
		stack []vm.LoopFrame
		want  string
	}{
		{nil, ""},
		{[]vm.LoopFrame{{Loop: "Each", Index: 1}}, "1"},
		{[]vm.LoopFrame{{Loop: "Outer", Index: 0}, {Loop: "Inner", Index: 2}}, "0.2"},
	} {
		if got := (&vm.State{LoopStack: tt.stack}).IterationRef(); got != tt.want {
			t.Errorf("IterationRef of %v = %q, want %q", tt.stack, got, tt.want)
		}
	}
}
