package provider

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
		{"gemini", "untrusted", "edit", 55, 2, "", 0, "...; the folder is not trusted by the CLI (gemini: set GEMINI_CLI_TRUST_WORKSPACE=true"},
		{"gemini", "loop", "edit", 0, 2, "", 0, "gemini gave no reply: Loop detected, stopping execution"},
		{"gemini", "denied", "read", 0, 2, "I wrote it", 30, "the agent was denied write_file with permissions: read"},
		{"claude", "stream-ok", "edit", 0, 0, "hello there", 15, ""},
		{"claude", "stream-edit", "edit", 0, 0, "wrote one", 30, ""},
		{"claude", "stream-500", "edit", 1, 1, "", 0, "the model server failed (HTTP 500)"},
		{"claude", "stream-401", "edit", 1, 2, "", 0, "refused the credentials (HTTP 401)"},
		{"claude", "stream-denied", "read", 0, 2, "wrote one", 30, "the agent was denied Write with permissions: read; set permissions: edit"},
		// claude 2.1.330 with the user's deny rule Edit(pwned5.txt), edit
		// (acceptEdits): the rule refused Write, no permission level lifts
		// it; and a command acceptEdits refused (it needs approval).
		{"claude", "stream-ruledenied", "edit", 0, 2, "wrote it", 30, "the agent was denied Write by a deny rule of your own in claude's settings (permissions.deny), which holds with every permissions: level; change that rule to allow it"},
		{"claude", "stream-approval", "edit", 0, 2, "ran it", 30, "the agent was denied Bash with permissions: edit; set permissions: full to allow it"},
		{"claude", "stream-hookblock", "edit", 0, 2, "", 0, "a UserPromptSubmit hook in claude's settings blocked the prompt before any model request: prompt blocked by company policy"},
		{"gemini", "stream-ok", "edit", 0, 0, "hello there", 15, ""},
		{"gemini", "stream-edit", "edit", 0, 0, "wrote one", 30, ""},
		{"gemini", "stream-500", "edit", 244, 1, "", 0, "the model server failed (HTTP 500): boom server"},
		{"gemini", "stream-401", "edit", 145, 2, "", 0, "check GEMINI_API_KEY"},
		{"gemini", "stream-429", "edit", 173, 1, "", 0, "rate limited by the model server (HTTP 429): fakemodel: rate limit exceeded"},
		{"gemini", "stream-nologin", "edit", 41, 2, "", 0, "the CLI has no usable credentials: When using Gemini API, you must specify the GEMINI_API_KEY environment variable."},
		{"gemini", "stream-denied", "read", 0, 2, "wrote one", 30, "the agent was denied write_file with permissions: read"},
		{"gemini", "stream-hookblock", "edit", 0, 2, "", 0, "a hook in gemini's settings blocked the prompt before any model request: prompt blocked by company policy"},
		{"codex", "ok", "edit", 0, 0, "Hello from fake", 15, ""},
		{"codex", "stream-edit", "edit", 0, 0, "wrote one", 30, ""},
		{"codex", "500", "edit", 1, 1, "", 0, "the model server is busy: We’re currently experiencing high demand"},
		{"codex", "429", "edit", 1, 1, "", 0, "rate limited by the model server (HTTP 429)"},
		{"codex", "401", "edit", 1, 2, "", 0, "refused the credentials (HTTP 401)"},
		{"codex", "drop", "edit", 1, 1, "", 0, "stream disconnected before completion"},
		{"codex", "refused", "edit", 1, 1, "", 0, "Connection failed"},
		{"codex", "denied", "read", 0, 2, "I wrote it", 30, "patch rejected: writing is blocked by read-only sandbox"},
		{"codex", "badtoml", "edit", 1, 2, "", 0, "Error loading config.toml: /tmp/home/user/.codex/config.toml:8:25: unclosed table, expected `]`; fix its config.toml (the CLI reads it at every start), or use home: isolated"},
		{"codex", "badconfig", "edit", 1, 2, "", 0, "Error loading config.toml: `wire_api = \"chat\"` is no longer supported. How to fix: set `wire_api = \"responses\"` in your provider config. More info: https://github.com/openai/codex/discussions/7782; fix its config.toml"},
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
			got := ReadReply(pv, tt.perms, read("stdout"), read("stderr"), tt.exit)
			if got.Exit != tt.wantExit || !strings.Contains(got.Reason, tt.reason) || (tt.reason == "") != (got.Reason == "") {
				t.Errorf("exit %d reason %q, want %d and %q", got.Exit, got.Reason, tt.wantExit, tt.reason)
			}
			if tt.text != "" && (got.Text != tt.text || got.Tokens != tt.tokens) {
				t.Errorf("text %q tokens %d, want %q %d", got.Text, got.Tokens, tt.text, tt.tokens)
			}
		})
	}
}

