package provider

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
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
	// WholeText: though stdout was in the CLI's format, the reply is the
	// whole stdout (codex's events with no agent message): ReadReplyFrom
	// leaves Text empty, the caller has stdout.
	WholeText bool
	Text      string
	// Spans, when set, hold the text instead (Text is then empty): a reply
	// too long to hold in memory, in pieces of the stdout DecodeSpans
	// decodes.
	Spans  []Span
	Tokens int
	// Cost is what the call cost in US dollars where the CLI reports it
	// (claude's total_cost_usd), 0 otherwise.
	Cost float64
	// Session is the id of the session the CLI says it answered in (for
	// session: continue), "" when it names none.
	Session string
	Exit    int
	Reason  string
}

// A cliError is an error the CLI reported: an HTTP status when it gave one
// (0 otherwise) and its message.
type cliError struct {
	status int
	msg    string
	// plain: msg is the whole reason, not a message of the CLI's or the
	// server's to classify (exit 2, whatever words it holds).
	plain bool
}

// ReadReply reads a preset's stdout, stderr and exit code (CONTRACT 5) as
// ReadReplyFrom does, from stdout in memory; a preset's reply not in the
// CLI's format is stdout itself.
func ReadReply(pv Provider, perms, stdout, stderr string, exit int) CLIReply {
	out := ReadReplyFrom(pv, perms, io.NewSectionReader(strings.NewReader(stdout), 0, int64(len(stdout))), stderr, exit)
	if (!out.Parsed || out.WholeText) && pv.CLI != nil {
		out.Text = stdout
	}
	if out.Spans != nil {
		var b strings.Builder
		if DecodeSpans(strings.NewReader(stdout), out.Spans, &b) == nil {
			out.Text, out.Spans = b.String(), nil
		}
	}
	return out
}

// ReadReplyFrom reads a preset's stdout, stderr and exit code (CONTRACT
// 5): the reply, tokens and session from stdout, read as a stream (one
// line at a time: only what the reply needs is kept); an error from
// stdout's JSON, from the JSON at the end of stderr (gemini) or from
// stderr's text; a tool call refused for lack of permission. A failure's
// exit code is 1 (retryable) or 2 (invalid input or configuration), never
// the CLI's raw code. A reply that is not in the CLI's format (Parsed
// unset) has no Text: the reply is the raw stdout, which the caller has;
// so does one with WholeText.
func ReadReplyFrom(pv Provider, perms string, stdout *io.SectionReader, stderr string, exit int) CLIReply {
	var (
		out  CLIReply
		cerr *cliError
		r    stdoutReader
	)
	if pv.CLI != nil && pv.CLI.newReader != nil {
		r = pv.CLI.newReader()
	}
	scan := scanStdout(stdout, r)
	if r != nil {
		out, cerr = r.reply(scan.wholeDoc, stderr)
		out.Session = r.session(scan.wholeDoc)
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
			cerr.msg = scan.lastLine()
		}
		if cerr.msg == "" {
			cerr.msg = fmt.Sprintf("exited with code %d and said nothing on stderr", exit)
		}
	}
	if cerr != nil && cerr.plain {
		out.Exit, out.Reason = ExitInvalid, cerr.msg
		return out
	}
	if cerr != nil {
		if cerr.status == 0 {
			cerr.status = statusIn(cerr.msg)
		}
		out.Exit = classify(cerr.status, cerr.msg)
		if pv.CLI != nil && pv.CLI.ConfigBroken(cerr.msg) {
			out.Exit = ExitInvalid // whatever the message says, trying again cannot help
		}
		out.Reason = failureText(pv, cerr, out.Exit)
		return out
	}
	if exit != 0 {
		out.Reason = fmt.Sprintf("killed by signal %d", exit-128)
		return out
	}
	if r != nil {
		what := r.denied(scan.wholeDoc, stderr)
		byRule := ""
		if rd, ok := r.(ruleDenier); ok {
			byRule = rd.ruleDenied()
		}
		if perms == PermRead && byRule != "" {
			// read adds deny rules of its own: whatever refused the
			// call, read is what kept the agent from writing.
			what, byRule = strings.Join(slices.DeleteFunc([]string{what, byRule}, func(s string) bool { return s == "" }), ", "), ""
		}
		if what != "" || byRule != "" {
			out.Exit, out.Reason = ExitInvalid, deniedReason(pv, perms, what, byRule)
		}
	}
	return out
}

