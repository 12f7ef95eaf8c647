package provider

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
)

// The exit codes of a failed provider call (CONTRACT.md 5): whatever the
// CLI's own code, a failure is retryable (ExitRetryable: tried again, then
// the next provider) or not (ExitInvalid: invalid input or configuration).
const (
	ExitRetryable = 1
	ExitInvalid   = 2
)

// A CLIReply is what Smith read from one CLI call: the model's text and
// tokens, and the call's exit code with, for a failure, a one-line reason a
// user can act on.
type CLIReply struct {
	Parsed bool // stdout was in the CLI's format (text and tokens are from it)
	Text   string
	Tokens int
	// Cost is what the call cost in US dollars where the CLI reports it
	// (claude's total_cost_usd), 0 otherwise.
	Cost   float64
	Exit   int
	Reason string
}

// A cliError is an error the CLI reported: an HTTP status when it gave one
// (0 otherwise) and its message.
type cliError struct {
	status int
	msg    string
}

// ReadReply reads a preset's stdout, stderr and exit code (CONTRACT 5): the
// reply and tokens from stdout; an error from stdout's JSON, from the JSON
// at the end of stderr (gemini) or from stderr's text; a tool call refused
// for lack of permission. A failure's exit code is 1 (retryable) or 2
// (invalid input or configuration), never the CLI's raw code.
func ReadReply(pv Provider, perms, stdout, stderr string, exit int) CLIReply {
	var (
		out  CLIReply
		cerr *cliError
	)
	if pv.CLI != nil {
		out, cerr = pv.CLI.read(stdout, stderr)
	}
	out.Exit = exit
	if cerr == nil && exit != 0 && exit < 128 {
		// No error in the CLI's JSON: its stderr (or a stdout that is not
		// JSON) says what happened.
		cerr = &cliError{msg: lastLine(stderr)}
		if pv.CLI != nil && pv.CLI.startFailure != nil && !out.Parsed {
			cerr.msg = pv.CLI.startFailure(stderr)
		}
		if cerr.msg == "" && !out.Parsed {
			cerr.msg = lastLine(stdout)
		}
		if cerr.msg == "" {
			cerr.msg = fmt.Sprintf("exited with code %d and said nothing on stderr", exit)
		}
	}
	if cerr != nil {
		if cerr.status == 0 {
			cerr.status = statusIn(cerr.msg)
		}
		out.Exit = classify(cerr.status, cerr.msg)
		out.Reason = failureText(pv, cerr, out.Exit)
		return out
	}
	if exit != 0 {
		out.Reason = fmt.Sprintf("killed by signal %d", exit-128)
		return out
	}
	if f := pv.CLI; f != nil && f.denied != nil {
		if what := f.denied(stdout, stderr); what != "" {
			out.Exit, out.Reason = ExitInvalid, deniedReason(perms, what)
		}
	}
	return out
}

// retryablePattern recognises the errors worth trying again: rate limits,
// overload, server errors, and a connection refused, reset, dropped or cut
// short.
var retryablePattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)rate[ _-]?limit|overloaded|high demand|too many requests|resource[ _]exhausted|unavailable|timed? ?out|network|socket hang up|fetch failed|econnreset|econnrefused|etimedout|enotfound|eai_again|und_err|connection (refused|reset|dropped|failed|closed|error)|stream disconnected|disconnected before|error sending request|other side closed|terminated|premature|internal server error`)
})

// statusPattern finds an HTTP status in an error message.
var statusPattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(?:status|error|code)[ :"]+([45]\d\d)\b|\(([45]\d\d)\)|\b([45]\d\d) (?:Unauthorized|Forbidden|Bad Request|Too Many Requests|Internal Server Error|Service Unavailable|Bad Gateway|Gateway Timeout|Overloaded)`)
})

// statusIn returns the HTTP status an error message names, 0 for none.
func statusIn(msg string) int {
	m := statusPattern().FindStringSubmatch(msg)
	for _, g := range m[min(1, len(m)):] {
		if n, err := strconv.Atoi(g); err == nil {
			return n
		}
	}
	return 0
}

// classify maps an error to its exit code: 1 (retryable) for HTTP 429, 5xx,
// overload and network errors, 2 (invalid input or configuration, not
// retried) for everything else, 400/401/403 included.
func classify(status int, msg string) int {
	switch {
	case status == 429 || status >= 500 && status <= 599:
		return ExitRetryable
	case status >= 400 && status <= 499:
		return ExitInvalid
	case retryablePattern().MatchString(msg):
		return ExitRetryable
	}
	return ExitInvalid
}