// TestPresetCommand: each preset's argv for model: and permissions: (the
// prompt is never in it), from the one table of CLI facts.
func TestPresetCommand(t *testing.T) {
	t.Parallel()
	codexEnv := Call{Isolated: true, Env: map[string]string{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}}
	// The user's own config.toml: their provider stays, its retries go to
	// 0 for the call; the built-in one and an undefined one are left.
	userProvider := Call{Env: codexEnv.Env, Config: []byte("model_provider = \"gateway\"\n[model_providers.gateway]\nbase_url = \"http://127.0.0.1:1/v1\"\n")}
	// A name TOML quotes: codex's -c splits keys at dots and takes no
	// quotes, so a name with a space goes as it is and one with a dot
	// gets no -c (codex's own retries).
	userQuoted := Call{Config: []byte("model_provider = \"az.ure\"\n[model_providers.\"az.ure\"]\nname = \"Azure\"\n")}
	userSpaced := Call{Config: []byte("model_provider = \"my gw\"\n[model_providers.\"my gw\"]\nname = \"Mine\"\n")}
	userUndefined := Call{Config: []byte("model_provider = \"nowhere\"\n")} // codex itself says so; a -c would hide it
	userBuiltin := Call{Env: codexEnv.Env, Config: []byte("model = \"o3\"\n")}
	tests := []struct {
		cli, model, perms string
		env               Call
		want              string
	}{
		{"claude", "", "edit", Call{}, "claude -p --output-format stream-json --verbose --no-session-persistence --settings {\"env\": {\"CLAUDE_CODE_MAX_RETRIES\": \"0\"}} --permission-mode acceptEdits"},
		{"claude", "sonnet", "read", Call{}, "claude -p --output-format stream-json --verbose --no-session-persistence --settings {\"env\": {\"CLAUDE_CODE_MAX_RETRIES\": \"0\"}} --model sonnet --permission-mode dontAsk --disallowedTools=Edit(//**),Bash"},
		{"claude", "", "full", Call{}, "claude -p --output-format stream-json --verbose --no-session-persistence --settings {\"env\": {\"CLAUDE_CODE_MAX_RETRIES\": \"0\"}} --permission-mode bypassPermissions"},
		{"gemini", "gemini-2.5-pro", "edit", Call{}, "gemini --output-format stream-json -m gemini-2.5-pro --approval-mode auto_edit"},
		{"gemini", "", "read", Call{}, "gemini --output-format stream-json --approval-mode default"},
		{"gemini", "", "full", Call{}, "gemini --output-format stream-json --approval-mode yolo"},
		{"codex", "", "read", Call{}, "codex exec --json --skip-git-repo-check --ephemeral --disable unbounded_connection_retries --disable shell_snapshot --sandbox read-only -"},
		{"codex", "o9", "full", Call{}, "codex exec --json --skip-git-repo-check --ephemeral --disable unbounded_connection_retries --disable shell_snapshot -m o9 --dangerously-bypass-approvals-and-sandbox -"},
		{"codex", "", "edit", codexEnv, "codex exec --json --skip-git-repo-check --ephemeral --disable unbounded_connection_retries --disable shell_snapshot --sandbox workspace-write " +
			`-c model_provider=smith -c model_providers.smith={name="smith", base_url="http://127.0.0.1:1/v1", env_key="OPENAI_API_KEY", wire_api="responses", request_max_retries=0, stream_max_retries=0} -`},
		{"codex", "", "edit", userProvider, "codex exec --json --skip-git-repo-check --ephemeral --disable unbounded_connection_retries --disable shell_snapshot --sandbox workspace-write " +
			"-c model_providers.gateway.request_max_retries=0 -c model_providers.gateway.stream_max_retries=0 -"},
		{"codex", "", "edit", userUndefined, "codex exec --json --skip-git-repo-check --ephemeral --disable unbounded_connection_retries --disable shell_snapshot --sandbox workspace-write -"},
		{"codex", "", "read", userQuoted, "codex exec --json --skip-git-repo-check --ephemeral --disable unbounded_connection_retries --disable shell_snapshot --sandbox read-only -"},
		{"codex", "", "read", userSpaced, "codex exec --json --skip-git-repo-check --ephemeral --disable unbounded_connection_retries --disable shell_snapshot --sandbox read-only " +
			`-c model_providers.my gw.request_max_retries=0 -c model_providers.my gw.stream_max_retries=0 -`},
		{"codex", "", "edit", userBuiltin, "codex exec --json --skip-git-repo-check --ephemeral --disable unbounded_connection_retries --disable shell_snapshot --sandbox workspace-write -"},
	}
	for _, tt := range tests {
		got := strings.Join(clis[tt.cli].Command(tt.model, tt.perms, tt.env), " ")
		if got != tt.want {
			t.Errorf("%s model %q %s:\n got %s\nwant %s", tt.cli, tt.model, tt.perms, got, tt.want)
		}
	}
}
