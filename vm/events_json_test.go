package vm_test

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"smith/vm"
)

// reflectEvent is the encoding Event.MarshalJSON replaced: the fields by
// reflection, duration last and only when HasDuration.
func reflectEvent(e vm.Event) ([]byte, error) {
	type plain vm.Event
	var out struct {
		plain
		Duration *float64 `json:"duration,omitempty"`
	}
	out.plain = plain(e)
	if e.HasDuration {
		d := e.Duration
		out.Duration = &d
	}
	return json.Marshal(out)
}

// TestEventMarshalJSONMatchesReflection checks that the hand-written
// encoding of an event is byte for byte that of encoding/json, for every
// field set and unset and for strings and numbers that need escapes or an
// exponent.
func TestEventMarshalJSONMatchesReflection(t *testing.T) {
	code := 3
	zero := 0
	ts := time.Date(2026, 11, 24, 8, 50, 1, 123456789, time.FixedZone("X", 3600))
	tests := []struct {
		name string
		ev   vm.Event
	}{
		{"empty", vm.Event{}},
		{"step started", vm.Event{Time: ts, RunID: "run-1", Seq: 7, Level: vm.LevelInfo, Step: "A", AttemptID: 1, AttemptUID: "A#1", Kind: vm.EvStepStarted}},
		{"step completed", vm.Event{Time: ts, RunID: "r", Seq: 8, Level: vm.LevelInfo, Step: "A", Kind: vm.EvStepCompleted, ExitCode: &zero, HasDuration: true, Duration: 0.001234}},
		{"zero duration", vm.Event{Kind: "k", HasDuration: true}},
		{"duration unset", vm.Event{Kind: "k", Duration: 5}},
		{"tiny and huge floats", vm.Event{Kind: "k", HasDuration: true, Duration: 1e-9, Wait: 1e21}},
		{"every field", vm.Event{Time: ts, RunID: "r", Seq: 1, Level: vm.LevelError, Step: "S", AttemptID: 2, AttemptUID: "S#2", Kind: vm.EvStepFailed,
			ExitCode: &code, Msg: "failed", Traceback: []string{"a", "b <c>"}, Workflow: "w", Code: "E_X", Signal: "FAIL",
			Attempt: 2, Wait: 1.5, Visits: 10, Provider: "p", Next: "q", Agent: "ag", Path: "x/y", Thread: "0", Iteration: "1.2", Tokens: 42, Cost: 0.00028000000000000003, HasDuration: true, Duration: 2}},
		{"html only", vm.Event{Kind: "k", Msg: "a <b> & c", Step: "x>y"}},
		{"escapes", vm.Event{Kind: "k", Msg: "quote \" back \\ tab \t nl \n <html> & \x01 \x7f", Step: "é ü 日本", Path: "bad \xff utf8", Thread: "\u2028"}},
		{"negative", vm.Event{Kind: "k", Seq: -1, Attempt: -2, Visits: -3, Wait: -0.5, ExitCode: &code, HasDuration: true, Duration: math.SmallestNonzeroFloat64}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := reflectEvent(tt.ev)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(tt.ev)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("json.Marshal(event) =\n%s\nwant\n%s", got, want)
			}
			direct, err := tt.ev.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if string(direct) != string(want) {
				t.Errorf("MarshalJSON =\n%s\nwant\n%s", direct, want)
			}
		})
	}
}