var (
	authPattern = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)api[ _-]?key|auth method|unauthori[sz]ed|authenticat|not logged in|/login|log ?in|credential|forbidden|permission_error`)
	})
	trustPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)trust`) })
	busyPattern  = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)overloaded|high demand|rate[ _-]?limit|too many requests|resource[ _]exhausted|unavailable`)
	})
)

// failureText is the one-line reason of a failed call, saying what to fix.
func failureText(pv Provider, e *cliError, exit int) string {
	msg := oneLine(e.msg)
	keyVar, baseVar := "the key", "the server address"
	if f := pv.CLI; f != nil {
		keyVar, baseVar = f.KeyVar, f.baseVar
		if !pv.Isolated {
			keyVar = f.UserKeyVar()
		}
	}
	if pv.KeyVar != "" {
		keyVar = pv.KeyVar
	}
	code := ""
	if e.status != 0 {
		code = fmt.Sprintf(" (HTTP %d)", e.status)
	}
	if exit == ExitRetryable {
		switch {
		case e.status == 429:
			return "rate limited by the model server" + code + ": " + msg + " (retryable: retry: and a provider list take over)"
		case e.status >= 500:
			return "the model server failed" + code + ": " + msg + " (retryable)"
		case busyPattern().MatchString(msg):
			return "the model server is busy: " + msg + " (retryable)"
		}
		return "the model server could not be reached or broke off: " + msg + " (retryable; check " + baseVar + ")"
	}
	switch {
	case e.status == 401 || e.status == 403:
		return "the model server refused the credentials" + code + ": " + msg +
			"; check " + keyVar + " or the CLI's login" + homeNote(pv)
	case authPattern().MatchString(msg):
		return "the CLI has no usable credentials: " + msg + "; " + loginFix(pv, keyVar) + homeNote(pv)
	case trustPattern().MatchString(msg):
		return msg + "; the folder is not trusted by the CLI (gemini: set GEMINI_CLI_TRUST_WORKSPACE=true in the provider's env)"
	case e.status == 400:
		return "the model server rejected the request" + code + ": " + msg + "; check model: and the prompt"
	case e.status == 404:
		return "the model server does not know this model or address" + code + ": " + msg + "; check model: and " + baseVar
	}
	return msg + code
}

// loginFix names both ways to give a CLI credentials (CONTRACT 5): its own
// login, or its key variable in Smith's environment.
func loginFix(pv Provider, keyVar string) string {
	f := pv.CLI
	switch {
	case f == nil:
		return "set " + keyVar
	case pv.Isolated:
		return "set " + keyVar + " in Smith's environment (home: isolated does not see your login; remove it to use your login)"
	}
	return f.Login + ", or set " + keyVar
}

// homeNote names the configuration home the CLI was given.
func homeNote(pv Provider) string {
	if pv.ConfigHome == "" || pv.CLI == nil {
		return ""
	}
	return " (" + pv.Name + "'s configuration home: " + pv.ConfigHome + ")"
}

// oneLine is the first meaningful line of s, cut to 300 bytes. A message
// that is itself a JSON error body is replaced by its message.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if gjson.Valid(s) {
		if m := gjson.Get(s, "error.message"); m.Exists() {
			s = m.String()
		}
	}
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// ansiPattern matches terminal colour sequences.
var ansiPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("\x1b\\[[0-9;]*m") })

// lastLine returns the last non-empty line of s, skipping stack frames and
// colours.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(ansiPattern().ReplaceAllString(s, "")), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l != "" && !strings.HasPrefix(l, "at ") && l != "}" {
			return l
		}
	}
	return ""
}

// claudeResult returns claude's result object: stdout is one object, an
// array whose last "result" element it is (json --verbose), or JSONL
// events whose last "result" line it is (stream-json).
func claudeResult(stdout string) gjson.Result {
	s := strings.TrimSpace(stdout)
	if !gjson.Valid(s) {
		return lastResultLine(s)
	}
	v := gjson.Parse(s)
	if v.IsArray() {
		var last gjson.Result
		v.ForEach(func(_, m gjson.Result) bool {
			if m.Get("type").String() == "result" {
				last = m
			}
			return true
		})
		v = last
	}
	if !v.IsObject() || v.Get("type").String() != "result" {
		return gjson.Result{}
	}
	return v
}

// lastResultLine returns the last line of JSONL events s that is an
// object of type "result" (claude's and gemini's stream-json).
func lastResultLine(s string) gjson.Result {
	for end := len(s); end > 0; {
		i := strings.LastIndexByte(s[:end], '\n')
		line := strings.TrimSpace(s[i+1 : end])
		if strings.HasPrefix(line, "{") && gjson.Valid(line) {
			if v := gjson.Parse(line); v.Get("type").String() == "result" {
				return v
			}
		}
		if i < 0 {
			break
		}
		end = i
	}
	return gjson.Result{}
}

// readClaude reads `claude -p --output-format stream-json --verbose` (or
// json): the result object {"type":"result", "subtype":"success",
// "is_error":false,"result":"...","usage":{...},"total_cost_usd":N,
// "permission_denials":[...],"api_error_status":N}. Tokens are input +
// output + cache creation + cache read tokens.
func readClaude(stdout, _ string) (CLIReply, *cliError) {
	v := claudeResult(stdout)
	if !v.Exists() {
		return CLIReply{Text: stdout}, nil
	}
	u := v.Get("usage")
	out := CLIReply{Parsed: true, Text: v.Get("result").String(), Cost: v.Get("total_cost_usd").Float(),
		Tokens: int(u.Get("input_tokens").Int() + u.Get("output_tokens").Int() +
			u.Get("cache_creation_input_tokens").Int() + u.Get("cache_read_input_tokens").Int())}
	if v.Get("is_error").Bool() || strings.HasPrefix(v.Get("subtype").String(), "error") {
		msg := out.Text
		if msg == "" {
			msg = v.Get("subtype").String()
		}
		return out, &cliError{status: int(v.Get("api_error_status").Int()), msg: msg}
	}
	return out, nil
}

// readGemini reads `gemini --output-format json`: stdout {"response": "...",
// "stats": {"models": {NAME: {"tokens": {"total": N}}}}}; an error is a
// JSON object {"error": {"message", "code"}} at the end of stderr (or, in
// older versions, in stdout). An empty response with "warnings" (gemini's
// loop detection stopped the model) is an error too, though gemini exits 0.
// Tokens are the sum of every model's total.
func readGemini(stdout, stderr string) (CLIReply, *cliError) {
	if r := lastResultLine(strings.TrimSpace(stdout)); r.Exists() {
		return readGeminiStream(stdout, r, stderr)
	}
	out := CLIReply{Text: stdout}
	s := strings.TrimSpace(stdout)
	var v gjson.Result
	if gjson.Valid(s) {
		v = gjson.Parse(s)
	}
	if v.IsObject() && (v.Get("response").Exists() || v.Get("stats").Exists()) {
		out.Parsed, out.Text = true, v.Get("response").String()
		v.Get("stats.models").ForEach(func(_, m gjson.Result) bool {
			out.Tokens += int(m.Get("tokens.total").Int())
			return true
		})
	}
	e := v.Get("error")
	if !e.IsObject() {
		e = lastJSONObject(stderr).Get("error")
	}
	if !e.IsObject() {
		if w := v.Get("warnings"); out.Parsed && out.Text == "" && len(w.Array()) > 0 {
			// gemini stopped the model without a reply ("Loop detected,
			// stopping execution") and still exits 0.
			var msgs []string
			for _, m := range w.Array() {
				msgs = append(msgs, m.String())
			}
			return out, &cliError{msg: "gemini gave no reply: " + strings.Join(msgs, "; ")}
		}
		return out, nil
	}
	msg := e.Get("message").String()
	if msg == "" {
		msg = e.String()
	}
	status := int(e.Get("code").Int())
	if inner := gjson.Get(msg, "error"); gjson.Valid(msg) && inner.IsObject() {
		msg, status = inner.Get("message").String(), int(inner.Get("code").Int())
	}
	if status < 400 || status > 599 {
		status = 0
	}
	return out, &cliError{status: status, msg: msg}
}

// readGeminiStream reads `gemini --output-format stream-json`: JSONL
// events; the reply is the assistant's messages (streamed in pieces,
// "delta": true) after the last tool call, joined; the last event
// {"type":"result","status":"success"|"error","error":{"message"},
// "stats":{"total_tokens"}} gives the tokens and the error (its message
// often the server's JSON error body inside "[API Error: ...]").
func readGeminiStream(stdout string, result gjson.Result, stderr string) (CLIReply, *cliError) {
	out := CLIReply{Parsed: true, Tokens: int(result.Get("stats.total_tokens").Int())}
	var text strings.Builder
	for line := range strings.SplitSeq(stdout, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "{") || !gjson.Valid(line) {
			continue
		}
		ev := gjson.Parse(line)
		switch ev.Get("type").String() {
		case "message":
			if ev.Get("role").String() == "assistant" {
				if !ev.Get("delta").Bool() {
					text.Reset()
				}
				text.WriteString(ev.Get("content").String())
			}
		case "tool_use":
			text.Reset() // the reply is what the model said after its last tool call
		}
	}
	out.Text = text.String()
	if result.Get("status").String() == "error" || result.Get("error").IsObject() {
		msg := result.Get("error.message").String()
		if msg == "" {
			msg = result.Get("error").String()
		}
		status := 0
		if i := strings.Index(msg, "{"); i >= 0 {
			body := strings.TrimSuffix(strings.TrimSpace(msg[i:]), "]")
			if inner := gjson.Get(body, "error"); gjson.Valid(body) && inner.IsObject() {
				msg, status = inner.Get("message").String(), int(inner.Get("code").Int())
			}
		}
		if inner, ok := strings.CutPrefix(msg, "[API Error: "); ok {
			first, rest, _ := strings.Cut(inner, "\n")
			msg = strings.TrimSuffix(first, "]")
			if rest != "" {
				msg += " " + strings.Join(strings.Fields(rest), " ")
			}
		}
		if status < 400 || status > 599 {
			// The status is on stderr, in the error object gemini dumps.
			status = 0
			if m := stderrStatus().FindAllStringSubmatch(stderr, -1); len(m) > 0 {
				status, _ = strconv.Atoi(m[len(m)-1][1])
			}
		}
		return out, &cliError{status: status, msg: msg}
	}
	if e := lastJSONObject(stderr).Get("error"); e.IsObject() {
		return out, &cliError{msg: e.Get("message").String()}
	}
	if w := result.Get("warnings"); out.Text == "" && len(w.Array()) > 0 {
		var msgs []string
		for _, m := range w.Array() {
			msgs = append(msgs, m.String())
		}
		return out, &cliError{msg: "gemini gave no reply: " + strings.Join(msgs, "; ")}
	}
	return out, nil
}

// stderrStatus finds the HTTP status in the error object gemini dumps on
// stderr ("  status: 429").
var stderrStatus = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^\s*status: ([45]\d\d)\s*$`) })

