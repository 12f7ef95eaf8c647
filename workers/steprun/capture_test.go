package steprun_test

import (
	"fmt"
	"strings"
	"testing"

	"smith/isa"
	"smith/lang"
	"smith/workers/reply"
	"smith/workers/step"
	"smith/workers/steprun"
)

func TestApplyCapture(t *testing.T) {
	t.Parallel()
	const (
		cmd  = isa.KindCommand
		prov = isa.KindProvider
	)
	tests := []struct {
		name       string
		kind       isa.BlockKind
		capture    string
		allowParse bool
		failed     bool // the result failed already (exit 3)
		whole      string
		want       string // outcome
		wantLines  string // %q of Lines
		wantJSON   string // fmt of JSON, HasJSON
	}{
		{name: "default is text", kind: cmd, capture: "", whole: "a\nb\n",
			want: "SIGNAL:SUCCESS", wantLines: "[]", wantJSON: "<nil> false"},
		{name: "text", kind: cmd, capture: "text", whole: "{}",
			want: "SIGNAL:SUCCESS", wantLines: "[]", wantJSON: "<nil> false"},
		{name: "lines", kind: cmd, capture: "lines", whole: "a\nb\nc\n\n",
			want: "SIGNAL:SUCCESS", wantLines: `["a" "b" "c"]`, wantJSON: "<nil> false"},
		{name: "lines keep a carriage return", kind: cmd, capture: "lines", whole: "a\r\n\nb",
			want: "SIGNAL:SUCCESS", wantLines: `["a\r" "" "b"]`, wantJSON: "<nil> false"},
		{name: "lines of nothing", kind: cmd, capture: "lines", whole: "\n",
			want: "SIGNAL:SUCCESS", wantLines: `[]`, wantJSON: "<nil> false"},
		{name: "json", kind: cmd, capture: "json", whole: `{"a": [1, 2.5, "x"], "b": {"c": true, "d": null}}` + "\n",
			want: "SIGNAL:SUCCESS", wantLines: "[]", wantJSON: "map[a:[1 2.5 x] b:map[c:true d:<nil>]] true"},
		{name: "json null is a value", kind: cmd, capture: "json", whole: "null",
			want: "SIGNAL:SUCCESS", wantLines: "[]", wantJSON: "<nil> true"},
		{name: "json parse error", kind: cmd, capture: "json", whole: "not json\n",
			want:      "SIGNAL:FAILURE exit=0 attempts=0 E_JSON_PARSE: output of step 'Cap' is not JSON: invalid character 'o' in literal null (expecting 'u') at line 1, column 2; make the step print one JSON value and nothing else on stdout, or set allow_parse_error: true to go on with json null",
			wantLines: "[]", wantJSON: "<nil> false"},
		{name: "json parse error on a later line", kind: cmd, capture: "json", whole: "{\n  \"a\": 1,\n}\n",
			want:      "SIGNAL:FAILURE exit=0 attempts=0 E_JSON_PARSE: output of step 'Cap' is not JSON: invalid character '}' looking for beginning of object key string at line 3, column 1; make the step print one JSON value and nothing else on stdout, or set allow_parse_error: true to go on with json null",
			wantLines: "[]", wantJSON: "<nil> false"},
		{name: "json trailing garbage", kind: cmd, capture: "json", whole: `{"a":1} x`,
			want:      "SIGNAL:FAILURE exit=0 attempts=0 E_JSON_PARSE: output of step 'Cap' is not JSON: invalid character 'x' after top-level value at line 1, column 9; make the step print one JSON value and nothing else on stdout, or set allow_parse_error: true to go on with json null",
			wantLines: "[]", wantJSON: "<nil> false"},
		{name: "json empty", kind: cmd, capture: "json", whole: " \n",
			want: "SIGNAL:FAILURE exit=0 attempts=0 E_JSON_PARSE: output of step 'Cap' is not JSON: the output is empty", wantLines: "[]", wantJSON: "<nil> false"},
		{name: "json allow_parse_error", kind: cmd, capture: "json", allowParse: true, whole: "not json",
			want: "SIGNAL:SUCCESS", wantLines: "[]", wantJSON: "<nil> false"},
		{name: "json of a failed step keeps its failure", kind: cmd, capture: "json", failed: true, whole: "not json",
			want: "SIGNAL:FAILURE exit=3 attempts=0", wantLines: "[]", wantJSON: "<nil> false"},
		{name: "json of a failed step that parses", kind: cmd, capture: "json", failed: true, whole: `[1]`,
			want: "SIGNAL:FAILURE exit=3 attempts=0", wantLines: "[]", wantJSON: "[1] true"},
		{name: "command output is not cleaned", kind: cmd, capture: "json", whole: "```json\n{\"a\":1}\n```",
			want: "SIGNAL:FAILURE exit=0 attempts=0 E_JSON_PARSE", wantLines: "[]", wantJSON: "<nil> false"},
		{name: "a reply is cleaned first", kind: prov, capture: "json", whole: "Here it is:\n```json\n{\"a\":1}\n```\n",
			want: "SIGNAL:SUCCESS", wantLines: "[]", wantJSON: "map[a:1] true"},
		{name: "a reply with no JSON fails validation", kind: prov, capture: "json", whole: "no json here",
			want:      "SIGNAL:VALIDATION_FAIL exit=0 attempts=0 E_VALIDATION: " + reply.ValidationFailPrefix + "the reply holds no JSON value (invalid character 'o' in literal null (expecting 'u') at line 1, column 2)",
			wantLines: "[]", wantJSON: "<nil> false"},
		{name: "a reply with no JSON and allow_parse_error", kind: prov, capture: "json", allowParse: true, whole: "no json here",
			want: "SIGNAL:SUCCESS", wantLines: "[]", wantJSON: "<nil> false"},
		{name: "unknown capture", kind: cmd, capture: "yaml", whole: "a: 1",
			want: "SIGNAL:FAILURE exit=0 attempts=0 E_INTERNAL: internal error: step 'Cap' has output_capture 'yaml'", wantLines: "[]", wantJSON: "<nil> false"},
		{name: "unknown capture of a failed step", kind: cmd, capture: "yaml", failed: true, whole: "a: 1",
			want: "SIGNAL:FAILURE exit=3 attempts=0", wantLines: "[]", wantJSON: "<nil> false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := &step.Request{Step: "Cap", Kind: tt.kind, OutputCapture: tt.capture, AllowParseError: tt.allowParse}
			res := step.Result{Signal: lang.SigSuccess}
			if tt.failed {
				res = step.Result{Signal: lang.SigFailure, ExitCode: 3}
			}
			steprun.ApplyCapture(req, &res, tt.whole)
			// The signal alone when the result has neither exit code nor
			// error; a want with an error may stop inside its message.
			got := res.Signal
			if res.ExitCode != 0 || res.Err != nil {
				got = outcome(res)
			}
			if got != tt.want && (!strings.Contains(tt.want, " E_") || !strings.HasPrefix(got, tt.want)) {
				t.Errorf("ApplyCapture(%s, %q) = %s, want %s", tt.capture, tt.whole, got, tt.want)
			}
			if l := fmt.Sprintf("%q", res.Lines); l != tt.wantLines {
				t.Errorf("ApplyCapture(%s, %q) lines = %s, want %s", tt.capture, tt.whole, l, tt.wantLines)
			}
			if (tt.capture == "lines") != (res.Lines != nil) {
				t.Errorf("ApplyCapture(%s, %q) lines = %#v, want a non-nil list for lines only", tt.capture, tt.whole, res.Lines)
			}
			if j := fmt.Sprint(res.JSON, " ", res.HasJSON); j != tt.wantJSON {
				t.Errorf("ApplyCapture(%s, %q) json = %s, want %s", tt.capture, tt.whole, j, tt.wantJSON)
			}
		})
	}
}