// A ruleDenier is a stdoutReader that tells the tool calls a deny rule of
// the user's settings refused from those the permission mode refused
// (claude): no permissions: level lifts a deny rule.
type ruleDenier interface {
	ruleDenied() string
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
	case pv.CLI != nil && pv.CLI.ConfigBroken(msg):
		return msg + "; fix " + configFile(pv) + " (the CLI reads it at every start), or use home: isolated"
	case e.status == 401 || e.status == 403:
		return "the model server refused the credentials" + code + ": " + msg +
			"; check " + keyVar + " or the CLI's login" + homeNote(pv)
	case authPattern().MatchString(msg):
		return "the CLI has no usable credentials: " + msg + "; " + loginFix(pv, keyVar, msg) + homeNote(pv)
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
// login, or its key variable in Smith's environment; or, for what the CLI
// said (msg) of a setup where neither is the fix, that setup's fix.
func loginFix(pv Provider, keyVar, msg string) string {
	f := pv.CLI
	if f != nil && f.AuthFix(msg) != "" {
		return loginFix(pv, keyVar, "") + "; " + f.AuthFix(msg)
	}
	switch {
	case f == nil:
		return "set " + keyVar
	case pv.Isolated:
		return "set " + keyVar + " in Smith's environment (home: isolated does not see your login; remove it to use your login)"
	}
	return f.Login + ", or set " + keyVar
}

// configFile names the CLI's configuration file in the home it was
// given.
func configFile(pv Provider) string {
	if pv.ConfigHome == "" {
		return "its " + pv.CLI.ConfigFile
	}
	return filepath.Join(pv.ConfigHome, pv.CLI.ConfigFile)
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

// A claudeReader reads `claude -p --output-format stream-json --verbose`
// (or json): the result object {"type":"result", "subtype":"success",
// "is_error":false,"result":"...","usage":{...},"total_cost_usd":N,
// "permission_denials":[...],"api_error_status":N,"session_id":"..."}.
// stdout is one object, an array whose last "result" element it is (json
// --verbose), or JSONL events whose last "result" line it is
// (stream-json): of the events only that line is kept.
//
// A hook of the user's (UserPromptSubmit) that blocks the prompt makes
// claude print a system event saying so and a result of subtype success
// whose text is the hook's message, with no model request: the call
// failed, and blocked holds the hook's reason.
type claudeReader struct {
	spanMarks
	lastResult []byte // the last line that is an event of type "result"
	res        gjson.Result
	resSet     bool
	blocked    string // the reason of a hook that blocked the prompt
	// byRule are the ids of the tool calls a deny rule refused (the
	// tool_result_meta of a user event: a permission_decision "reject"
	// with reason_type "rule", or non_execution_kind "permission-rule"),
	// not the permission mode; ruleTools, after denied, their tools.
	byRule    map[string]bool
	ruleTools []string
}

func (c *claudeReader) line(l []byte, _ int64) {
	if isResultLine(l) {
		c.lastResult = append(c.lastResult[:0], l...)
		return
	}
	if bytes.Contains(l, []byte(`"tool_result_meta"`)) && gjson.ValidBytes(l) {
		gjson.GetBytes(l, "tool_result_meta").ForEach(func(_, m gjson.Result) bool {
			d := m.Get("permission_decision")
			if d.Get("decision").String() == "reject" &&
				(d.Get("reason_type").String() == "rule" || m.Get("non_execution_kind").String() == "permission-rule") {
				if c.byRule == nil {
					c.byRule = map[string]bool{}
				}
				c.byRule[m.Get("id").String()] = true
			}
			return true
		})
	}
	if bytes.Contains(l, []byte(`"blocked_by_hook"`)) && gjson.ValidBytes(l) {
		if o := gjson.GetBytes(l, "prompt_submit_outcome"); o.Get("kind").String() == "blocked_by_hook" {
			c.blocked = o.Get("reason").String()
			if c.blocked == "" {
				c.blocked = "(the hook gave no reason)"
			}
		}
	}
}

// isResultLine tells a line that is a JSON object of type "result"
// (claude's and gemini's stream-json).
func isResultLine(l []byte) bool {
	return l[0] == '{' && gjson.ValidBytes(l) && gjson.GetBytes(l, "type").String() == "result"
}

// result returns claude's result object, gjson.Result{} for none.
func (c *claudeReader) result(doc func() gjson.Result) gjson.Result {
	if c.resSet {
		return c.res
	}
	c.resSet = true
	v := doc()
	if !v.Exists() {
		if c.lastResult != nil {
			c.res = gjson.ParseBytes(c.lastResult)
		}
		return c.res
	}
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
	if v.IsObject() && v.Get("type").String() == "result" {
		c.res = v
	}
	return c.res
}

// reply: tokens are input + output + cache creation + cache read tokens.
func (c *claudeReader) reply(doc func() gjson.Result, _ string) (CLIReply, *cliError) {
	v := c.result(doc)
	if !v.Exists() {
		return CLIReply{}, nil
	}
	u := v.Get("usage")
	out := CLIReply{Parsed: true, Cost: v.Get("total_cost_usd").Float(),
		Tokens: int(u.Get("input_tokens").Int() + u.Get("output_tokens").Int() +
			u.Get("cache_creation_input_tokens").Int() + u.Get("cache_read_input_tokens").Int())}
	c.setText(&out, v.Get("result"))
	if c.blocked != "" {
		return out, &cliError{plain: true, msg: "a UserPromptSubmit hook in claude's settings blocked the prompt before any model request: " +
			oneLine(c.blocked) + "; change the prompt, or the hook (claude's settings.json)"}
	}
	if v.Get("is_error").Bool() || strings.HasPrefix(v.Get("subtype").String(), "error") {
		msg := out.Text
		if msg == "" {
			msg = v.Get("subtype").String()
		}
		return out, &cliError{status: int(v.Get("api_error_status").Int()), msg: msg}
	}
	return out, nil
}

// session is session_id of the result object.
func (c *claudeReader) session(doc func() gjson.Result) string {
	return c.result(doc).Get("session_id").String()
}

// denied reads permission_denials of the result object: the tools the
// permission mode refused; those a deny rule refused go to ruleTools.
func (c *claudeReader) denied(doc func() gjson.Result, _ string) string {
	var tools []string
	c.result(doc).Get("permission_denials").ForEach(func(_, d gjson.Result) bool {
		if c.byRule[d.Get("tool_use_id").String()] {
			c.ruleTools = appendUnique(c.ruleTools, d.Get("tool_name").String())
		} else {
			tools = appendUnique(tools, d.Get("tool_name").String())
		}
		return true
	})
	return strings.Join(tools, ", ")
}

// ruleDenied is what a deny rule of claude's settings refused (after
// denied).
func (c *claudeReader) ruleDenied() string { return strings.Join(c.ruleTools, ", ") }

// A geminiReader reads `gemini --output-format stream-json`: JSONL events;
// the reply is the assistant's messages (streamed in pieces, "delta":
// true) after the last tool call, joined; the last event {"type":"result",
// "status":"success"|"error","error":{"message"},"stats":{"total_tokens"}}
// gives the tokens and the error (its message often the server's JSON
// error body inside "[API Error: ...]"); the init event names the session.
// Or `gemini --output-format json`: stdout {"response": "...", "stats":
// {"models": {NAME: {"tokens": {"total": N}}}}, "session_id": "..."}; an
// error is a JSON object {"error": {"message", "code"}} at the end of
// stderr (or, in older versions, in stdout). An empty response with
// "warnings" (gemini's loop detection stopped the model) is an error too,
// though gemini exits 0. Tokens are the sum of every model's total.
//
// A hook of the user's that blocks the prompt (BeforeAgent) or stops the
// agent makes gemini print an error event of severity warning ("Agent
// execution blocked: REASON", "Agent execution stopped: REASON") and a
// result of status success: the call failed, and hook holds that message.
type geminiReader struct {
	spanMarks
	lastResult []byte          // the last line that is an event of type "result"
	text       strings.Builder // the assistant's messages since the last tool call
	// spans are where they are in the stdout; long: they passed maxText
	// (or one could not be placed), text is dropped and spans hold them.
	spans     []Span
	unplaced  bool // a span is not known
	long      bool
	sessionID string // the first non-empty session_id of a line
	hook      string // the message of a hook that blocked or stopped the agent
}

func (g *geminiReader) line(l []byte, off int64) {
	if g.sessionID == "" && bytes.Contains(l, []byte(`"session_id"`)) && gjson.ValidBytes(l) {
		g.sessionID = gjson.GetBytes(l, "session_id").String()
	}
	if l[0] != '{' || !gjson.ValidBytes(l) {
		return
	}
	switch gjson.GetBytes(l, "type").String() {
	case "message":
		if gjson.GetBytes(l, "role").String() == "assistant" {
			if !gjson.GetBytes(l, "delta").Bool() {
				g.reset()
			}
			g.add(gjson.GetBytes(l, "content"), off)
		}
	case "tool_use":
		g.reset() // the reply is what the model said after its last tool call
	case "result":
		g.lastResult = append(g.lastResult[:0], l...)
	case "error":
		if m := gjson.GetBytes(l, "message").String(); strings.HasPrefix(m, "Agent execution blocked") || strings.HasPrefix(m, "Agent execution stopped") {
			g.hook = m
		}
	}
}

// maxText is the most of a reply in pieces (gemini's deltas) held in
// memory: past it, the reply is its pieces' places in the stdout.
const maxText = 1 << 20

// reset starts the reply again.
func (g *geminiReader) reset() {
	g.text.Reset()
	g.spans, g.unplaced, g.long = g.spans[:0], false, false
}

// add appends v, a message's content in a line at off, to the reply.
func (g *geminiReader) add(v gjson.Result, off int64) {
	text, sp, placed := g.textOf(v, off)
	if !v.Exists() {
		return
	}
	g.spans = append(g.spans, sp)
	g.unplaced = g.unplaced || !placed
	if _, isSpan := g.spanOf(v); isSpan || g.long {
		g.long = true
		g.text.Reset()
		return
	}
	g.text.WriteString(text)
	if g.text.Len() > maxText && !g.unplaced {
		g.long = true
		g.text.Reset()
	}
}

// textOut sets out's text: the messages, or their spans when long.
func (g *geminiReader) textOut(out *CLIReply) {
	if g.long {
		out.Spans = g.spans
		return
	}
	out.Text = g.text.String()
}

func (g *geminiReader) reply(doc func() gjson.Result, stderr string) (CLIReply, *cliError) {
	if g.lastResult != nil {
		return g.streamReply(gjson.ParseBytes(g.lastResult), stderr)
	}
	var out CLIReply
	v := doc()
	if v.IsObject() && (v.Get("response").Exists() || v.Get("stats").Exists()) {
		out.Parsed = true
		g.setText(&out, v.Get("response"))
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

// streamReply is the reply of a stream-json stdout whose last result
// event is result.
func (g *geminiReader) streamReply(result gjson.Result, stderr string) (CLIReply, *cliError) {
	out := CLIReply{Parsed: true, Tokens: int(result.Get("stats.total_tokens").Int())}
	g.textOut(&out)
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
	if reason, ok := strings.CutPrefix(g.hook, "Agent execution blocked"); ok {
		return out, &cliError{plain: true, msg: "a hook in gemini's settings blocked the prompt before any model request: " +
			oneLine(strings.TrimLeft(reason, ": ")) + "; change the prompt, or the hook (gemini's settings.json)"}
	}
	if reason, ok := strings.CutPrefix(g.hook, "Agent execution stopped"); ok {
		return out, &cliError{plain: true, msg: "a hook in gemini's settings stopped the agent: " +
			oneLine(strings.TrimLeft(reason, ": ")) + "; change the hook (gemini's settings.json) if the agent should go on"}
	}
	if w := result.Get("warnings"); out.Text == "" && out.Spans == nil && len(w.Array()) > 0 {
		var msgs []string
		for _, m := range w.Array() {
			msgs = append(msgs, m.String())
		}
		return out, &cliError{msg: "gemini gave no reply: " + strings.Join(msgs, "; ")}
	}
	return out, nil
}

// session is session_id of gemini's one JSON object (json), or of the
// first event naming one, its init event (stream-json). (Its error object
// on stderr names it too, but a failed call continues nothing.)
func (g *geminiReader) session(doc func() gjson.Result) string {
	if v := doc(); v.Exists() {
		return v.Get("session_id").String()
	}
	return g.sessionID
}

// denied finds the tool errors gemini prints on stderr for a tool it did
// not offer (approval mode default hides the write tools) or refused.
func (g *geminiReader) denied(_ func() gjson.Result, stderr string) string {
	var tools []string
	for line := range strings.SplitSeq(stderr, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "Error executing tool ")
		if !ok {
			continue
		}
		tool, msg, _ := strings.Cut(rest, ": ")
		if strings.Contains(msg, "denied") || strings.Contains(msg, "not found") && isWriteTool(tool) {
			tools = appendUnique(tools, tool)
		}
	}
	return strings.Join(tools, ", ")
}

// stderrStatus finds the HTTP status in the error object gemini dumps on
// stderr ("  status: 429").
var stderrStatus = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^\s*status: ([45]\d\d)\s*$`) })

// codexStartFailure is the reason of a codex that did not start: when it
// could not load config.toml, its message (the lines from "Error loading
// config", at most three, without the drawing under a syntax error's
// line) joined by spaces; else stderr's last line.
func codexStartFailure(s string) string {
	lines := strings.Split(ansiPattern().ReplaceAllString(s, ""), "\n")
	for i, l := range lines {
		if !strings.HasPrefix(strings.TrimSpace(l), "Error loading config") {
			continue
		}
		var out []string
		for _, l := range lines[i:] {
			l = strings.TrimSpace(l)
			if l == "" && len(out) > 0 || len(out) == 3 {
				break
			}
			if l == "" || strings.HasPrefix(l, "|") || sourceLine().MatchString(l) {
				continue
			}
			out = append(out, l)
		}
		return strings.Join(out, " ")
	}
	return lastLine(s)
}

// sourceLine matches the line of a file that a syntax error quotes ("8 |
// [model_providers.gateway").
var sourceLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\d+ +\|`) })

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