// lastParagraph is the last run of meaningful lines of s (at most three,
// no stack frames or colours), joined by spaces.
func lastParagraph(s string) string {
	lines := strings.Split(strings.TrimSpace(ansiPattern().ReplaceAllString(s, "")), "\n")
	var out []string
	for i := len(lines) - 1; i >= 0 && len(out) < 3; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "at ") || l == "}" || strings.HasPrefix(l, "{") || strings.HasSuffix(l, "{") {
			if len(out) > 0 {
				break
			}
			continue
		}
		out = append([]string{l}, out...)
	}
	return strings.Join(out, " ")
}

// lastJSONObject returns the last JSON object of s that starts a line and
// runs to its end (gemini prints its error so, after its log lines).
func lastJSONObject(s string) gjson.Result {
	s = strings.TrimSpace(s)
	for end := len(s); end > 0; {
		i := strings.LastIndex(s[:end], "\n{")
		start := i + 1
		if i < 0 {
			start = 0
		}
		if tail := s[start:]; strings.HasPrefix(tail, "{") && gjson.Valid(tail) {
			return gjson.Parse(tail)
		}
		if i < 0 {
			break
		}
		end = i
	}
	return gjson.Result{}
}

// readCodex reads `codex exec --json`: one JSON event per line. The reply is
// the text of the last agent message ({"type":"item.completed","item":
// {"type":"agent_message","text":...}}); tokens are the input + output
// tokens of every turn.completed; a turn.failed (or, with no agent message,
// an error event) is the error. Item errors (warnings) and "Reconnecting"
// errors are not.
func readCodex(stdout, _ string) (CLIReply, *cliError) {
	out := CLIReply{Text: stdout}
	var (
		seen, got bool
		failed    string
		lastErr   string
	)
	for line := range strings.SplitSeq(stdout, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if !gjson.Valid(line) {
			return CLIReply{Text: stdout}, nil
		}
		ev := gjson.Parse(line)
		switch ev.Get("type").String() {
		case "item.completed":
			if it := ev.Get("item"); it.Get("type").String() == "agent_message" {
				out.Text, got = it.Get("text").String(), true
			}
		case "turn.completed":
			out.Tokens += int(ev.Get("usage.input_tokens").Int() + ev.Get("usage.output_tokens").Int())
		case "turn.failed":
			failed = ev.Get("error.message").String()
		case "error":
			lastErr = ev.Get("message").String()
		case "":
			if m := ev.Get("msg"); m.Get("type").String() == "agent_message" {
				out.Text, got = m.Get("message").String(), true
			} else if !m.Exists() {
				return CLIReply{Text: stdout}, nil
			}
		}
		seen = true
	}
	if !seen {
		return CLIReply{Text: stdout}, nil
	}
	out.Parsed = true
	switch {
	case failed != "":
		return out, &cliError{msg: failed}
	case !got && lastErr != "":
		return out, &cliError{msg: lastErr}
	}
	return out, nil
}

// deniedReason says which permission a denied tool call lacked.
func deniedReason(perms, what string) string {
	need := PermEdit
	if perms != PermRead {
		need = PermFull
	}
	return fmt.Sprintf("the agent was denied %s with permissions: %s; set permissions: %s to allow it", what, perms, need)
}
