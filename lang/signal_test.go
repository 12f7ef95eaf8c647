package lang

import (
	"regexp"
	"testing"
)

func TestDispatch(t *testing.T) {
	tests := []struct {
		name    string
		entries []string // the block's transition keys
		sig     string
		want    string // the key taken, "" for none
	}{
		{"exact", []string{SigSuccess, SigFailure}, SigSuccess, SigSuccess},
		{"timeout falls to failure", []string{SigFailure, SigFailDefault}, SigTimeout, SigFailure},
		{"timeout's own first", []string{SigTimeout, SigFailure}, SigTimeout, SigTimeout},
		{"then the default", []string{SigSuccess, SigFailDefault}, SigFailure, SigFailDefault},
		{"custom to default", []string{SigFailDefault}, "SIGNAL:CUSTOM", SigFailDefault},
		{"only timeout falls to failure", []string{SigFailure}, SigSkipped, ""},
		{"none", nil, SigSuccess, ""},
	}
	for _, tt := range tests {
		got, ok := Dispatch(tt.sig, func(s string) (string, bool) {
			for _, e := range tt.entries {
				if e == s {
					return e, true
				}
			}
			return "", false
		})
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("%s: Dispatch(%s) = %q, %v; want %q", tt.name, tt.sig, got, ok, tt.want)
		}
	}
}

func TestReservedSignalsExcludeTheDefault(t *testing.T) {
	if IsReserved(SigFailDefault) {
		t.Error("SIGNAL:FAIL_DEFAULT is a transition key, not a signal a block emits")
	}
	for _, s := range ReservedSignals {
		if !IsReserved(s) {
			t.Errorf("IsReserved(%s) = false", s)
		}
	}
}

// TestIsSignalMatchesPattern checks IsSignal against SignalPattern on the
// edge cases and on every string of up to three characters after the
// prefix over an alphabet that holds both sides of every range.
func TestIsSignalMatchesPattern(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(SignalPattern)
	cases := []string{"", "SIGNAL:", "SIGNAL", "signal:X", "SIGNAL:X", "SIGNAL:SUCCESS", "SIGNAL:A_1",
		"SIGNAL:X\n", "\nSIGNAL:X", " SIGNAL:X", "SIGNAL:X ", "SIGNAL::", "SIGNAL:é", "XSIGNAL:A", "SIGNAL:A\x00"}
	alphabet := []string{"A", "Z", "0", "9", "_", "@", "[", "/", ":", "a", "z", "`", "{", "-", " ", "\n", "\xff", "é"}
	var build func(prefix string, n int)
	build = func(prefix string, n int) {
		cases = append(cases, prefix)
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			build(prefix+c, n-1)
		}
	}
	build("SIGNAL:", 3)
	for _, s := range cases {
		if got, want := IsSignal(s), re.MatchString(s); got != want {
			t.Errorf("IsSignal(%q) = %v, want %v (the pattern)", s, got, want)
		}
	}
}
