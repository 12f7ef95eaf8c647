package workers

import (
	"regexp"
	"strings"

	"github.com/tidwall/gjson"
)

// A replyFormat says how a provider's stdout is read.
type replyFormat uint8

const (
	formatRaw    replyFormat = iota // stdout is the reply
	formatClaude                    // claude -p --output-format json: one result object
	formatGemini                    // gemini --output-format json: {response, stats, error}
	formatCodex                     // codex exec --json: JSONL events
)

// A provider is a resolved provider: a preset, a workflow's own provider, or
// a workflow's override of a preset (which keeps the preset's reply format).
type provider struct {
	name      string
	command   []string
	defaults  []Param
	transport *Transport
	format    replyFormat
	mock      bool // the built-in mock: no process
}

// presetNames lists the built-in presets, in documentation order.
var presetNames = [...]string{"claude", "gemini", "codex", "mock"}

// preset returns a built-in preset (a fresh value each time).
//
//   - claude: Claude Code headless, prompt on stdin, one JSON result object.
//   - gemini: Gemini CLI headless, prompt as the -p argument (argv transport).
//   - codex: Codex CLI non-interactive; "-" makes it read the prompt from
//     stdin, which has no argv length limit; --skip-git-repo-check lets it run
//     in a WORKSPACE that is not a git repository.
//   - mock: the built-in offline provider (mock.go).
func preset(name string) (provider, bool) {
	switch name {
	case "claude":
		return provider{name: name, command: []string{"claude", "-p", "--output-format", "json"}, format: formatClaude}, true
	case "gemini":
		return provider{name: name, command: []string{"gemini", "--output-format", "json", "-p", "${PROMPT}"}, format: formatGemini}, true
	case "codex":
		return provider{name: name, command: []string{"codex", "exec", "--json", "--skip-git-repo-check", "-"}, format: formatCodex}, true
	case "mock":
		return provider{name: name, mock: true}, true
	}
	return provider{}, false
}

// lookupProvider resolves name: a workflow's ProviderDef of that name
// overrides the preset (its command replaces the preset's; a def without a
// command keeps the preset's command, so `mock: {defaults: {script: x}}` stays
// the built-in mock), otherwise the preset.
func lookupProvider(req *Request, name string) (provider, bool) {
	p, isPreset := preset(name)
	for _, d := range req.ProviderDefs {
		if d.Name != name {
			continue
		}
		if len(d.Command) > 0 {
			p.command, p.mock = d.Command, false
		} else if !isPreset {
			return provider{}, false
		}
		p.name, p.defaults, p.transport = name, d.Defaults, d.Transport
		return p, true
	}
	return p, isPreset
}

// providerNames returns every provider name req can use: the presets, then the
// workflow's own.
func providerNames(req *Request) []string {
	names := append([]string(nil), presetNames[:]...)
	for _, d := range req.ProviderDefs {
		if _, ok := preset(d.Name); !ok {
			names = append(names, d.Name)
		}
	}
	return names
}

// A parsedReply is what a preset read from its CLI's JSON.
type parsedReply struct {
	text   string
	tokens int
	isErr  bool // the CLI reported an error; text is its message
	exit   int  // for isErr: 1 retryable, 2 not
}

// retryablePattern recognises the errors worth trying again: rate limits,
// overload, server errors, timeouts and network failures.
var retryablePattern = regexp.MustCompile(`(?i)\b(429|5\d\d)\b|rate[ _-]?limit|overloaded|too many requests|resource[ _]exhausted|unavailable|timed? ?out|network|socket hang up|fetch failed|econnreset|econnrefused|etimedout|enotfound|eai_again`)

// classify maps a provider's error to its exit code: 1 (retryable) for HTTP
// 429, 5xx, overload and network errors, 2 (invalid input or configuration,
// not retried) for everything else, 400/401/403 included.
func classify(code int64, msg string) int {
	switch {
	case code == 429 || code >= 500 && code <= 599:
		return exitRetryable
	case code >= 400 && code <= 499:
		return exitInvalid
	case retryablePattern.MatchString(msg):
		return exitRetryable
	}
	return exitInvalid
}

