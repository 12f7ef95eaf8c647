package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"smith/source"
	"smith/workers/step"
)

// TestWireErrRoundTrip: an error answered by the files or host activity
// reaches the VM with what it tells apart: its code (or none, so the VM
// gives it the code it would locally), a missing file, a merge conflict.
func TestWireErrRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		name     string
		err      error
		code     source.Code // CodeOf(err, E_EXEC) on the workflow's side
		notExist bool
		branch   bool
	}{
		{"none", nil, "", false, false},
		{"coded", &source.Error{Code: source.EPathEscape, Msg: "x escapes"}, source.EPathEscape, false, false},
		{"uncoded", errors.New("mkdir: permission denied"), source.EExec, false, false},
		{"missing file", fmt.Errorf("open a.md: %w", fs.ErrNotExist), source.EExec, true, false},
		{"merge conflict", &step.BranchError{Code: source.EMergeConflict, Msg: "conflict in a.go"}, source.EMergeConflict, false, true},
	} {
		b, err := json.Marshal(HostOutput{Path: "p", wireErr: wireErrOf(tt.err)})
		if err != nil {
			t.Fatal(err)
		}
		var out HostOutput
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		got := out.err()
		if (got == nil) != (tt.err == nil) {
			t.Fatalf("%s: err() = %v, want an error: %v", tt.name, got, tt.err != nil)
		}
		if got == nil {
			continue
		}
		var be *step.BranchError
		if c := source.CodeOf(got, source.EExec); c != tt.code || errors.Is(got, fs.ErrNotExist) != tt.notExist || errors.As(got, &be) != tt.branch {
			t.Errorf("%s: %v: code %s, not-exist %v, branch %v; want %s %v %v", tt.name, got, c, errors.Is(got, fs.ErrNotExist), errors.As(got, &be), tt.code, tt.notExist, tt.branch)
		}
	}
}
