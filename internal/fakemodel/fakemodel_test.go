package fakemodel

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// post sends body to the server's path and returns the status and body; a
// broken connection is an error.
func post(t *testing.T, url, body string) (int, string, error) {
	t.Helper()
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func TestProtocols(t *testing.T) {
	t.Parallel()
	rules := []Rule{
		{Match: "write", Reply: Reply{WriteFile: &WriteFile{Path: "a.txt", Content: "x\n"}, Text: "done"}},
		{Match: "shell", Reply: Reply{Shell: "touch b.txt", Text: "ran"}},
		{Match: "boom", Reply: Reply{Status: 429}},
		{Match: "deny", Reply: Reply{Status: 401}},
		{Match: "cut", Reply: Reply{Cut: true, Text: strings.Repeat("y", 40000)}},
		{Match: "drop", Reply: Reply{Drop: true}},
		{Reply: Reply{Text: "hello there"}},
	}
	const (
		anth   = "/v1/messages"
		gemS   = "/v1beta/models/m1:streamGenerateContent?alt=sse"
		gemN   = "/v1beta/models/m1:generateContent"
		openai = "/v1/responses"
	)
	tests := []struct {
		name, path, body string
		status           int
		has              []string
		broken           bool
	}{
		{"anthropic json", anth, `{"model":"m1","messages":[{"role":"user","content":"hi"}]}`, 200, []string{`"text":"hello there"`, `"input_tokens":10`}, false},
		{"anthropic sse", anth, `{"model":"m1","stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`, 200, []string{"event: message_start", `"text_delta"`, `"text":"hello there"`, "event: message_stop"}, false},
		{"anthropic tool call", anth, `{"model":"m1","stream":true,"system":"Working directory: /w","messages":[{"role":"user","content":"please write"}]}`, 200, []string{`"name":"Write"`, `\"file_path\":\"/w/a.txt\"`}, false},
		{"anthropic tool result", anth, `{"model":"m1","messages":[{"role":"user","content":"please write"},{"role":"assistant","content":[]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":"ok"}]}]}`, 200, []string{`"text":"done"`}, false},
		{"anthropic shell call", anth, `{"model":"m1","stream":true,"messages":[{"role":"user","content":"run shell"}]}`, 200, []string{`"name":"Bash"`, `\"command\":\"touch b.txt\"`}, false},
		{"anthropic 429", anth, `{"messages":[{"role":"user","content":"boom"}]}`, 429, []string{`"rate_limit_error"`}, false},
		{"gemini sse", gemS, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, 200, []string{`data: {"candidates"`, `"hello there"`, `"finishReason":"STOP"`, `"totalTokenCount":15`}, false},
		{"gemini json", gemN, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, 200, []string{`"hello there"`}, false},
		{"gemini tool call", gemS, `{"contents":[{"role":"user","parts":[{"text":"please write"}]}]}`, 200, []string{`"functionCall"`, `"write_file"`}, false},
		{"gemini shell call", gemS, `{"contents":[{"role":"user","parts":[{"text":"run shell"}]}]}`, 200, []string{`"run_shell_command"`, `"command":"touch b.txt"`}, false},
		{"gemini structured side call", gemN, `{"contents":[{"role":"user","parts":[{"text":"route"}]}],"generationConfig":{"responseMimeType":"application/json"}}`, 200, []string{`model_choice`}, false},
		{"gemini 401", gemN, `{"contents":[{"role":"user","parts":[{"text":"deny"}]}]}`, 401, []string{`"UNAUTHENTICATED"`}, false},
		{"openai sse", openai, `{"model":"m1","stream":true,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}]}`, 200, []string{"event: response.created", `"delta":"hello there"`, "event: response.completed", `"total_tokens":15`}, false},
		{"openai tool call", openai, `{"model":"m1","stream":true,"tools":[{"type":"function","name":"exec_command"}],"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"please write"}]}]}`, 200, []string{`"function_call"`, `"name":"exec_command"`, `apply_patch`, `*** Add File: a.txt`}, false},
		{"openai shell call", openai, `{"model":"m1","stream":true,"tools":[{"type":"function","name":"exec_command"}],"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"run shell"}]}]}`, 200, []string{`"name":"exec_command"`, `touch b.txt`}, false},
		{"openai cut", openai, `{"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"cut"}]}]}`, 200, nil, true},
		{"openai drop", openai, `{"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"drop"}]}]}`, 0, nil, true},
		{"unknown path", "/v2/other", `{}`, 404, nil, false},
	}
	srv, err := Start(context.Background(), rules, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, tt := range tests {
		status, body, err := post(t, srv.URL+tt.path, tt.body)
		if tt.broken {
			if err == nil {
				t.Errorf("%s: the answer arrived whole (%d bytes)", tt.name, len(body))
			}
			continue
		}
		if err != nil || status != tt.status {
			t.Errorf("%s: status %d err %v, want %d", tt.name, status, err, tt.status)
			continue
		}
		for _, h := range tt.has {
			if !strings.Contains(body, h) {
				t.Errorf("%s: answer lacks %q:\n%s", tt.name, h, body)
			}
		}
	}
	log := srv.Requests()
	if len(log) != len(tests) {
		t.Fatalf("%d requests logged, want %d", len(log), len(tests))
	}
	if l := log[0]; l.Protocol != Anthropic || l.Model != "m1" || l.Prompt != "hi" || l.Rule != 6 {
		t.Errorf("first request logged as %+v", l)
	}
	if l := log[3]; l.ToolResult != "ok" || l.Rule != 0 {
		t.Errorf("tool result logged as %+v", l)
	}
}

func TestHangStopsWithServer(t *testing.T) {
	t.Parallel()
	srv, err := Start(context.Background(), []Rule{{Reply: Reply{Hang: true}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := post(t, srv.URL+"/v1/messages", `{"messages":[{"role":"user","content":"x"}]}`)
		done <- err
	}()
	for len(srv.Requests()) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("a hanging request was answered (err %v)", err)
	default:
	}
	srv.Close()
	if err := <-done; err == nil {
		t.Error("the hanging request ended without an error")
	}
}

func TestStops(t *testing.T) {
	t.Parallel()
	srv, err := Start(context.Background(), nil, Options{Idle: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-srv.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the idle server did not stop")
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err = Start(ctx, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	<-srv.Done()
	if _, _, err := post(t, srv.URL+"/v1/messages", `{}`); err == nil {
		t.Error("a stopped server answered")
	}
	if _, err := StartAt(context.Background(), "0.0.0.0:0", nil, Options{}); err == nil {
		t.Error("StartAt listened beyond 127.0.0.1")
	}
	u, err := RefusedURL()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := post(t, u+"/v1/messages", `{}`); err == nil {
		t.Errorf("RefusedURL %s answered", u)
	}
}
