package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
)

// An answer is one successful response to write.
type answer struct {
	text    string
	call    *toolCall
	in, out int
	cut     bool
	model   string
}

// A toolCall is a file write, or a shell command (shell set), the model
// asks the CLI to make.
type toolCall struct {
	id, path, content, cwd string
	shell                  string
	tool                   string // openai: the tool offered for writing or the shell (openaiWriteTool, openaiShellTool)
}

// file returns the path to write: absolute when the working directory is
// known.
func (c *toolCall) file() string {
	if filepath.IsAbs(c.path) || c.cwd == "" {
		return c.path
	}
	return filepath.Join(c.cwd, c.path)
}

// chunkSize is the size of the text deltas of a streamed answer.
const chunkSize = 16 << 10

// chunks splits s into deltas (at least one).
func chunks(s string) []string {
	var out []string
	for len(s) > chunkSize {
		out = append(out, s[:chunkSize])
		s = s[chunkSize:]
	}
	return append(out, s)
}

var cwdPatterns = []*regexp.Regexp{
	regexp.MustCompile(`<cwd>([^<]+)</cwd>`),
	regexp.MustCompile(`[Ww]orking directory: ?(/[^\s"\\]+)`),
	regexp.MustCompile(`working in the directory: ?(/[^\s"\\]+)`),
}

// cwdOf finds the agent's working directory in what the CLI told the model.
func cwdOf(body []byte) string {
	for _, re := range cwdPatterns {
		if m := re.FindSubmatch(body); m != nil {
			return strings.TrimRight(string(m[1]), ".")
		}
	}
	return ""
}

func parse(proto string, r *http.Request, body []byte) (request, error) {
	var (
		req request
		err error
	)
	switch proto {
	case Anthropic:
		req, err = parseAnthropic(body)
	case Gemini:
		req, err = parseGemini(r, body)
	case OpenAI:
		req, err = parseOpenAI(body)
	}
	req.protocol = proto
	req.cwd = cwdOf(body)
	return req, err
}

