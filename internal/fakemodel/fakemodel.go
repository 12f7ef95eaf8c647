// Package fakemodel is a scripted model server for tests and offline runs:
// it speaks the wire protocols the agent CLIs use (Anthropic messages,
// Gemini generateContent/streamGenerateContent, OpenAI responses), logs every
// request, answers from a script (text, a tool call that writes a file, then
// text) and injects failures per request (an HTTP status, a hang, a stream
// cut short, a dropped connection). It listens on 127.0.0.1 only and stops
// with its context, Close, or an idle timeout.
package fakemodel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Protocols, as Rule.Protocol and Logged.Protocol name them.
const (
	Anthropic = "anthropic" // POST /v1/messages (claude)
	Gemini    = "gemini"    // POST /v1beta/models/M:generateContent, :streamGenerateContent (gemini)
	OpenAI    = "openai"    // POST /v1/responses (codex)
)

// A CLI is an agent CLI preset as the tests and benchmarks point it at
// this server: the protocol it speaks and a model it asks for (codex's has
// no code mode, so it offers exec_command).
type CLI struct{ Name, Protocol, Model string }

// CLIs are the presets this server answers, in the order of the presets.
var CLIs = []CLI{
	{"claude", Anthropic, "claude-fake-1"},
	{"gemini", Gemini, "gemini-2.5-pro"},
	{"codex", OpenAI, "gpt-fake"},
}

// CLIFor returns the CLI of preset name.
func CLIFor(name string) (CLI, bool) {
	for _, c := range CLIs {
		if c.Name == name {
			return c, true
		}
	}
	return CLI{}, false
}

// A Rule answers the requests it matches.
type Rule struct {
	// Protocol limits the rule to one protocol; "" matches all.
	Protocol string `json:"protocol,omitempty"`
	// Match is a substring the request's prompt (the text of its last user
	// message that has text) must contain; "" matches every prompt.
	Match string `json:"match,omitempty"`
	// Times is how many requests the rule answers; 0 = any number.
	Times int   `json:"times,omitempty"`
	Reply Reply `json:"reply"`
}

