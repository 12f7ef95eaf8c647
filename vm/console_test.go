package vm_test

import (
	"encoding/json"
	"testing"

	"smith/vm"
)

func TestConsole(t *testing.T) {
	two := 2
	one := 1
	tests := []struct {
		name string
		ev   vm.Event
		want string
	}{
		{"run started", vm.Event{Kind: vm.EvRunStarted, RunID: "r1", Workflow: "demo"}, "INFO: Run r1 started (workflow 'demo')."},
		{"run resumed", vm.Event{Kind: vm.EvRunResumed, RunID: "r1", Step: "B"}, "INFO: Run r1 resumed at 'B'."},
		{"step started", vm.Event{Kind: vm.EvStepStarted, Step: "Analyze"}, "INFO: Step 'Analyze' starting."},
		{"step completed", vm.Event{Kind: vm.EvStepCompleted, Step: "Analyze", Duration: 45.24, HasDuration: true}, "INFO: Step 'Analyze' completed successfully in 45.2s."},
		{"step failed", vm.Event{Kind: vm.EvStepFailed, Step: "Prep", ExitCode: &two, Duration: 0.06, HasDuration: true}, "ERROR: Step 'Prep' failed with exit code 2 in 0.1s."},
		{"step failed message", vm.Event{Kind: vm.EvStepFailed, Step: "Use", Msg: "reference '${context.x}' cannot be resolved"}, "ERROR: Step 'Use' failed: reference '${context.x}' cannot be resolved."},
		{"step failed with a CLI's escapes", vm.Event{Kind: vm.EvStepFailed, Step: "Gen", Code: "E_EXEC", Msg: "provider 'claude' failed: API Error: \x1b]0;PWNED\x07\x1b]52;c;Zm9v\x07 busy"},
			`ERROR: Step 'Gen' failed: E_EXEC: provider 'claude' failed: API Error: \x1b]0;PWNED\x07\x1b]52;c;Zm9v\x07 busy.`},
		{"run failed with escapes", vm.Event{Kind: vm.EvRunFailed, RunID: "r1", Msg: "Gen: \x1b[2J\u009b"}, `ERROR: Run r1 failed: Gen: \x1b[2J\u009b.`},
		{"step signal", vm.Event{Kind: vm.EvStepSignal, Step: "Gen", Signal: "SIGNAL:NEEDS_CLARIFICATION", Duration: 3, HasDuration: true}, "INFO: Step 'Gen' finished with SIGNAL:NEEDS_CLARIFICATION in 3.0s."},
		{"retry", vm.Event{Kind: vm.EvStepRetry, Step: "Fetch", Attempt: 1, ExitCode: &one, Wait: 2}, "WARNING: Step 'Fetch' attempt 1 failed with exit code 1; retrying in 2s."},
		{"retry fraction", vm.Event{Kind: vm.EvStepRetry, Step: "Fetch", Attempt: 2, ExitCode: &one, Wait: 0.5}, "WARNING: Step 'Fetch' attempt 2 failed with exit code 1; retrying in 0.5s."},
		{"skipped", vm.Event{Kind: vm.EvStepSkipped, Step: "Report"}, "INFO: Step 'Report' skipped (condition false)."},
		{"max visits", vm.Event{Kind: vm.EvStepMaxVisits, Step: "Fix", Visits: 3}, "WARNING: Step 'Fix' reached max_visits (3); not run."},
		{"run completed", vm.Event{Kind: vm.EvRunCompleted, RunID: "r1"}, "INFO: Run r1 completed."},
		{"run failed", vm.Event{Kind: vm.EvRunFailed, RunID: "r1", Msg: "Prep failed."}, "ERROR: Run r1 failed: Prep failed."},
		{"error: handler", vm.Event{Kind: vm.EvFailAction, Step: "Prep", Msg: "Prep failed"}, "ERROR: Prep failed"},
		{"run halted", vm.Event{Kind: vm.EvRunHalted, RunID: "r1", Step: "Block:Review"}, "WARNING: Run r1 halted at 'Block:Review' awaiting resume."},
		{"run interrupted", vm.Event{Kind: vm.EvRunInterrupted, RunID: "r1", Step: "B"}, "WARNING: Run r1 interrupted at 'B'; state saved."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.ev.Console(); got != tt.want {
				t.Errorf("Console() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEventJSON(t *testing.T) {
	code := 0
	tests := []struct {
		name string
		ev   vm.Event
		want string
	}{
		{"with duration", vm.Event{Kind: vm.EvStepCompleted, RunID: "r", Seq: 3, Level: "INFO", Step: "A", AttemptID: 1, AttemptUID: "a1", ExitCode: &code, Duration: 0, HasDuration: true},
			`{"timestamp":"0001-01-01T00:00:00Z","run_id":"r","event_seq":3,"level":"INFO","step":"A","attempt_id":1,"attempt_uid":"a1","event":"step_completed","exit_code":0,"duration":0}`},
		{"without", vm.Event{Kind: vm.EvRunCompleted, RunID: "r", Seq: 4, Level: "INFO"},
			`{"timestamp":"0001-01-01T00:00:00Z","run_id":"r","event_seq":4,"level":"INFO","event":"run_completed"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.ev)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("Marshal() = %s, want %s", b, tt.want)
			}
		})
	}
}
