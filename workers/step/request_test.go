package step_test

import (
	"encoding/json"
	"errors"
	"testing"

	"smith/isa"
	"smith/lang"
	"smith/workers/step"
)

func TestFailed(t *testing.T) {
	t.Parallel()
	cause := errors.New("cause")
	tests := []struct {
		name string
		exit int
		err  error
	}{
		{"not run", step.ExitNotRun, cause},
		{"not found", step.ExitNotFound, cause},
		{"no error", 3, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := step.Failed(tt.exit, tt.err)
			if got.Signal != lang.SigFailure || got.ExitCode != tt.exit || got.Err != tt.err {
				t.Errorf("Failed(%d, %v) = signal %q exit %d err %v, want %q %d %v",
					tt.exit, tt.err, got.Signal, got.ExitCode, got.Err, lang.SigFailure, tt.exit, tt.err)
			}
			if got.Attempts != 0 || got.Output != "" || got.HasJSON {
				t.Errorf("Failed(%d, %v) = %+v, want nothing but signal, exit code and error", tt.exit, tt.err, got)
			}
		})
	}
}

// TestExitCodes: the exit codes of a step that ran no process to its end are
// the documented ones (docs/providers.md): -1 for a step that never started
// a process, 127 for a command that could not be started.
func TestExitCodes(t *testing.T) {
	t.Parallel()
	if step.ExitNotRun != -1 || step.ExitNotFound != 127 {
		t.Errorf("ExitNotRun, ExitNotFound = %d, %d, want -1, 127", step.ExitNotRun, step.ExitNotFound)
	}
}

func TestCallKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, step, thread, want string
	}{
		{"plain step", "Ask", "", "Ask"},
		{"loop thread", "Work", "2", "Work[2]"},
		{"branch thread", "Work", "docs", "Work[docs]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := &step.Request{Step: tt.step, Thread: tt.thread}
			if got := req.CallKey(); got != tt.want {
				t.Errorf("Request{Step: %q, Thread: %q}.CallKey() = %q, want %q", tt.step, tt.thread, got, tt.want)
			}
		})
	}
}

// TestKindZero: a zeroed Request names no kind, so a Runner cannot mistake
// it for a command (or any other kind) and run it.
func TestKindZero(t *testing.T) {
	t.Parallel()
	var zero isa.BlockKind
	for _, k := range []isa.BlockKind{isa.KindCommand, isa.KindProvider, isa.KindInternal, isa.KindSend} {
		if k == zero {
			t.Errorf("kind %d is the zero Kind, want every kind non-zero", k)
		}
	}
}

// TestSegmentJSON: the field names of a payload segment and of a consumed
// message are what a manifest command worker reads on stdin and what
// state.json keeps (CONTRACT 12.5).
func TestSegmentJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"segment", step.Segment{ID: "s1", Type: step.SegCodeOutput, Content: "x", Timestamp: "t"},
			`{"id":"s1","type":"CODE_OUTPUT","content":"x","timestamp":"t"}`},
		{"move", step.Move{From: "inbox/0001-a", To: "processed/0001-a"}, `{"from":"inbox/0001-a","to":"processed/0001-a"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(tt.v)
			if err != nil || string(b) != tt.want {
				t.Errorf("json.Marshal(%+v) = %s, %v, want %s", tt.v, b, err, tt.want)
			}
		})
	}
}