// A Reply is what the server answers.
type Reply struct {
	// Text is the model's final text.
	Text string `json:"text,omitempty"`
	// WriteFile, when set, makes the first answer a tool call that writes
	// the file (claude Write, gemini write_file, codex apply_patch); the
	// request carrying the tool's result gets Text.
	WriteFile *WriteFile `json:"write_file,omitempty"`
	// Shell, when set (and WriteFile is not), makes the first answer a
	// tool call that runs this shell command in the agent's working
	// directory (claude Bash, gemini run_shell_command, codex
	// exec_command); the request carrying the tool's result gets Text.
	Shell string `json:"shell,omitempty"`
	// Status, when not 0, is an HTTP error answered with the protocol's
	// error body holding Message.
	Status  int    `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
	// Hang never answers (until the client or the server goes away).
	Hang bool `json:"hang,omitempty"`
	// Cut starts a streamed answer and breaks the connection midway.
	Cut bool `json:"cut,omitempty"`
	// Drop closes the connection without answering.
	Drop bool `json:"drop,omitempty"`
	// InputTokens and OutputTokens are the usage reported (default 10, 5).
	InputTokens  int `json:"input_tokens,omitempty"`
	OutputTokens int `json:"output_tokens,omitempty"`
}

// A WriteFile is a tool call writing Content to Path (relative to the
// agent's working directory, or absolute).
type WriteFile struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// Logged is one request the server received.
type Logged struct {
	Time     time.Time `json:"time"`
	Protocol string    `json:"protocol"`
	Method   string    `json:"method"`
	Path     string    `json:"path"`
	Model    string    `json:"model,omitempty"`
	Stream   bool      `json:"stream"`
	// Prompt is the text of the last user message that has text (the
	// prompt, with whatever the CLI put beside it in that message),
	// ToolResult the text of the tool result the request carries, if any.
	Prompt     string `json:"prompt"`
	ToolResult string `json:"tool_result,omitempty"`
	// Tools are the names of the tools offered.
	Tools  []string `json:"tools,omitempty"`
	Rule   int      `json:"rule"` // the index of the rule that answered, -1 none
	Status int      `json:"status"`
	Body   string   `json:"-"`
	// Header holds the request's headers (keys and tokens among them:
	// not written to the log file).
	Header http.Header `json:"-"`
}

// A Server is a running fake model server.
type Server struct {
	URL string // http://127.0.0.1:PORT

	ln     net.Listener
	srv    *http.Server
	idle   time.Duration
	stop   chan struct{}
	closed sync.Once
	done   chan struct{}

	mu      sync.Mutex
	rules   []Rule
	used    []int
	log     []Logged
	onLog   func(Logged)
	pending map[string]int // tool call id -> rule
	calls   int
	last    time.Time
}

// Options configure a Server.
type Options struct {
	// Idle stops the server after this long without a request; 0 = never.
	Idle time.Duration
	// OnLog is called with every logged request.
	OnLog func(Logged)
}

// Start listens on 127.0.0.1 (a free port) and serves rules until ctx is
// done, Close is called, or the idle timeout passes.
func Start(ctx context.Context, rules []Rule, opt Options) (*Server, error) {
	return StartAt(ctx, "127.0.0.1:0", rules, opt)
}

// StartAt is Start on addr, which must be a 127.0.0.1 address.
func StartAt(ctx context.Context, addr string, rules []Rule, opt Options) (*Server, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if host != "127.0.0.1" {
		return nil, fmt.Errorf("fakemodel listens on 127.0.0.1 only, not %q", host)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{
		URL:     "http://" + ln.Addr().String(),
		ln:      ln,
		idle:    opt.Idle,
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		rules:   append([]Rule(nil), rules...),
		used:    make([]int, len(rules)),
		onLog:   opt.OnLog,
		pending: map[string]int{},
		last:    time.Now(),
	}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	go s.watch(ctx)
	return s, nil
}

// watch closes the server when ctx is done, Close is called or it was idle
// too long.
func (s *Server) watch(ctx context.Context) {
	defer close(s.done)
	var tick <-chan time.Time
	if s.idle > 0 {
		t := time.NewTicker(min(s.idle/4+time.Millisecond, time.Second))
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
		case <-s.stop:
		case <-tick:
			s.mu.Lock()
			idle := time.Since(s.last) > s.idle
			s.mu.Unlock()
			if !idle {
				continue
			}
		}
		break
	}
	sctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := s.srv.Shutdown(sctx); err != nil {
		_ = s.srv.Close() // hanging handlers: cut them
	}
}

// Close stops the server and waits until it has stopped.
func (s *Server) Close() {
	s.closed.Do(func() { close(s.stop) })
	<-s.done
}

// Done is closed once the server has stopped.
func (s *Server) Done() <-chan struct{} { return s.done }

// Requests returns every request logged so far.
func (s *Server) Requests() []Logged {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Logged(nil), s.log...)
}

// SetRules replaces the script.
func (s *Server) SetRules(rules []Rule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append([]Rule(nil), rules...)
	s.used = make([]int, len(rules))
}

// RefusedURL returns the URL of a 127.0.0.1 port nothing listens on, for a
// connection refused.
func RefusedURL() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	u := "http://" + ln.Addr().String()
	return u, ln.Close()
}

// A request is what the server understood of a request body.
type request struct {
	protocol   string
	model      string
	stream     bool
	prompt     string
	toolResult string
	toolCallID string // the id of the tool call the result answers
	hasResult  bool
	tools      []string
	wantsJSON  bool // gemini: a structured (JSON) answer is asked for
	cwd        string
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	proto := protocolOf(r)
	var req request
	if err == nil && proto != "" {
		req, err = parse(proto, r, body)
	}
	s.mu.Lock()
	s.last = time.Now()
	entry := Logged{Time: time.Now().UTC(), Protocol: proto, Method: r.Method, Path: r.URL.Path,
		Model: req.model, Stream: req.stream, Prompt: req.prompt, ToolResult: req.toolResult,
		Tools: req.tools, Rule: -1, Body: string(body), Header: r.Header.Clone()}
	var (
		rep    Reply
		final  bool // answering a tool result: the final text
		callID string
	)
	switch {
	case proto == "" || err != nil:
		entry.Status = http.StatusNotFound
		if err != nil {
			entry.Status = http.StatusBadRequest
		}
	case req.hasResult:
		idx, ok := s.pending[req.toolCallID]
		if !ok {
			idx = s.pending[""]
		}
		entry.Rule, final = idx, true
		if idx >= 0 && idx < len(s.rules) {
			rep = s.rules[idx].Reply
		}
	case req.wantsJSON:
		// gemini's side calls (model routing, next-speaker checks) ask for
		// JSON; they are answered without consuming a rule.
		rep = Reply{Text: `{"reasoning":"fakemodel","model_choice":"flash","complexity_reasoning":"fakemodel","complexity_score":10,"next_speaker":"user"}`}
	default:
		entry.Rule = s.pick(proto, req.prompt)
		if entry.Rule >= 0 {
			rep = s.rules[entry.Rule].Reply
		} else {
			rep = Reply{Text: "fakemodel: no rule matches this prompt"}
		}
		if (rep.WriteFile != nil || rep.Shell != "") && rep.Status == 0 && !rep.Hang && !rep.Drop && !rep.Cut {
			s.calls++
			callID = fmt.Sprintf("call_%d", s.calls)
			s.pending[callID] = entry.Rule
			s.pending[""] = entry.Rule
		}
	}
	if entry.Status == 0 {
		entry.Status = http.StatusOK
		if rep.Status != 0 {
			entry.Status = rep.Status
		}
	}
	s.log = append(s.log, entry)
	onLog := s.onLog
	s.mu.Unlock()
	if onLog != nil {
		onLog(entry)
	}

	switch {
	case proto == "" || err != nil:
		http.Error(w, fmt.Sprintf("fakemodel: %s %s: %v", r.Method, r.URL.Path, err), entry.Status)
		return
	case rep.Drop:
		panic(http.ErrAbortHandler)
	case rep.Hang:
		select {
		case <-r.Context().Done():
		case <-s.stop:
			panic(http.ErrAbortHandler) // the client sees the connection break
		}
		return
	case rep.Status != 0:
		writeError(w, proto, rep.Status, rep.Message)
		return
	}
	a := answer{text: rep.Text, in: rep.InputTokens, out: rep.OutputTokens, cut: rep.Cut, model: req.model}
	if a.in == 0 {
		a.in = 10
	}
	if a.out == 0 {
		a.out = 5
	}
	switch {
	case final:
	case rep.WriteFile != nil:
		a.text = ""
		a.call = &toolCall{id: callID, path: rep.WriteFile.Path, content: rep.WriteFile.Content, cwd: req.cwd, tool: openaiWriteTool(body)}
	case rep.Shell != "":
		a.text = ""
		a.call = &toolCall{id: callID, shell: rep.Shell, cwd: req.cwd, tool: openaiShellTool(body)}
	}
	switch proto {
	case Anthropic:
		writeAnthropic(w, req.stream, a)
	case Gemini:
		writeGemini(w, req.stream, a)
	case OpenAI:
		writeOpenAI(w, a)
	}
}

// pick returns the first rule matching the prompt that has uses left, and
// uses it; -1 when none.
func (s *Server) pick(proto, prompt string) int {
	for i, r := range s.rules {
		if r.Protocol != "" && r.Protocol != proto {
			continue
		}
		if r.Match != "" && !strings.Contains(prompt, r.Match) {
			continue
		}
		if r.Times > 0 && s.used[i] >= r.Times {
			continue
		}
		s.used[i]++
		return i
	}
	return -1
}

// protocolOf tells the protocol from the request path.
func protocolOf(r *http.Request) string {
	p := r.URL.Path
	switch {
	case r.Method != http.MethodPost:
		return ""
	case strings.HasSuffix(p, "/messages"):
		return Anthropic
	case strings.Contains(p, ":generateContent"), strings.Contains(p, ":streamGenerateContent"):
		return Gemini
	case strings.HasSuffix(p, "/responses"):
		return OpenAI
	}
	return ""
}

// readBody reads the whole body (at most 64 MiB).
func readBody(r *http.Request) ([]byte, error) {
	const maxBody = 64 << 20
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err == nil && len(b) > maxBody {
		err = errors.New("request body over 64 MiB")
	}
	return b, err
}
