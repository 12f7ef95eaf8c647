package source

import (
	"errors"
	"fmt"
	"testing"
)

func TestCodeOf(t *testing.T) {
	inner := Errorf(EPathEscape, "path '%s' is absolute", "/x")
	tests := []struct {
		name string
		err  error
		want Code
	}{
		{"nil", nil, EExec},
		{"plain", errors.New("boom"), EExec},
		{"coded", inner, EPathEscape},
		{"wrapped by fmt", fmt.Errorf("read: %w", inner), EPathEscape},
		{"wrapped by Wrap", Wrap(EExec, "input_file", inner), EPathEscape},
		{"Wrap of a plain error", Wrap(EExec, "input_file", errors.New("denied")), EExec},
	}
	for _, tt := range tests {
		if got := CodeOf(tt.err, EExec); got != tt.want {
			t.Errorf("%s: CodeOf = %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestErrorText(t *testing.T) {
	e := &Error{Code: EStateCorrupt, Msg: "state of run 'r' is corrupt", Err: errors.New("bad json"), Hint: "restore it"}
	if got, want := e.Error(), "state of run 'r' is corrupt: bad json; restore it"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(e, e.Err) {
		t.Error("Error does not unwrap to its cause")
	}
}
