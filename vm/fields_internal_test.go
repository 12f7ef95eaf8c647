package vm

import (
	"math"
	"slices"
	"testing"
	"time"

	"smith/lang"
)

// TestStepFieldTable: the VM resolves exactly the step fields smithc check
// accepts, one table (lang.StepFields) for both (issue 8, point 12).
func TestStepFieldTable(t *testing.T) {
	var have []string
	for f := range stepFieldResolvers {
		have = append(have, f)
	}
	slices.Sort(have)
	want := slices.Clone(lang.StepFields[:])
	slices.Sort(want)
	if !slices.Equal(have, want) {
		t.Fatalf("VM resolvers %v, checker's table %v: they must be the same", have, want)
	}
	m := &Machine{st: &State{Steps: map[string]*StepResult{"S": {Status: StepCompleted, Output: "o", Stderr: "e",
		Signal: SigSuccess, Attempts: 2, StartedAt: "t0", EndedAt: "t1", Lines: []string{"a"}, JSON: map[string]any{"k": 1.0}}}},
		captures: map[string]*cachedCapture{}}
	for _, f := range lang.StepFields {
		if _, ok, err := m.stepVar([]lang.PathElem{{Key: "S"}, {Key: f}}); !ok || err != nil {
			t.Errorf("${steps.S.%s} does not resolve (%v)", f, err)
		}
	}
	for f, want := range map[string]any{"signal": SigSuccess, "attempts": 2, "stderr": "e", "started_at": "t0", "ended_at": "t1"} {
		if v, _, _ := m.stepVar([]lang.PathElem{{Key: "S"}, {Key: f}}); v != want {
			t.Errorf("${steps.S.%s} = %v, want %v", f, v, want)
		}
	}
}

// TestSecondsNeverOverflow: a timeout, backoff or wait of more seconds
// than a Duration holds is the longest Duration, never a negative one (a
// timeout: 1e12 that silently became the 300 s default, a backoff_sec:
// 1e12 printed as "retrying in -9223372036.854776s" and not waited).
func TestSecondsNeverOverflow(t *testing.T) {
	for _, s := range []float64{1e10, 1e12, 1e300} {
		if d := seconds(s); d != math.MaxInt64 {
			t.Errorf("seconds(%g) = %v, want the longest Duration", s, d)
		}
	}
	if d := seconds(1.5); d != 1500*time.Millisecond {
		t.Errorf("seconds(1.5) = %v", d)
	}
}
