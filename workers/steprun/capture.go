package steprun

import (
	"encoding/json"
	"fmt"
	"os"
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

// LinesCap is the most of a stream that a lines capture splits: the
// in-memory part of stdout (CONTRACT 3.5, 1 MiB). Past it, Lines holds the
// complete lines of the first LinesCap bytes and LinesTruncated is set, so
// that a step's memory does not grow with its stream.
const LinesCap = 1 << 20

// JSONCap is the most stdout (or a reply) a json capture parses: a larger
// one fails the step with E_TOO_LARGE (or, with allow_parse_error, leaves
// json null), so that a step's memory does not grow with its stream. It is
// read from the spill file only when it passed the in-memory 1 MiB.
const JSONCap = 8 << 20

// TrimOutput is a step's output: stdout with trailing newlines removed.
func TrimOutput(s string) string { return strings.TrimRight(s, "\n") }

// ApplyCapture fills res.Lines or res.JSON from whole, the whole (masked)
// stdout or reply, according to req.OutputCapture.
//
// lines: whole without its trailing newlines, split on "\n" (an empty output
// gives an empty, non-nil list; a "\r" before a newline is kept); a whole
// longer than LinesCap gives the complete lines of its first LinesCap bytes
// and LinesTruncated.
//
// json: whole is decoded with encoding/json into plain Go values (objects
// map[string]any, arrays []any, numbers float64, strings, bools, nil); the
// whole output must be one JSON value. A result that failed already keeps its
// failure and gets JSON only when the output parses; a successful one that
// does not parse fails with E_JSON_PARSE, unless AllowParseError, in which case
// JSON stays nil and the result stays a success. A whole longer than JSONCap
// is not parsed: E_TOO_LARGE, or JSON nil with AllowParseError.
func ApplyCapture(req *step.Request, res *step.Result, whole string) {
	switch req.OutputCapture {
	case "", captureText:
	case captureLines:
		if len(whole) > LinesCap {
			res.Lines, res.LinesTruncated = headLines(whole[:LinesCap]), true
			return
		}
		res.Lines = splitLines(whole)
	case captureJSON:
		if len(whole) > JSONCap {
			jsonTooLarge(req, res, int64(len(whole)), "")
			return
		}
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
			res.Err = &source.Error{Code: source.EJSONParse, Msg: fmt.Sprintf("output of step '%s' is not JSON: %v", req.Step, jsonErrText(err, whole)),
				Hint: "make the step print one JSON value and nothing else on stdout, or set allow_parse_error: true to go on with json null"}
		}
	default:
		if res.Signal == lang.SigSuccess {
			res.Signal = lang.SigFailure
			res.Err = source.Errorf(source.EInternal, "internal error: step '%s' has output_capture '%s'", req.Step, req.OutputCapture)
		}
	}
}

// ApplySpilled applies the lines or json capture of a command whose stdout
// (or a provider whose reply) passed the in-memory cap: head is its first 1
// MiB (masked), spill the file that holds the whole stream ("" when there
// is none), shown the file an error names as holding it ("" for none). Lines come from
// head alone; json is parsed from the spill when it is at most JSONCap bytes.
// Neither reads more than that, whatever the stream's size.
func ApplySpilled(req *step.Request, res *step.Result, head, spill, shown string) {
	switch req.OutputCapture {
	case captureLines:
		res.Lines, res.LinesTruncated = headLines(head), true
	case captureJSON:
		whole, size, err := readCapped(spill, JSONCap)
		switch {
		case err != nil:
			if res.Signal == lang.SigSuccess {
				res.Signal = lang.SigFailure
				res.Err = source.Errorf(source.EExec, "read the stdout of step '%s' for its json capture: %v", req.Step, err)
			}
		case size > JSONCap || size < 0:
			jsonTooLarge(req, res, size, shown)
		default:
			ApplyCapture(req, res, whole)
		}
	default:
		ApplyCapture(req, res, head)
	}
}

// readCapped returns the content of path when it is at most max bytes
// (never reading more than max+1), and its size; -1 without a path (no
// RUN_ROOT: nothing holds more than the in-memory part).
func readCapped(path string, max int64) (string, int64, error) {
	if path == "" {
		return "", -1, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	return readLimited(f, max)
}

// jsonTooLarge fails a successful result whose json capture is size bytes,
// more than JSONCap (-1: more than the in-memory part, with no spill file),
// with E_TOO_LARGE; with AllowParseError it stays a success with JSON nil.
// spill names the file holding the output, if any.
func jsonTooLarge(req *step.Request, res *step.Result, size int64, spill string) {
	if res.Signal != lang.SigSuccess || req.AllowParseError {
		return
	}
	res.Signal = lang.SigFailure
	if size < 0 {
		res.Err = source.Errorf(source.ETooLarge, "output of step '%s' is more than the 1 MiB kept in memory, and no spill file holds the rest to parse as json (the step runs without a run folder): print a smaller JSON value, or set allow_parse_error: true to go on with json null", req.Step)
		return
	}
	where := ""
	if spill != "" {
		where = fmt.Sprintf(" (the whole output is in %s)", spill)
	}
	res.Err = source.Errorf(source.ETooLarge, "output of step '%s' is %d bytes, more than the %d (8 MiB) a json capture parses%s: print a smaller JSON value, write it to an output_file and read that with a command step, or set allow_parse_error: true to go on with json null",
		req.Step, size, JSONCap, where)
}

// headLines splits head, the first part of a longer stream, into its
// complete lines: what follows head's last newline is part of a line cut
// off, and is left out.
func headLines(head string) []string {
	i := strings.LastIndexByte(head, '\n')
	if i < 0 {
		return []string{}
	}
	return splitLines(head[:i])
}

// splitLines splits s (without its trailing newlines) on "\n".
func splitLines(s string) []string {
	s = TrimOutput(s)
	if s == "" {
		return []string{}
	}
	return strings.Split(s, "\n")
}

// jsonErrText describes a JSON syntax error, with its line and column in
// data where it has one.
func jsonErrText(err error, data string) string {
	if len(strings.TrimSpace(data)) == 0 {
		return "the output is empty"
	}
	if se, ok := err.(*json.SyntaxError); ok {
		line, col := lineCol(data, se.Offset)
		return fmt.Sprintf("%v at line %d, column %d", se, line, col)
	}
	return err.Error()
}

// lineCol is the 1-based line and byte column of the byte encoding/json
// stopped at: the last of the offset bytes it read.
func lineCol(data string, offset int64) (line, col int) {
	p := int(min(max(offset-1, 0), int64(len(data))))
	head := data[:p]
	return strings.Count(head, "\n") + 1, p - (strings.LastIndexByte(head, '\n') + 1) + 1
}