// textOf returns the text of a content value: a string, or a list of blocks
// whose "text" (or "content") fields are joined by newlines.
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type    string          `json:"type"`
		Text    string          `json:"text"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		switch {
		case b.Text != "":
			parts = append(parts, b.Text)
		case len(b.Content) > 0:
			parts = append(parts, textOf(b.Content))
		}
	}
	return strings.Join(parts, "\n")
}

// ---- Anthropic messages ----

func parseAnthropic(body []byte) (request, error) {
	var m struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return request{}, err
	}
	req := request{model: m.Model, stream: m.Stream}
	for _, t := range m.Tools {
		req.tools = append(req.tools, t.Name)
	}
	var prompts []string
	for i, msg := range m.Messages {
		if msg.Role != "user" {
			continue
		}
		var blocks []struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
		}
		if json.Unmarshal(msg.Content, &blocks) != nil {
			prompts = []string{textOf(msg.Content)}
			continue
		}
		var texts []string
		for _, b := range blocks {
			switch b.Type {
			case "text":
				texts = append(texts, b.Text)
			case "tool_result":
				if i == len(m.Messages)-1 {
					req.hasResult, req.toolCallID = true, b.ToolUseID
					req.toolResult = textOf(b.Content)
				}
			}
		}
		if len(texts) > 0 {
			prompts = texts
		}
	}
	req.prompt = strings.Join(prompts, "\n")
	return req, nil
}

func writeAnthropic(w http.ResponseWriter, stream bool, a answer) {
	stop := "end_turn"
	var block map[string]any
	var input string
	tool := "Write"
	if a.call != nil {
		stop = "tool_use"
		in, _ := json.Marshal(map[string]string{"file_path": a.call.file(), "content": a.call.content})
		if a.call.shell != "" {
			tool = "Bash"
			in, _ = json.Marshal(map[string]string{"command": a.call.shell, "description": "run a command"})
		}
		input = string(in)
		block = map[string]any{"type": "tool_use", "id": a.call.id, "name": tool, "input": json.RawMessage(in)}
	} else {
		block = map[string]any{"type": "text", "text": a.text}
	}
	if !stream {
		if a.cut {
			cutJSON(w)
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": "msg_fake", "type": "message", "role": "assistant", "model": a.model,
			"content": []any{block}, "stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]int{"input_tokens": a.in, "output_tokens": a.out},
		})
		return
	}
	sse := newSSE(w)
	sse.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_fake", "type": "message", "role": "assistant", "model": a.model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": a.in, "output_tokens": 1}}})
	if a.call != nil {
		sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": a.call.id, "name": tool, "input": map[string]any{}}})
		sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": input}})
	} else {
		sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		for _, c := range chunks(a.text) {
			sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "text_delta", "text": c}})
			if a.cut {
				sse.cut()
			}
		}
	}
	sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": a.out}})
	sse.event("message_stop", map[string]any{"type": "message_stop"})
}

// ---- Gemini generateContent ----

func parseGemini(r *http.Request, body []byte) (request, error) {
	var m struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				Text             string `json:"text"`
				FunctionResponse *struct {
					ID       string          `json:"id"`
					Name     string          `json:"name"`
					Response json.RawMessage `json:"response"`
				} `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
		Tools []struct {
			FunctionDeclarations []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
		GenerationConfig struct {
			ResponseMimeType string `json:"responseMimeType"`
		} `json:"generationConfig"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return request{}, err
	}
	path := r.URL.Path
	model := path[strings.LastIndex(path, "/")+1:]
	model, method, _ := strings.Cut(model, ":")
	req := request{model: model, stream: method == "streamGenerateContent",
		wantsJSON: m.GenerationConfig.ResponseMimeType == "application/json"}
	for _, t := range m.Tools {
		for _, f := range t.FunctionDeclarations {
			req.tools = append(req.tools, f.Name)
		}
	}
	var prompts []string
	for i, c := range m.Contents {
		if c.Role != "user" && c.Role != "" {
			continue
		}
		var texts []string
		for _, p := range c.Parts {
			switch {
			case p.FunctionResponse != nil:
				if i == len(m.Contents)-1 {
					req.hasResult, req.toolCallID = true, p.FunctionResponse.ID
					req.toolResult = string(p.FunctionResponse.Response)
				}
			case p.Text != "":
				texts = append(texts, p.Text)
			}
		}
		if len(texts) > 0 {
			prompts = texts
		}
	}
	req.prompt = strings.Join(prompts, "\n")
	return req, nil
}

func writeGemini(w http.ResponseWriter, stream bool, a answer) {
	var part map[string]any
	switch {
	case a.call != nil && a.call.shell != "":
		part = map[string]any{"functionCall": map[string]any{"id": a.call.id, "name": "run_shell_command",
			"args": map[string]string{"command": a.call.shell, "description": "run a command"}}}
	case a.call != nil:
		part = map[string]any{"functionCall": map[string]any{"id": a.call.id, "name": "write_file",
			"args": map[string]string{"file_path": a.call.file(), "content": a.call.content}}}
	default:
		part = map[string]any{"text": a.text}
	}
	usage := map[string]int{"promptTokenCount": a.in, "candidatesTokenCount": a.out, "totalTokenCount": a.in + a.out}
	candidate := func(parts []any, finish bool) map[string]any {
		c := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		if finish {
			c["finishReason"] = "STOP"
		}
		return c
	}
	if !stream {
		if a.cut {
			cutJSON(w)
		}
		writeJSON(w, http.StatusOK, map[string]any{"candidates": []any{candidate([]any{part}, true)},
			"usageMetadata": usage, "modelVersion": a.model})
		return
	}
	sse := newSSE(w)
	if a.call != nil {
		sse.data(map[string]any{"candidates": []any{candidate([]any{part}, true)}, "usageMetadata": usage, "modelVersion": a.model})
		return
	}
	cs := chunks(a.text)
	for i, c := range cs {
		last := i == len(cs)-1 && !a.cut
		msg := map[string]any{"candidates": []any{candidate([]any{map[string]any{"text": c}}, last)}, "modelVersion": a.model}
		if last {
			msg["usageMetadata"] = usage
		}
		sse.data(msg)
		if a.cut {
			sse.cut()
		}
	}
}

// ---- OpenAI responses ----

func parseOpenAI(body []byte) (request, error) {
	var m struct {
		Model  string            `json:"model"`
		Stream bool              `json:"stream"`
		Input  []json.RawMessage `json:"input"`
		Tools  []struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return request{}, err
	}
	req := request{model: m.Model, stream: m.Stream}
	for _, t := range m.Tools {
		name := t.Name
		if name == "" {
			name = t.Type
		}
		req.tools = append(req.tools, name)
	}
	var prompts []string
	for i, raw := range m.Input {
		var it struct {
			Type    string          `json:"type"`
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
			CallID  string          `json:"call_id"`
			Output  json.RawMessage `json:"output"`
		}
		if json.Unmarshal(raw, &it) != nil {
			continue
		}
		switch {
		case strings.HasSuffix(it.Type, "_output"):
			if i == len(m.Input)-1 {
				req.hasResult, req.toolCallID = true, it.CallID
				req.toolResult = textOf(it.Output)
			}
		case it.Role == "user" && (it.Type == "" || it.Type == "message"):
			if t := textOf(it.Content); t != "" {
				prompts = []string{t}
			}
		}
	}
	req.prompt = strings.Join(prompts, "\n")
	return req, nil
}

// openaiWriteTool chooses how to ask codex to write a file from the tools it
// offered: apply_patch (a freeform custom tool or a function), else a shell.
func openaiWriteTool(body []byte) string {
	var m struct {
		Tools []struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(body, &m)
	kind := ""
	for _, t := range m.Tools {
		switch {
		case t.Name == "apply_patch" && t.Type == "custom":
			return "custom:apply_patch"
		case t.Name == "apply_patch":
			kind = "function:apply_patch"
		case kind == "" && (t.Name == "exec_command" || t.Name == "shell" || t.Name == "shell_command"):
			kind = "function:" + t.Name
		}
	}
	return kind
}

// openaiShellTool chooses the shell tool codex offered (exec_command,
// shell or shell_command); exec_command when it offered none of them.
func openaiShellTool(body []byte) string {
	var m struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(body, &m)
	for _, t := range m.Tools {
		switch t.Name {
		case "exec_command", "shell", "shell_command":
			return "function:" + t.Name
		}
	}
	return "function:exec_command"
}

// patchFor is an apply_patch patch adding the file.
func patchFor(path, content string) string {
	var b strings.Builder
	b.WriteString("*** Begin Patch\n*** Add File: " + path + "\n")
	for _, line := range strings.SplitAfter(strings.TrimSuffix(content, "\n"), "\n") {
		b.WriteString("+" + strings.TrimSuffix(line, "\n") + "\n")
	}
	b.WriteString("*** End Patch\n")
	return b.String()
}

func writeOpenAI(w http.ResponseWriter, a answer) {
	sse := newSSE(w)
	seq := 0
	ev := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		sse.event(typ, fields)
	}
	resp := func(status string, output []any) map[string]any {
		r := map[string]any{"id": "resp_fake", "object": "response", "status": status, "model": a.model, "output": output}
		if status == "completed" {
			r["usage"] = map[string]any{"input_tokens": a.in, "input_tokens_details": map[string]int{"cached_tokens": 0},
				"output_tokens": a.out, "output_tokens_details": map[string]int{"reasoning_tokens": 0}, "total_tokens": a.in + a.out}
		}
		return r
	}
	ev("response.created", map[string]any{"response": resp("in_progress", []any{})})
	var item map[string]any
	if a.call != nil && a.call.shell != "" {
		name := strings.TrimPrefix(a.call.tool, "function:")
		var args []byte
		if name == "exec_command" {
			args, _ = json.Marshal(map[string]any{"cmd": a.call.shell})
		} else {
			args, _ = json.Marshal(map[string]any{"command": []string{"bash", "-lc", a.call.shell}})
		}
		item = map[string]any{"type": "function_call", "id": "fc_" + a.call.id, "call_id": a.call.id,
			"name": name, "arguments": string(args), "status": "completed"}
		ev("response.output_item.added", map[string]any{"output_index": 0, "item": item})
	} else if a.call != nil {
		patch := patchFor(a.call.path, a.call.content)
		switch a.call.tool {
		case "custom:apply_patch":
			item = map[string]any{"type": "custom_tool_call", "id": "ctc_" + a.call.id, "call_id": a.call.id,
				"name": "apply_patch", "input": patch, "status": "completed"}
		case "function:apply_patch":
			args, _ := json.Marshal(map[string]string{"input": patch})
			item = map[string]any{"type": "function_call", "id": "fc_" + a.call.id, "call_id": a.call.id,
				"name": "apply_patch", "arguments": string(args), "status": "completed"}
		default:
			name := strings.TrimPrefix(a.call.tool, "function:")
			var args []byte
			if name == "exec_command" {
				args, _ = json.Marshal(map[string]any{"cmd": "apply_patch <<'PATCH'\n" + patch + "PATCH\n"})
			} else {
				args, _ = json.Marshal(map[string]any{"command": []string{"bash", "-lc", "apply_patch <<'PATCH'\n" + patch + "PATCH\n"}})
			}
			item = map[string]any{"type": "function_call", "id": "fc_" + a.call.id, "call_id": a.call.id,
				"name": name, "arguments": string(args), "status": "completed"}
		}
		ev("response.output_item.added", map[string]any{"output_index": 0, "item": item})
	} else {
		ev("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{
			"id": "msg_fake", "type": "message", "role": "assistant", "status": "in_progress", "content": []any{}}})
		for _, c := range chunks(a.text) {
			ev("response.output_text.delta", map[string]any{"item_id": "msg_fake", "output_index": 0, "content_index": 0, "delta": c})
			if a.cut {
				sse.cut()
			}
		}
		item = map[string]any{"id": "msg_fake", "type": "message", "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": a.text, "annotations": []any{}}}}
	}
	ev("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	ev("response.completed", map[string]any{"response": resp("completed", []any{item})})
}

// ---- errors and plumbing ----

// writeError writes an HTTP error in the protocol's shape.
func writeError(w http.ResponseWriter, proto string, status int, msg string) {
	if msg == "" {
		msg = defaultMessage(status)
	}
	switch proto {
	case Anthropic:
		typ := map[int]string{400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
			404: "not_found_error", 429: "rate_limit_error", 529: "overloaded_error"}[status]
		if typ == "" {
			typ = "api_error"
		}
		writeJSON(w, status, map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
	case Gemini:
		st := map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
			429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}[status]
		if st == "" {
			st = "INTERNAL"
		}
		writeJSON(w, status, map[string]any{"error": map[string]any{"code": status, "message": msg, "status": st}})
	default:
		typ := map[int]string{400: "invalid_request_error", 401: "invalid_request_error", 403: "invalid_request_error",
			429: "rate_limit_exceeded"}[status]
		if typ == "" {
			typ = "server_error"
		}
		code := map[int]any{401: "invalid_api_key", 429: "rate_limit_exceeded"}[status]
		writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
	}
}

func defaultMessage(status int) string {
	switch status {
	case 401:
		return "fakemodel: invalid API key"
	case 403:
		return "fakemodel: permission denied"
	case 429:
		return "fakemodel: rate limit exceeded"
	case 400:
		return "fakemodel: invalid request"
	}
	return fmt.Sprintf("fakemodel: internal server error (%d)", status)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// cutJSON starts a JSON answer and breaks the connection midway.
func cutJSON(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(`{"id":"msg_fake","content":[{"type":"te`))
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	panic(http.ErrAbortHandler)
}

// An sse writes server-sent events.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

func (s *sse) event(name string, v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, b)
	s.flush()
}

func (s *sse) data(v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(s.w, "data: %s\r\n\r\n", b)
	s.flush()
}

func (s *sse) flush() {
	if s.f != nil {
		s.f.Flush()
	}
}

// cut breaks the connection in the middle of the stream.
func (s *sse) cut() {
	s.flush()
	panic(http.ErrAbortHandler)
}
