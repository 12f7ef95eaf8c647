package workers

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadReplyRealCLIs reads what the real CLIs (the pinned versions,
// docs/providers.md) printed against the fake model server, captured in
// testdata/clis/<cli>-<case>.{stdout,stderr}: the reply, the tokens, and a
// failure's exit code (1 retryable, 2 not) with its reason.
func TestReadReplyRealCLIs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cli, name string
		perms     string
		exit      int // the CLI's own exit code when captured
		wantExit  int
		text      string // the reply ("" = not checked)
		tokens    int
		reason    string // contained in the reason ("" = no failure)
	}{
		{"claude", "ok", "edit", 0, 0, "Hello from fake", 15, ""},
		{"claude", "500", "edit", 1, 1, "", 0, "the model server failed (HTTP 500)"},
		{"claude", "429", "edit", 1, 1, "", 0, "rate limited by the model server (HTTP 429)"},
		{"claude", "401", "edit", 1, 2, "", 0, "refused the credentials (HTTP 401)"},
		{"claude", "drop", "edit", 1, 1, "", 0, "could not be reached or broke off"},
		{"claude", "refused", "edit", 1, 1, "", 0, "ECONNREFUSED"},
		{"claude", "denied", "read", 0, 2, "I wrote it", 30, "the agent was denied Write with permissions: read; set permissions: edit"},
		{"gemini", "ok", "edit", 0, 0, "Hello from fake", 15, ""},
		{"gemini", "500", "edit", 244, 1, "", 0, "the model server failed (HTTP 500)"},
		{"gemini", "429", "edit", 173, 1, "", 0, "rate limited by the model server (HTTP 429)"},
		{"gemini", "401", "edit", 145, 2, "", 0, "check GEMINI_API_KEY"},
		{"gemini", "drop", "edit", 1, 1, "", 0, "could not be reached or broke off"},
		{"gemini", "refused", "edit", 1, 1, "", 0, "could not be reached or broke off"},
		{"gemini", "loop", "edit", 0, 2, "", 0, "gemini gave no reply: Loop detected, stopping execution"},
		{"gemini", "denied", "read", 0, 2, "I wrote it", 30, "the agent was denied write_file with permissions: read"},
		{"codex", "ok", "edit", 0, 0, "Hello from fake", 15, ""},
		{"codex", "500", "edit", 1, 1, "", 0, "the model server is busy: We’re currently experiencing high demand"},
		{"codex", "429", "edit", 1, 1, "", 0, "rate limited by the model server (HTTP 429)"},
		{"codex", "401", "edit", 1, 2, "", 0, "refused the credentials (HTTP 401)"},
		{"codex", "drop", "edit", 1, 1, "", 0, "stream disconnected before completion"},
		{"codex", "refused", "edit", 1, 1, "", 0, "Connection failed"},
		{"codex", "denied", "read", 0, 2, "I wrote it", 30, "patch rejected: writing is blocked by read-only sandbox"},
	}
	for _, tt := range tests {
		t.Run(tt.cli+"-"+tt.name, func(t *testing.T) {
			t.Parallel()
			read := func(ext string) string {
				b, err := os.ReadFile(filepath.Join("testdata", "clis", tt.cli+"-"+tt.name+"."+ext))
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
			pv, _ := preset(tt.cli)
			got := readReply(pv, tt.perms, read("stdout"), read("stderr"), tt.exit)
			if got.exit != tt.wantExit || !strings.Contains(got.reason, tt.reason) || (tt.reason == "") != (got.reason == "") {
				t.Errorf("exit %d reason %q, want %d and %q", got.exit, got.reason, tt.wantExit, tt.reason)
			}
			if tt.text != "" && (got.text != tt.text || got.tokens != tt.tokens) {
				t.Errorf("text %q tokens %d, want %q %d", got.text, got.tokens, tt.text, tt.tokens)
			}
		})
	}
}