// A codexReader reads `codex exec --json`: one JSON event per line. The
// reply is the text of the last agent message ({"type":"item.completed",
// "item":{"type":"agent_message","text":...}}); tokens are the input +
// output tokens of every turn.completed; a turn.failed (or, with no agent
// message, an error event) is the error. Item errors (warnings) and
// "Reconnecting" errors are not. The other events, the commands' output
// among them, are read and dropped. A line that is not such an event
// makes the whole stdout the reply. thread.started names the session.
type codexReader struct {
	spanMarks
	out        CLIReply
	raw        bool // a line is no event: the reply is the raw stdout
	seen, got  bool
	failed     string
	lastErr    string
	thread     string
	threadSeen bool
}

func (c *codexReader) line(l []byte, _ int64) {
	if !c.threadSeen && bytes.Contains(l, []byte(`"thread.started"`)) && gjson.ValidBytes(l) &&
		gjson.GetBytes(l, "type").String() == "thread.started" {
		c.thread, c.threadSeen = gjson.GetBytes(l, "thread_id").String(), true
	}
	if c.raw {
		return
	}
	if !gjson.ValidBytes(l) {
		c.raw = true
		return
	}
	switch gjson.GetBytes(l, "type").String() {
	case "item.completed":
		if gjson.GetBytes(l, "item.type").String() == "agent_message" {
			c.got = true
			c.setText(&c.out, gjson.GetBytes(l, "item.text"))
		}
	case "turn.completed":
		u := gjson.GetBytes(l, "usage")
		c.out.Tokens += int(u.Get("input_tokens").Int() + u.Get("output_tokens").Int())
	case "turn.failed":
		c.failed = gjson.GetBytes(l, "error.message").String()
	case "error":
		c.lastErr = gjson.GetBytes(l, "message").String()
	case "":
		if m := gjson.GetBytes(l, "msg"); m.Get("type").String() == "agent_message" {
			c.got = true
			c.setText(&c.out, m.Get("message"))
		} else if !m.Exists() {
			c.raw = true
			return
		}
	}
	c.seen = true
}