func TestTrimOutput(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{"a\n\n\n", "a"},
		{"a\r\n", "a\r"},
		{"\n a \n", "\n a "},
	} {
		if got := steprun.TrimOutput(tt.in); got != tt.want {
			t.Errorf("TrimOutput(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestApplyCaptureCaps: a reply (or output) given whole is captured within
// the same sizes as a spilled stream: lines of its first LinesCap bytes,
// json of at most JSONCap bytes.
func TestApplyCaptureCaps(t *testing.T) {
	t.Parallel()
	line := strings.Repeat("r", 9) + "\n" // 10 bytes
	tests := []struct {
		name      string
		capture   string
		allow     bool
		whole     string
		want      string
		wantLines int
		wantCut   bool
	}{
		{"lines past LinesCap", "lines", false, strings.Repeat(line, steprun.LinesCap/10+5), "SIGNAL:SUCCESS", steprun.LinesCap / 10, true},
		{"lines at LinesCap", "lines", false, strings.Repeat(line, steprun.LinesCap/10), "SIGNAL:SUCCESS", steprun.LinesCap / 10, false},
		{"json past JSONCap", "json", false, `"` + strings.Repeat("j", steprun.JSONCap) + `"`,
			"SIGNAL:FAILURE exit=0 attempts=0 E_TOO_LARGE: output of step 'Cap' is 8388610 bytes, more than the 8388608 (8 MiB) a json capture parses: print", 0, false},
		{"json past JSONCap with allow_parse_error", "json", true, `"` + strings.Repeat("j", steprun.JSONCap) + `"`, "SIGNAL:SUCCESS", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := &step.Request{Step: "Cap", Kind: isa.KindProvider, OutputCapture: tt.capture, AllowParseError: tt.allow}
			res := step.Result{Signal: lang.SigSuccess}
			steprun.ApplyCapture(req, &res, tt.whole)
			got := res.Signal
			if res.Err != nil {
				got = outcome(res)
			}
			if got != tt.want && (!strings.Contains(tt.want, " E_") || !strings.HasPrefix(got, tt.want)) {
				t.Errorf("ApplyCapture(%s, %d bytes) = %s, want %s", tt.capture, len(tt.whole), got, tt.want)
			}
			if len(res.Lines) != tt.wantLines || res.LinesTruncated != tt.wantCut || res.HasJSON {
				t.Errorf("ApplyCapture(%s, %d bytes) = %d lines, truncated %v, has json %v; want %d, %v, false",
					tt.capture, len(tt.whole), len(res.Lines), res.LinesTruncated, res.HasJSON, tt.wantLines, tt.wantCut)
			}
		})
	}
}
