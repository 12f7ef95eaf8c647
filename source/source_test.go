package source

import (
	"bytes"
	"testing"
)

func TestFilePos(t *testing.T) {
	t.Parallel()
	f := NewFile("a.yaml", []byte("ab\nçd\n\nx"))
	tests := []struct {
		name string
		off  int
		want string
	}{
		{"start", 0, "a.yaml:1:1"},
		{"second line", 3, "a.yaml:2:1"},
		{"after multibyte", 5, "a.yaml:2:2"},
		{"empty line", 7, "a.yaml:3:1"},
		{"last", 8, "a.yaml:4:1"},
		{"past end clamps", 99, "a.yaml:4:2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := f.Pos(tt.off).String(); got != tt.want {
				t.Errorf("Pos(%d) = %s, want %s", tt.off, got, tt.want)
			}
		})
	}
}

func TestSuggest(t *testing.T) {
	t.Parallel()
	cands := []string{"Report", "Prep", "Analyze", "retry", "secrets", "branches", "timeout", "backoff_sec"}
	tests := []struct{ name, in, want string }{
		{"typo", "Reprot", "Report"},
		{"plural of a singular key", "retries", "retry"},
		{"singular of a plural key", "secret", "secrets"},
		{"a seconds suffix written", "timeout_sec", "timeout"},
		{"a seconds suffix spelt out", "timeout_seconds", "timeout"},
		{"a seconds suffix left out", "backoff", "backoff_sec"},
		{"singular of an -es plural key", "branch", "branches"},
		{"case", "report", "Report"},
		{"far", "Deploy", ""},
		{"short", "Prp", "Prep"},
		// Case alone beats another name at the same edit distance:
		// 'c' means 'C', not 'A'.
		{"case first", "c", "C"},
		{"case long", "prep", "Prep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cands := cands
			if tt.name == "case first" {
				cands = []string{"A", "B", "C"}
			}
			if got := Suggest(tt.in, cands); got != tt.want {
				t.Errorf("Suggest(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestDiagnosticsSortFormat(t *testing.T) {
	t.Parallel()
	var ds Diagnostics
	ds.Add(Pos{"b.yaml", 2, 1}, WUnreachable, "step 'X' is never reached")
	ds.Add(Pos{"a.yaml", 9, 3}, EUnknownTarget, "goto target 'Reprot' is not a step%s", DidYouMean("Reprot", []string{"Report"}))
	ds.Add(Pos{"a.yaml", 9, 3}, EUnknownTarget, "goto target 'Reprot' is not a step%s", DidYouMean("Reprot", []string{"Report"}))
	ds.Add(Pos{"b.yaml", 1, 1}, EPathEscape, "path '/etc/passwd' is absolute")
	ds.Sort()
	var buf bytes.Buffer
	if err := ds.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	want := "a.yaml:9:3: error: E_UNKNOWN_TARGET: goto target 'Reprot' is not a step (did you mean 'Report'?)\n" +
		"b.yaml:1:1: error: E_PATH_ESCAPE: path '/etc/passwd' is absolute\n" +
		"b.yaml:2:1: warning: W_UNREACHABLE: step 'X' is never reached\n"
	if buf.String() != want {
		t.Errorf("WriteText =\n%s\nwant\n%s", buf.String(), want)
	}
	if got := ds.ExitStatus(); got != ExitPathEscape {
		t.Errorf("ExitStatus = %d, want 3", got)
	}
	if ds.Err() == nil {
		t.Error("Err() = nil with errors present")
	}
	if (Diagnostics{ds[2]}).Err() != nil {
		t.Error("Err() != nil with warnings only")
	}
}

func TestCodeTable(t *testing.T) {
	t.Parallel()
	seen := map[Code]bool{}
	for _, ci := range Codes() {
		if seen[ci.Code] {
			t.Errorf("code %s listed twice", ci.Code)
		}
		seen[ci.Code] = true
		wantSev := SevError
		if ci.Code[0] == 'W' {
			wantSev = SevWarning
		}
		if ci.Severity != wantSev {
			t.Errorf("code %s has severity %s", ci.Code, ci.Severity)
		}
		if ci.Summary == "" {
			t.Errorf("code %s has no summary", ci.Code)
		}
	}
}

func TestDidYouMeanOrList(t *testing.T) {
	names := []string{"Internal:TestRunner", "Internal:RunLinter", "Internal:TestRunner"}
	for _, tt := range []struct{ name, want string }{
		{"Internal:TestRuner", " (did you mean 'Internal:TestRunner'?)"},
		{"Nope", " (workers: 'Internal:RunLinter', 'Internal:TestRunner')"},
	} {
		if got := DidYouMeanOrList(tt.name, names, "workers"); got != tt.want {
			t.Errorf("DidYouMeanOrList(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
	if got := DidYouMeanOrList("x", nil, "workers"); got != "" {
		t.Errorf("DidYouMeanOrList with no candidates = %q, want \"\"", got)
	}
}
