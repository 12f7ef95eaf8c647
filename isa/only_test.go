package isa

import (
	"strings"
	"testing"

	"smith/source"
)

// TestOnlyGolden: the listing of Only(step) for top-level blocks of demo
// and full (testdata/only/NAME.STEP.dis.golden): entry at the block's
// start, one END_STEP appended, the block's table sending every signal to
// it, run_step in the data line. The listing assembles back to the same
// program and Only leaves its receiver as it was.
func TestOnlyGolden(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		p    *Program
		step string
	}{
		{"demo", demoProgram(), "Report"},
		{"full", fullProgram(), "Each"},
	} {
		t.Run(tt.name+"."+tt.step, func(t *testing.T) {
			before := disasm(t, tt.p)
			q, err := tt.p.Only(tt.step)
			if err != nil {
				t.Fatalf("Only(%q) = %v", tt.step, err)
			}
			got := disasm(t, q)
			golden(t, "testdata/only/"+tt.name+"."+tt.step+".dis.golden", []byte(got))
			back, err := Assemble("only.asm", strings.NewReader(got))
			if err != nil {
				t.Fatalf("Assemble(listing of Only(%q)) = %v", tt.step, err)
			}
			if again := disasm(t, back); again != got {
				t.Errorf("Only(%q) does not assemble back:\n%s", tt.step, again)
			}
			if back.RunStep != tt.step || back.Hash() != q.Hash() {
				t.Errorf("assembled RunStep = %q, hash equal %t; want %q, true", back.RunStep, back.Hash() == q.Hash(), tt.step)
			}
			if after := disasm(t, tt.p); after != before {
				t.Errorf("Only(%q) changed its receiver", tt.step)
			}
		})
	}
}

// TestOnlyRefuses: a block inside a loop and an unknown name are E_USAGE
// with the message smithvm run-step prints.
func TestOnlyRefuses(t *testing.T) {
	t.Parallel()
	for _, step := range []string{"Body", "Nope"} {
		q, err := fullProgram().Only(step)
		want := "no top-level step '" + step + "' to run alone"
		if q != nil || err == nil || source.CodeOf(err, "") != source.EUsage || err.Error() != want {
			t.Errorf("Only(%q) = %v, %v; want nil, E_USAGE: %s", step, q, err, want)
		}
	}
}
