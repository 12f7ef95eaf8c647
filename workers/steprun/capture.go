package steprun

import (
	"encoding/json"
	"fmt"
	"strings"

	"smith/isa"
	"smith/lang"
	"smith/source"
	"smith/workers/reply"
	"smith/workers/step"
)

// Output capture modes (output_capture).
const (
	captureText  = "text"
	captureLines = "lines"
	captureJSON  = "json"
)

// TrimOutput is a step's output: stdout with trailing newlines removed.
func TrimOutput(s string) string { return strings.TrimRight(s, "\n") }

// ApplyCapture fills res.Lines or res.JSON from whole, the whole (masked)
// stdout or reply, according to req.OutputCapture.
//
// lines: whole without its trailing newlines, split on "\n" (an empty output
// gives an empty, non-nil list; a "\r" before a newline is kept).
//
// json: whole is decoded with encoding/json into plain Go values (objects
// map[string]any, arrays []any, numbers float64, strings, bools, nil); the
// whole output must be one JSON value. A result that failed already keeps its
// failure and gets JSON only when the output parses; a successful one that
// does not parse fails with E_JSON_PARSE, unless AllowParseError, in which case
// JSON stays nil and the result stays a success.
func ApplyCapture(req *step.Request, res *step.Result, whole string) {
	switch req.OutputCapture {
	case "", captureText:
	case captureLines:
		res.Lines = splitLines(whole)
	case captureJSON:
		var v any
		err := json.Unmarshal([]byte(whole), &v)
		if err == nil {
			res.JSON, res.HasJSON = v, true
			return
		}
		if req.Kind == isa.KindProvider {
			// A model's reply is cleaned before it is parsed, and one with no
			// JSON value is a validation failure the fix loop can mend
			// (CONTRACT 9), not E_JSON_PARSE.
			if text, ok := reply.ExtractJSON(reply.Clean(whole)); ok && json.Unmarshal([]byte(text), &v) == nil {
				res.JSON, res.HasJSON = v, true
				return
			}
			if res.Signal == lang.SigSuccess && !req.AllowParseError {
				res.Signal = lang.SigValidationFail
				res.Err = source.Errorf(source.EValidation, "%sthe reply holds no JSON value (%s)", reply.ValidationFailPrefix, jsonErrText(err, whole))
			}
			return
		}
		if res.Signal == lang.SigSuccess && !req.AllowParseError {
			res.Signal = lang.SigFailure
			res.Err = source.Errorf(source.EJSONParse, "output of step '%s' is not JSON: %v", req.Step, jsonErrText(err, whole))
		}
	default:
		if res.Signal == lang.SigSuccess {
			res.Signal = lang.SigFailure
			res.Err = source.Errorf(source.EInternal, "internal error: step '%s' has output_capture '%s'", req.Step, req.OutputCapture)
		}
	}
}

// splitLines splits s (without its trailing newlines) on "\n".
func splitLines(s string) []string {
	s = TrimOutput(s)
	if s == "" {
		return []string{}
	}
	return strings.Split(s, "\n")
}

// jsonErrText describes a JSON syntax error, with the offset where it has one.
func jsonErrText(err error, data string) string {
	if len(strings.TrimSpace(data)) == 0 {
		return "the output is empty"
	}
	if se, ok := err.(*json.SyntaxError); ok {
		return fmt.Sprintf("%v at byte %d", se, se.Offset)
	}
	return err.Error()
}
