package vm

import (
	"fmt"
	"io/fs"
	"math"
	"slices"
	"testing"
	"time"

	"smith/lang"
	"smith/source"
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

// TestLinesKept: ${steps.S.lines} never gives a partial list: the whole
// list or a line past the kept ones of a step whose lines capture was cut
// at 1 MiB, and the lines of an output the state keeps an excerpt of, are
// E_LINES_TRUNCATED; a kept line, and lines kept whole, resolve.
func TestLinesKept(t *testing.T) {
	t.Parallel()
	m := &Machine{st: &State{Steps: map[string]*StepResult{
		"Cut":      {Status: StepCompleted, Output: "a\nb", Lines: []string{"a", "b"}, Truncated: true, LinesTruncated: true},
		"Whole":    {Status: StepCompleted, Output: "a\nb", Lines: []string{"a", "b"}},
		"Excerpt":  {Status: StepCompleted, Output: "a\nb\n[truncated]", Truncated: true},
		"LongErr":  {Status: StepCompleted, Output: "a\nb\n[truncated]", Truncated: true, CapturePath: "/nonexistent/capture.json"},
		"TextOnly": {Status: StepCompleted, Output: "a\nb"},
	}}, captures: map[string]*cachedCapture{}, cfg: Config{Host: noFiles{}}}
	tests := []struct {
		name string
		path []lang.PathElem
		want string // the value, or the error's code
	}{
		{"cut, whole list", []lang.PathElem{{Key: "Cut"}, {Key: "lines"}}, "E_LINES_TRUNCATED"},
		{"cut, kept line", []lang.PathElem{{Key: "Cut"}, {Key: "lines"}, {IsIndex: true, Index: 1}}, "b"},
		{"cut, line past the kept ones", []lang.PathElem{{Key: "Cut"}, {Key: "lines"}, {IsIndex: true, Index: 2}}, "E_LINES_TRUNCATED"},
		{"whole", []lang.PathElem{{Key: "Whole"}, {Key: "lines"}}, "[a b]"},
		{"excerpt of a text output", []lang.PathElem{{Key: "Excerpt"}, {Key: "lines"}}, "E_LINES_TRUNCATED"},
		{"excerpt with a capture file for stderr", []lang.PathElem{{Key: "LongErr"}, {Key: "lines"}, {IsIndex: true, Index: 0}}, "E_LINES_TRUNCATED"},
		{"text output kept whole", []lang.PathElem{{Key: "TextOnly"}, {Key: "lines"}}, "[a b]"},
	}
	for _, tt := range tests {
		v, ok, err := m.stepVar(tt.path)
		got := fmt.Sprint(v)
		if err != nil {
			got = string(source.CodeOf(err, ""))
		} else if !ok {
			got = "missing"
		}
		if got != tt.want {
			t.Errorf("stepVar(%s) = %s (%v), want %s", tt.name, got, err, tt.want)
		}
	}
}

// noFiles is a Host whose files all are missing (its other methods are not
// called here).
type noFiles struct{ Host }

func (noFiles) ReadFile(path string) ([]byte, error) { return nil, fs.ErrNotExist }