func (c *codexReader) reply(func() gjson.Result, string) (CLIReply, *cliError) {
	if c.raw || !c.seen {
		return CLIReply{}, nil
	}
	out := c.out
	out.Parsed, out.WholeText = true, !c.got
	switch {
	case c.failed != "":
		return out, &cliError{msg: c.failed}
	case !c.got && c.lastErr != "":
		return out, &cliError{msg: c.lastErr}
	}
	return out, nil
}

// session is thread_id of codex's thread.started event.
func (c *codexReader) session(func() gjson.Result) string { return c.thread }

// denied finds codex's refusals (on stderr) of a patch or a command its
// sandbox blocks.
func (c *codexReader) denied(_ func() gjson.Result, stderr string) string {
	for line := range strings.SplitSeq(stderr, "\n") {
		if !strings.Contains(line, "rejected: ") || !strings.Contains(line, "sandbox") && !strings.Contains(line, "approval") {
			continue
		}
		if _, after, ok := strings.Cut(line, "error="); ok {
			line = after
		}
		return strings.TrimSpace(line)
	}
	return ""
}

// deniedReason says which permission the denied tool calls (what) lacked,
// and which deny rule of the user's settings refused the others (byRule:
// the files pv.DenyFiles that hold deny rules, or the CLI's settings).
func deniedReason(pv Provider, perms, what, byRule string) string {
	var parts []string
	if byRule != "" {
		where := pv.Name + "'s settings"
		if len(pv.DenyFiles) > 0 {
			where = strings.Join(pv.DenyFiles, ", ")
		}
		parts = append(parts, fmt.Sprintf("the agent was denied %s by a deny rule of your own in %s (permissions.deny), which holds with every permissions: level; change that rule to allow it", byRule, where))
	}
	if what != "" {
		switch perms {
		case PermRead:
			parts = append(parts, fmt.Sprintf("the agent was denied %s with permissions: read; set permissions: edit to allow it", what))
		case PermFull:
			parts = append(parts, fmt.Sprintf("the agent was denied %s with permissions: full: something of the CLI's own setup refused it (a hook, a policy), not the permission level", what))
		default:
			parts = append(parts, fmt.Sprintf("the agent was denied %s with permissions: %s; set permissions: %s to allow it", what, perms, PermFull))
		}
	}
	return strings.Join(parts, "; ")
}
