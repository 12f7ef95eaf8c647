package provider

import (
	"strings"
	"testing"
)

func TestSessionCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, cli string
		call      Call
		want      string
	}{
		{"claude fresh", "claude", Call{}, "claude -p --output-format stream-json --verbose --no-session-persistence --settings"},
		{"claude first", "claude", Call{Continue: true}, "claude -p --output-format stream-json --verbose --settings"},
		{"claude later", "claude", Call{Continue: true, Session: "S1"}, "--permission-mode acceptEdits --resume S1"},
		{"gemini later", "gemini", Call{Continue: true, Session: "S2"}, "gemini --output-format stream-json --approval-mode auto_edit --resume S2"},
		{"codex fresh", "codex", Call{}, "codex exec --json --skip-git-repo-check --ephemeral --disable"},
		{"codex first", "codex", Call{Continue: true}, "codex exec --json --skip-git-repo-check --disable unbounded_connection_retries --disable shell_snapshot --sandbox workspace-write -"},
		{"codex later", "codex", Call{Continue: true, Session: "T3"}, "--sandbox workspace-write resume T3 -"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, _ := CLIOf(tt.cli)
			got := strings.Join(f.Command("", PermEdit, tt.call), " ")
			if !strings.Contains(got, tt.want) {
				t.Errorf("Command(%+v) = %q, want it to hold %q", tt.call, got, tt.want)
			}
			if tt.call.Continue && (strings.Contains(got, "--ephemeral") || strings.Contains(got, "--no-session-persistence")) {
				t.Errorf("Command(%+v) = %q keeps a flag that saves no session", tt.call, got)
			}
		})
	}
}

func TestSessionID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, cli, stdout, want string
	}{
		{"claude", "claude", `{"type":"result","session_id":"589f","result":"hi"}`, "589f"},
		{"gemini", "gemini", "{\n  \"session_id\": \"0489\",\n  \"response\": \"hi\"\n}", "0489"},
		{"gemini stream", "gemini", `{"type":"init","session_id":"5511","model":"m"}` + "\n" + `{"type":"result","status":"success"}`, "5511"},
		{"claude stream", "claude", `{"type":"system","subtype":"init","session_id":"77ab"}` + "\n" + `{"type":"result","session_id":"77ab","result":"hi"}`, "77ab"},
		{"codex", "codex", `{"type":"thread.started","thread_id":"01a2"}` + "\n" + `{"type":"turn.started"}`, "01a2"},
		{"codex none", "codex", `{"type":"turn.started"}`, ""},
		{"claude not json", "claude", `oops`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, _ := Lookup(nil, tt.cli)
			if got := ReadReply(p, PermEdit, tt.stdout, "", 0).Session; got != tt.want {
				t.Errorf("ReadReply(%q).Session = %q, want %q", tt.stdout, got, tt.want)
			}
			if !p.CanContinue() {
				t.Errorf("%s.CanContinue() = false, want true", tt.cli)
			}
		})
	}
	own, _ := Lookup([]Def{{Name: "claude", Command: []string{"my-claude"}}}, "claude")
	if own.CanContinue() {
		t.Errorf("a replaced claude command CanContinue() = true, want false")
	}
}