// parseReply reads stdout in the provider's format. It reports false when
// stdout is not in that format; the raw stdout is then the reply.
func parseReply(format replyFormat, stdout string, exit int) (parsedReply, bool) {
	switch format {
	case formatClaude:
		return parseClaude(stdout)
	case formatGemini:
		return parseGemini(stdout, exit)
	case formatCodex:
		return parseCodex(stdout)
	}
	return parsedReply{}, false
}

// parseClaude reads `claude -p --output-format json`: an object
// {"type":"result","subtype":"success","is_error":false,"result":"...",
// "usage":{"input_tokens":N,"output_tokens":M,...}}, or (with --verbose) an
// array of messages whose last "result" element is that object. Tokens are
// input + output + cache creation + cache read tokens.
func parseClaude(stdout string) (parsedReply, bool) {
	s := strings.TrimSpace(stdout)
	if !gjson.Valid(s) {
		return parsedReply{}, false
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
		return parsedReply{}, false
	}
	u := v.Get("usage")
	pr := parsedReply{
		text: v.Get("result").String(),
		tokens: int(u.Get("input_tokens").Int() + u.Get("output_tokens").Int() +
			u.Get("cache_creation_input_tokens").Int() + u.Get("cache_read_input_tokens").Int()),
	}
	if v.Get("is_error").Bool() || strings.HasPrefix(v.Get("subtype").String(), "error") {
		pr.isErr = true
		if pr.text == "" {
			pr.text = v.Get("subtype").String()
		}
		pr.exit = classify(0, pr.text)
	}
	return pr, true
}

// parseGemini reads `gemini --output-format json`: {"response": "...",
// "stats": {"models": {NAME: {"tokens": {"total": N, ...}}}}, "error":
// {"type", "message", "code"}}. Tokens are the sum of every model's total.
// Without an error object, exit code 42 (the CLI's input error) is mapped to
// 2 and 53 (turn limit) to 2 as well.
func parseGemini(stdout string, exit int) (parsedReply, bool) {
	s := strings.TrimSpace(stdout)
	if !gjson.Valid(s) {
		return parsedReply{}, false
	}
	v := gjson.Parse(s)
	if !v.IsObject() || !v.Get("response").Exists() && !v.Get("error").Exists() {
		return parsedReply{}, false
	}
	pr := parsedReply{text: v.Get("response").String()}
	v.Get("stats.models").ForEach(func(_, m gjson.Result) bool {
		pr.tokens += int(m.Get("tokens.total").Int())
		return true
	})
	if e := v.Get("error"); e.Exists() && e.Type != gjson.Null {
		pr.isErr = true
		msg := e.Get("message").String()
		if msg == "" {
			msg = e.String()
		}
		pr.text = msg
		pr.exit = classify(e.Get("code").Int(), msg)
	} else if exit == 42 || exit == 53 {
		pr.isErr, pr.exit = true, exitInvalid
	}
	return pr, true
}

// parseCodex reads `codex exec --json`: one JSON event per line. The reply
// is the text of the last agent message ({"type":"item.completed","item":
// {"type":"agent_message","text":...}}, or the older {"msg":{"type":
// "agent_message","message":...}}); tokens are the input + output tokens of
// every turn.completed; a turn.failed or error event without any agent
// message is an error.
func parseCodex(stdout string) (parsedReply, bool) {
	var (
		pr     parsedReply
		seen   bool
		errMsg string
		got    bool
	)
	for line := range strings.SplitSeq(stdout, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if !gjson.Valid(line) {
			return parsedReply{}, false
		}
		ev := gjson.Parse(line)
		switch ev.Get("type").String() {
		case "item.completed":
			if it := ev.Get("item"); it.Get("type").String() == "agent_message" {
				pr.text, got = it.Get("text").String(), true
			}
		case "turn.completed":
			pr.tokens += int(ev.Get("usage.input_tokens").Int() + ev.Get("usage.output_tokens").Int())
		case "turn.failed":
			errMsg = ev.Get("error.message").String()
		case "error":
			errMsg = ev.Get("message").String()
		case "":
			if m := ev.Get("msg"); m.Get("type").String() == "agent_message" {
				pr.text, got = m.Get("message").String(), true
			} else if !m.Exists() {
				return parsedReply{}, false
			}
		}
		seen = true
	}
	if !seen {
		return parsedReply{}, false
	}
	if !got && errMsg != "" {
		pr.isErr, pr.text, pr.exit = true, errMsg, classify(0, errMsg)
	}
	return pr, true
}
