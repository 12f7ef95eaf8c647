package lang

import "testing"

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
