package e2e

// The presets against setups real users have (CONTRACT 5): the model
// provider a user's codex configuration chose, a config.toml codex cannot
// read, a key the CLI does not read in the user's own home, and what
// smithvm doctor says in each.

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"smith/internal/fakemodel"
)

// TestCLIProviderKeyMasked: the key of the model provider a user's codex
// configuration chose (its env_key, GATEWAY_API_KEY here: no preset
// variable) is masked wherever the run writes, the recording's patch
// included: an agent that writes the key into a file leaves only *** in
// the recording (which users keep, to replay), the state and the logs.
func TestCLIProviderKeyMasked(t *testing.T) {
	t.Parallel()
	needCLIs(t, "codex")
	const key = "fake-key-gateway-0123456789"
	c := cliCases[2]
	p := newCLIProj(t, modeUser, fakemodel.Rule{Match: "LEAK", Reply: fakemodel.Reply{
		Text: "the key is " + key, WriteFile: &fakemodel.WriteFile{Path: "key.txt", Content: "KEY=" + key + "\n"}}})
	p.keyLeakMasked(t, p.env(), c, key)
}

// TestCLICodexBrokenConfig: a ~/.codex/config.toml that codex cannot load
// (not TOML; a key codex no longer takes) fails the step at once with exit
// 2 and codex's own words, naming the file to fix, not as a missing login
// (the user has the key of their model provider) nor as the drawing codex
// prints under the line; smithvm doctor says the file is not valid. No
// request reaches the server.
func TestCLICodexBrokenConfig(t *testing.T) {
	t.Parallel()
	needCLIs(t, "codex")
	c := cliCases[2]
	for _, tt := range []struct{ name, config, says, doctor string }{
		{"not-toml", "model_provider = \"gateway\"\n[model_providers.gateway\nname = \"gw\"\n",
			"unclosed table, expected `]`", "is not valid: toml: line "},
		{"old-key", "model = \"gpt-fake\"\nmodel_provider = \"gateway\"\n\n[model_providers.gateway]\nname = \"gw\"\nbase_url = \"http://127.0.0.1:9/v1\"\nenv_key = \"GATEWAY_API_KEY\"\nwire_api = \"chat\"\n",
			"`wire_api = \"chat\"` is no longer supported", "cannot load its configuration"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newCLIProj(t, modeUser, fakemodel.Rule{Reply: fakemodel.Reply{Text: "should not be asked"}})
			cfg := filepath.Join(p.home, ".codex", "config.toml")
			if err := os.WriteFile(cfg, []byte(tt.config), 0o600); err != nil {
				t.Fatal(err)
			}
			wf := p.put("wf.yaml", p.workflow("nologin.yaml", c, cliCase{}))
			r := p.run("run", wf)
			if r.code != 1 {
				t.Fatalf("run: exit %d, want 1\n%s", r.code, r.stderr)
			}
			if s := p.state(r).Steps["Ask"]; s.ExitCode != 2 || s.Attempts != 1 {
				t.Errorf("Ask: exit %d after %d tries, want 2 after 1 (not retried)", s.ExitCode, s.Attempts)
			}
			for _, w := range []string{"ERROR: Step 'Ask' failed: E_EXEC: provider 'codex' failed: Error loading config.toml: ", tt.says, "; fix " + cfg} {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("the console does not say %q:\n%s", w, r.stderr)
				}
			}
			if strings.Contains(r.stderr, "no usable credentials") {
				t.Errorf("a broken config.toml is reported as a missing login:\n%s", r.stderr)
			}
			if n := len(p.requests(c.proto)); n != 0 {
				t.Errorf("%d requests reached the server", n)
			}
			d := p.doctor(p.env(), wf)
			if l := doctorLine(d.stdout, "FAIL", "codex", "login"); d.code != 2 || !strings.Contains(l, tt.doctor) || !strings.Contains(l, cfg) {
				t.Errorf("doctor: exit %d, codex login %q, want %q and the file\n%s", d.code, l, tt.doctor, d.stdout)
			}
		})
	}
}

// TestCLICodexOpenAIKey: OPENAI_API_KEY in the user's terminal, which
// codex's built-in model provider does not read (it reads CODEX_API_KEY or
// its login), and no login: in the user's own home the step fails at once
// (codex would send requests with no key for 13 to 30 s), saying the key
// is not read and how to save it as codex's login; smithvm doctor says the
// same. With home: isolated, where the preset passes OPENAI_API_KEY to a
// provider of its own, the key is enough: doctor says so and the run
// answers.
func TestCLICodexOpenAIKey(t *testing.T) {
	t.Parallel()
	needCLIs(t, "codex")
	c := cliCases[2]
	for _, mode := range homeModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			p := newCLIProj(t, mode, fakemodel.Rule{Reply: fakemodel.Reply{Text: "KEY-OK"}})
			// The user's own codex: installed, never logged in, no
			// config.toml (the built-in provider).
			if err := os.RemoveAll(filepath.Join(p.home, ".codex")); err != nil {
				t.Fatal(err)
			}
			wf := p.put("wf.yaml", p.workflow("nologin.yaml", c, cliCase{}))
			env := []string{"PATH=" + clisDir() + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + p.home,
				"OPENAI_API_KEY=fake-key-codex-0123456789", "OPENAI_BASE_URL=" + p.srv.URL + "/v1"}
			r := p.runWith(env, "run", wf)
			d := p.doctor(env, wf)
			if mode == modeIsolated {
				if r.code != 0 || p.state(r).Steps["Ask"].Output != "KEY-OK" {
					t.Errorf("run: exit %d, want 0 and the reply\n%s", r.code, r.stderr)
				}
				if l := doctorLine(d.stdout, "ok", "codex", "login"); d.code != 0 || !strings.Contains(l, "OPENAI_API_KEY is set") {
					t.Errorf("doctor: exit %d, codex login %q, want ok: OPENAI_API_KEY is set\n%s", d.code, l, d.stdout)
				}
				return
			}
			if r.code != 1 {
				t.Fatalf("run: exit %d, want 1\n%s", r.code, r.stderr)
			}
			if s := p.state(r).Steps["Ask"]; s.ExitCode != 2 || s.Attempts != 1 {
				t.Errorf("Ask: exit %d after %d tries, want 2 after 1 (not retried)", s.ExitCode, s.Attempts)
			}
			note := "OPENAI_API_KEY is set, but codex's built-in model provider does not read it: 'printenv OPENAI_API_KEY | codex login --with-api-key' saves it as codex's login"
			if !strings.Contains(r.stderr, "ERROR: Step 'Ask' failed: E_EXEC: provider 'codex' failed: the CLI has no usable credentials: ") || !strings.Contains(r.stderr, note) {
				t.Errorf("the console does not say %q:\n%s", note, r.stderr)
			}
			if l := doctorLine(d.stdout, "FAIL", "codex", "login"); d.code != 2 || !strings.Contains(l, note) {
				t.Errorf("doctor: exit %d, codex login %q, want %q\n%s", d.code, l, note, d.stdout)
			}
		})
	}
}

// TestCLIGeminiDoctorUntouched: smithvm doctor runs gemini (its version,
// its own auth check) in an overlay of the user's home, as a step does:
// gemini writes its project registry at every start and leaves a
// temporary file of it behind, and none of that lands in the user's
// ~/.gemini, which stays as it was (set up) or absent (never set up). A
// missing login names the user's own settings.json, in doctor and in a
// run, not the overlay's, which is gone once the call ends.
func TestCLIGeminiDoctorUntouched(t *testing.T) {
	t.Parallel()
	needCLIs(t, "gemini")
	c := cliCases[1]
	p := newCLIProj(t, modeUser)
	dir := filepath.Join(p.home, ".gemini")
	before := snapshotDir(t, dir)
	if d := p.doctor(p.env()); doctorLine(d.stdout, "ok", "gemini", "login") == "" {
		t.Errorf("doctor: no ok line for gemini's login\n%s%s", d.stdout, d.stderr)
	}
	after := snapshotDir(t, dir)
	for name, v := range after {
		if b, ok := before[name]; !ok {
			t.Errorf("doctor created %s in the user's ~/.gemini", name)
		} else if b != v {
			t.Errorf("doctor changed %s in the user's ~/.gemini", name)
		}
	}

	// A machine where gemini was installed and never set up.
	empty := t.TempDir()
	env := []string{"PATH=" + clisDir() + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + empty}
	settings := filepath.Join(empty, ".gemini", "settings.json")
	d := p.doctor(env, p.put("wf.yaml", p.workflow("nologin.yaml", c, cliCase{})))
	if l := doctorLine(d.stdout, "FAIL", "gemini", "login"); !strings.Contains(l, settings) || strings.Contains(l, "overlays") {
		t.Errorf("doctor: gemini login %q, want the user's %s", l, settings)
	}
	if _, err := os.Stat(filepath.Join(empty, ".gemini")); err == nil {
		t.Errorf("doctor made ~/.gemini in a home that had none")
	}
	r := p.runWith(env, "run", filepath.Join(p.base, "wf.yaml"))
	if r.code != 1 || !strings.Contains(r.stderr, "Please set an Auth method in your "+settings) || strings.Contains(r.stderr, "overlays") {
		t.Errorf("run: exit %d, want 1 and the user's %s named\n%s", r.code, settings, r.stderr)
	}
}

// TestCLIClaudeAllowRules: the user's ~/.claude/settings.json allows
// Write and Edit without asking (permissions.allow, as many users set it
// up for their terminal). permissions: edit writes as before; a step with
// permissions: read still cannot write (its rules do not widen read, which
// reads and answers only): the write is refused and the step fails with
// exit 2 naming the permission.
func TestCLIClaudeAllowRules(t *testing.T) {
	t.Parallel()
	needCLIs(t, "claude")
	c := cliCases[0]
	p := newCLIProj(t, modeUser, writeRules...)
	settings := `{"env": {"ANTHROPIC_BASE_URL": "` + p.srv.URL + `"}, "permissions": {"allow": ["Write", "Edit", "MultiEdit", "NotebookEdit"]}}` + "\n"
	if err := os.WriteFile(filepath.Join(p.home, ".claude", "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	p.editWritesReadRefused(t, c, "Write")
}

// TestCLIClaudeReadNoShell: the user's ~/.claude/settings.json allows
// every shell command without asking (permissions.allow: Bash(*), as users
// set their terminal up). permissions: edit runs the agent's command as
// their terminal would; with permissions: read the shell is not offered,
// so a command that writes a file through a program (which claude's own
// check of a command's paths does not see) cannot run: read reads and
// answers only, its read-only tools (Read, Grep, Glob) still offered.
func TestCLIClaudeReadNoShell(t *testing.T) {
	t.Parallel()
	needCLIs(t, "claude")
	c := cliCases[0]
	write := func(name string) string {
		return `node -e "require('fs').writeFileSync('` + name + `', 'written by a command\n')"`
	}
	p := newCLIProj(t, modeUser,
		fakemodel.Rule{Match: "WRITE-ONE", Reply: fakemodel.Reply{Shell: write("one.txt"), Text: "ran one"}},
		fakemodel.Rule{Match: "WRITE-TWO", Reply: fakemodel.Reply{Shell: write("two.txt"), Text: "ran two"}})
	settings := `{"env": {"ANTHROPIC_BASE_URL": "` + p.srv.URL + `"}, "permissions": {"allow": ["Bash(*)", "Bash(node:*)"]}}` + "\n"
	if err := os.WriteFile(filepath.Join(p.home, ".claude", "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	wf := p.put("wf.yaml", p.workflow("write.yaml", c, cliCase{}))
	r := p.run("run", wf)
	if got := p.read("workspace/one.txt"); got != "written by a command\n" {
		t.Fatalf("one.txt = %q, want the agent's command to run with permissions: edit (the test proves nothing)\n%s", got, r.stderr)
	}
	if got := p.read("workspace/two.txt"); got != "" {
		t.Errorf("two.txt = %q, written by a shell command with permissions: read (the user's allow rule widened it)", got)
	}
	if r.code != 0 {
		t.Errorf("run: exit %d, want 0 (nothing ran, the agent answered)\n%s", r.code, r.stderr)
	}
	for _, l := range p.requests(c.proto) {
		if !strings.Contains(l.Prompt, "WRITE-TWO") || l.ToolResult != "" {
			continue
		}
		if slices.Contains(l.Tools, "Bash") {
			t.Errorf("the read step was offered the shell: %q", l.Tools)
		}
		for _, tool := range []string{"Read", "Grep", "Glob"} {
			if !slices.Contains(l.Tools, tool) {
				t.Errorf("the read step was not offered %s: %q", tool, l.Tools)
			}
		}
	}
}

// TestCLIClaudeDenyRule: the user's ~/.claude/settings.json denies edits
// of one file (permissions.deny). A step with permissions: edit whose agent
// writes it fails with exit 2, and the reason names the user's rule and
// its file: no permissions: level lifts a deny rule, so it does not say to
// set permissions: full.
func TestCLIClaudeDenyRule(t *testing.T) {
	t.Parallel()
	needCLIs(t, "claude")
	c := cliCases[0]
	p := newCLIProj(t, modeUser,
		fakemodel.Rule{Match: "WRITE-ONE", Reply: fakemodel.Reply{WriteFile: &fakemodel.WriteFile{Path: "one.txt", Content: "first file\n"}, Text: "wrote one"}})
	settings := filepath.Join(p.home, ".claude", "settings.json")
	if err := os.WriteFile(settings, []byte(`{"env": {"ANTHROPIC_BASE_URL": "`+p.srv.URL+`"}, "permissions": {"deny": ["Edit(one.txt)"]}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wf := p.put("wf.yaml", p.workflow("write.yaml", c, cliCase{}))
	r := p.run("run", wf)
	if got := p.read("workspace/one.txt"); got != "" {
		t.Fatalf("one.txt = %q: the user's deny rule did not hold (the test proves nothing)", got)
	}
	if r.code != 1 {
		t.Fatalf("run: exit %d, want 1\n%s", r.code, r.stderr)
	}
	if s := p.state(r).Steps["Edit"]; s.ExitCode != 2 {
		t.Errorf("Edit exit %d, want 2", s.ExitCode)
	}
	want := "the agent was denied Write by a deny rule of your own in " + settings + " (permissions.deny), which holds with every permissions: level; change that rule to allow it"
	if !strings.Contains(r.stderr, want) {
		t.Errorf("the console does not name the user's deny rule (want %q):\n%s", want, r.stderr)
	}
	if strings.Contains(r.stderr, "set permissions: full") {
		t.Errorf("the console says to set permissions: full, which does not lift a deny rule:\n%s", r.stderr)
	}
}

// TestCLIGeminiAllowedTools: the user's ~/.gemini/settings.json lets the
// write and shell tools run without asking (tools.allowed), and a policy
// of theirs allows write_file too. permissions: edit writes as before; a
// step with permissions: read still cannot write: the write is refused and
// the step fails with exit 2 naming the permission.
func TestCLIGeminiAllowedTools(t *testing.T) {
	t.Parallel()
	needCLIs(t, "gemini")
	c := cliCases[1]
	p := newCLIProj(t, modeUser, writeRules...)
	files := map[string]string{
		".gemini/settings.json":      `{"security": {"auth": {"selectedType": "gemini-api-key"}}, "model": {"name": "gemini-2.5-pro"}, "tools": {"allowed": ["write_file", "replace", "run_shell_command"]}}` + "\n",
		".gemini/policies/mine.toml": "[[rule]]\ntoolName = \"write_file\"\ndecision = \"allow\"\npriority = 900\n",
	}
	for rel, text := range files {
		path := filepath.Join(p.home, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p.editWritesReadRefused(t, c, "write_file")
}

// TestCLIClaudeSettingsKeyMasked: the user's key is in the env block of
// their ~/.claude/settings.json, not in the terminal's environment (a
// setup claude documents). claude passes it to the agent's commands and
// hooks; its value is masked wherever the run writes, as a key from the
// environment is: a reply that quotes it and a file the agent wrote with
// it leave only *** in the state, the logs and the recording.
func TestCLIClaudeSettingsKeyMasked(t *testing.T) {
	t.Parallel()
	needCLIs(t, "claude")
	const key = "sk-ant-from-settings-0123456789"
	c := cliCases[0]
	p := newCLIProj(t, modeUser, fakemodel.Rule{Match: "LEAK", Reply: fakemodel.Reply{
		Text: "the key is " + key, WriteFile: &fakemodel.WriteFile{Path: "key.txt", Content: "KEY=" + key + "\n"}}})
	settings := `{"env": {"ANTHROPIC_BASE_URL": "` + p.srv.URL + `", "ANTHROPIC_API_KEY": "` + key + `"}}` + "\n"
	if err := os.WriteFile(filepath.Join(p.home, ".claude", "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + clisDir() + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + p.home}
	p.keyLeakMasked(t, env, c, key)
}

// TestCLIGeminiDotEnvKeyMasked: the user's key is in ~/.gemini/.env, not
// in the terminal's environment (a setup gemini documents); gemini loads
// it for itself and everything it starts. Its value is masked wherever the
// run writes, as a key from the environment is.
func TestCLIGeminiDotEnvKeyMasked(t *testing.T) {
	t.Parallel()
	needCLIs(t, "gemini")
	const key = "AIza-from-dotenv-0123456789"
	c := cliCases[1]
	p := newCLIProj(t, modeUser, fakemodel.Rule{Match: "LEAK", Reply: fakemodel.Reply{
		Text: "the key is " + key, WriteFile: &fakemodel.WriteFile{Path: "key.txt", Content: "KEY=" + key + "\n"}}})
	dotenv := "# gemini's key\nexport GEMINI_API_KEY=\"" + key + "\"\n"
	if err := os.WriteFile(filepath.Join(p.home, ".gemini", ".env"), []byte(dotenv), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + clisDir() + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + p.home,
		"GOOGLE_GEMINI_BASE_URL=" + p.srv.URL}
	p.keyLeakMasked(t, env, c, key)
}

// TestCLICodexProviderNames: the model provider of the user's codex
// config.toml has a name that TOML must quote ([model_providers."team.gw"],
// [model_providers."my gw"]). codex answers through it as in their
// terminal: Smith's -c that turns the provider's retries off names it as
// codex's -c reads keys (segments split at dots, no quotes), and is left
// out for a name with a dot, which no -c can name.
func TestCLICodexProviderNames(t *testing.T) {
	t.Parallel()
	needCLIs(t, "codex")
	c := cliCases[2]
	for _, name := range []string{"team.gw", "my gw"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := newCLIProj(t, modeUser, fakemodel.Rule{Reply: fakemodel.Reply{Text: "NAME-OK"}})
			cfg := "model = \"gpt-fake\"\nmodel_provider = \"" + name + "\"\n\n[model_providers.\"" + name + "\"]\nname = \"Team gateway\"\nbase_url = \"" +
				p.srv.URL + "/v1\"\nenv_key = \"GATEWAY_API_KEY\"\nwire_api = \"responses\"\n"
			if err := os.WriteFile(filepath.Join(p.home, ".codex", "config.toml"), []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			wf := p.put("wf.yaml", p.workflow("nologin.yaml", c, cliCase{}))
			r := p.run("run", wf)
			if r.code != 0 || p.state(r).Steps["Ask"].Output != "NAME-OK" {
				t.Errorf("run: exit %d, want 0 and the reply\n%s", r.code, r.stderr)
			}
		})
	}
}

// TestCLIClaudeHooks: the hooks of the user's ~/.claude/settings.json run
// in a step as in their terminal (the user's settings apply); one that
// blocks the prompt (UserPromptSubmit, exit 2: a policy or a secret
// scanner) fails the step with exit 2 and the hook's reason, not retried,
// instead of passing the hook's message on as the model's reply. No
// request reaches the server.
func TestCLIClaudeHooks(t *testing.T) {
	t.Parallel()
	needCLIs(t, "claude")
	c := cliCases[0]
	p := newCLIProj(t, modeUser, fakemodel.Rule{Reply: fakemodel.Reply{Text: "should not be asked"}})
	ran := filepath.Join(p.home, "session-start-ran")
	settings := `{"env": {"ANTHROPIC_BASE_URL": "` + p.srv.URL + `"}, "hooks": {` +
		`"SessionStart": [{"hooks": [{"type": "command", "command": "touch ` + ran + `"}]}], ` +
		`"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo 'prompt blocked by company policy' >&2; exit 2"}]}]}}` + "\n"
	if err := os.WriteFile(filepath.Join(p.home, ".claude", "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	wf := p.put("wf.yaml", p.workflow("nologin.yaml", c, cliCase{}))
	r := p.run("run", wf)
	if _, err := os.Stat(ran); err != nil {
		t.Errorf("the user's SessionStart hook did not run: %v", err)
	}
	if r.code != 1 {
		t.Fatalf("run: exit %d, want 1\n%s", r.code, r.stderr)
	}
	if s := p.state(r).Steps["Ask"]; s.ExitCode != 2 || s.Attempts != 1 {
		t.Errorf("Ask: exit %d after %d tries, want 2 after 1 (not retried)", s.ExitCode, s.Attempts)
	}
	want := "ERROR: Step 'Ask' failed: E_EXEC: provider 'claude' failed: a UserPromptSubmit hook in claude's settings blocked the prompt before any model request: prompt blocked by company policy"
	if !strings.Contains(r.stderr, want) {
		t.Errorf("the console does not say %q:\n%s", want, r.stderr)
	}
	if n := len(p.requests(c.proto)); n != 0 {
		t.Errorf("%d requests reached the server", n)
	}
}

// TestCLIGeminiHooks: a BeforeAgent hook of the user's ~/.gemini
// settings.json that blocks the prompt fails the step with exit 2 and the
// hook's reason, not retried, instead of an empty reply counted as a
// success. No request reaches the server.
func TestCLIGeminiHooks(t *testing.T) {
	t.Parallel()
	needCLIs(t, "gemini")
	c := cliCases[1]
	p := newCLIProj(t, modeUser, fakemodel.Rule{Reply: fakemodel.Reply{Text: "should not be asked"}})
	settings := `{"security": {"auth": {"selectedType": "gemini-api-key"}}, "model": {"name": "gemini-2.5-pro"}, "hooksConfig": {"enabled": true}, ` +
		`"hooks": {"BeforeAgent": [{"hooks": [{"type": "command", "command": "echo 'prompt blocked by company policy' >&2; exit 2"}]}]}}` + "\n"
	if err := os.WriteFile(filepath.Join(p.home, ".gemini", "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	wf := p.put("wf.yaml", p.workflow("nologin.yaml", c, cliCase{}))
	r := p.run("run", wf)
	if r.code != 1 {
		t.Fatalf("run: exit %d, want 1\n%s", r.code, r.stderr)
	}
	if s := p.state(r).Steps["Ask"]; s.ExitCode != 2 || s.Attempts != 1 {
		t.Errorf("Ask: exit %d after %d tries, want 2 after 1 (not retried)", s.ExitCode, s.Attempts)
	}
	want := "ERROR: Step 'Ask' failed: E_EXEC: provider 'gemini' failed: a hook in gemini's settings blocked the prompt before any model request: prompt blocked by company policy"
	if !strings.Contains(r.stderr, want) {
		t.Errorf("the console does not say %q:\n%s", want, r.stderr)
	}
	if n := len(p.requests(c.proto)); n != 0 {
		t.Errorf("%d requests reached the server", n)
	}
}

// TestCLIGeminiAuthTrap: GEMINI_API_KEY and GOOGLE_GEMINI_BASE_URL in the
// terminal, and no auth type in ~/.gemini/settings.json: gemini then
// chooses an auth of its own and refuses it ("Invalid auth method
// selected"). The step fails with exit 2 and says to choose the auth type
// in the settings, not to set the key that is set; smithvm doctor asks
// gemini its own way and says the same, instead of "GEMINI_API_KEY is set".
func TestCLIGeminiAuthTrap(t *testing.T) {
	t.Parallel()
	needCLIs(t, "gemini")
	c := cliCases[1]
	p := newCLIProj(t, modeUser, fakemodel.Rule{Reply: fakemodel.Reply{Text: "should not be asked"}})
	if err := os.WriteFile(filepath.Join(p.home, ".gemini", "settings.json"), []byte(`{"model": {"name": "gemini-2.5-pro"}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wf := p.put("wf.yaml", p.workflow("nologin.yaml", c, cliCase{}))
	r := p.run("run", wf)
	if r.code != 1 {
		t.Fatalf("run: exit %d, want 1\n%s", r.code, r.stderr)
	}
	fix := `Invalid auth method selected.; run 'gemini' once to log in, or set GEMINI_API_KEY; and choose the auth type in gemini's settings.json ("security": {"auth": {"selectedType": "gemini-api-key"}} for GEMINI_API_KEY)`
	if !strings.Contains(r.stderr, fix) {
		t.Errorf("the console does not say %q:\n%s", fix, r.stderr)
	}
	d := p.doctor(p.env(), wf)
	if l := doctorLine(d.stdout, "FAIL", "gemini", "login"); d.code != 2 || !strings.Contains(l, `"selectedType": "gemini-api-key"`) {
		t.Errorf("doctor: exit %d, gemini login %q, want the auth type to choose\n%s", d.code, l, d.stdout)
	}
}

// TestCLICodexProviderHeaders: the model provider of the user's codex
// config.toml sends a header whose value codex reads from a variable
// (env_http_headers, a gateway's team token) and one written in the file
// (http_headers). The variable passes to codex as its env_key does, so
// the header reaches the server as from the user's terminal; both values
// are masked wherever the run writes. smithvm doctor fails the login check
// while the header's variable is not set, as for a missing key.
func TestCLICodexProviderHeaders(t *testing.T) {
	t.Parallel()
	needCLIs(t, "codex")
	const team, static = "team-token-0123456789", "static-header-0123456789"
	c := cliCases[2]
	p := newCLIProj(t, modeUser, fakemodel.Rule{Reply: fakemodel.Reply{Text: "tokens: " + team + " " + static}})
	cfg := "model = \"gpt-fake\"\nmodel_provider = \"gateway\"\n\n[model_providers.gateway]\nname = \"Team gateway\"\nbase_url = \"" + p.srv.URL +
		"/v1\"\nenv_key = \"GATEWAY_API_KEY\"\nwire_api = \"responses\"\nenv_http_headers = { \"X-Team-Token\" = \"TEAM_TOKEN\" }\nhttp_headers = { \"X-Static\" = \"" + static + "\" }\n"
	if err := os.WriteFile(filepath.Join(p.home, ".codex", "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	wf := p.put("wf.yaml", p.workflow("nologin.yaml", c, cliCase{}))
	// smithvm doctor: the header's variable unset is a missing credential.
	cfgPath := filepath.Join(p.home, ".codex", "config.toml")
	d := p.doctor(p.env(), wf)
	want := "TEAM_TOKEN is not set: the model provider chosen in " + cfgPath + " sends it as its header X-Team-Token (env_http_headers), and codex sends no such header without it; set it"
	if l := doctorLine(d.stdout, "FAIL", "codex", "login"); d.code != 2 || !strings.Contains(l, want) {
		t.Errorf("doctor without TEAM_TOKEN: exit %d, codex login %q, want %q\n%s", d.code, l, want, d.stdout)
	}
	d = p.doctor(append(p.env(), "TEAM_TOKEN="+team), wf)
	if l := doctorLine(d.stdout, "ok", "codex", "login"); d.code != 0 || !strings.Contains(l, "GATEWAY_API_KEY") || !strings.Contains(l, "TEAM_TOKEN") {
		t.Errorf("doctor with TEAM_TOKEN: exit %d, codex login %q\n%s", d.code, l, d.stdout)
	}
	r := p.runWith(append(p.env(), "TEAM_TOKEN="+team), "run", wf)
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	reqs := p.requests(c.proto)
	if len(reqs) == 0 || reqs[0].Header.Get("X-Team-Token") != team {
		t.Errorf("the header of env_http_headers did not reach the server: %d requests", len(reqs))
	}
	if got := p.state(r).Steps["Ask"].Output; got != "tokens: *** ***" {
		t.Errorf("Ask output %q, want both header values masked", got)
	}
}

// TestCLISecretInPromptMasked: a secret of the workflow in a prompt (a
// step's, and an agent's that continues its session) reaches the model as
// it is, and is found in clear nowhere under RUN_ROOT afterwards: with
// home: isolated the CLI's configuration home is under RUN_ROOT, gemini
// keeps each call's chat (prompt and reply) there, and claude and gemini
// keep a continued session's. (codex keeps a continued session's first
// prompt in its SQLite databases too, which Smith leaves alone: it runs
// the secret-free case only; docs/providers.md says so.)
func TestCLISecretInPromptMasked(t *testing.T) {
	const token = "tok-secret-0123456789"
	for _, c := range cliCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			needCLIs(t, c.name)
			p := newCLIProj(t, modeIsolated,
				fakemodel.Rule{Match: "SECRET-PROMPT", Reply: fakemodel.Reply{Text: "noted"}},
				fakemodel.Rule{Match: "SECRET-SESSION", Reply: fakemodel.Reply{Text: "remembered"}},
				fakemodel.Rule{Match: "SECRET-AGAIN", Reply: fakemodel.Reply{Text: "it was the token"}},
				fakemodel.Rule{Match: "SECRET-FAIL", Reply: fakemodel.Reply{Status: 400, Message: "no such thing"}})
			file := "secretsession.yaml"
			if c.name == "codex" {
				file = "secretprompt.yaml"
			}
			wf := p.put("wf.yaml", p.workflow(file, c, cliCase{}))
			r := p.runWith(append(p.env(), "MY_TOKEN="+token), "run", wf)
			if r.code != 0 {
				t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
			}
			reqs := p.requests(c.proto)
			if len(reqs) == 0 || !strings.Contains(reqs[0].Prompt, token) {
				t.Fatalf("the secret did not reach the model: the test proves nothing")
			}
			if st := p.state(r); file == "secretsession.yaml" && st.Steps["Two"].Output != "it was the token" {
				t.Errorf("Two output %q: the masked session was not continued", st.Steps["Two"].Output)
			}
			// A request the server refuses: gemini writes an error report
			// holding it into its TMPDIR, in the isolated home.
			fail := p.put("fail.yaml", p.workflow("secretfail.yaml", c, cliCase{}))
			if r := p.runWith(append(p.env(), "MY_TOKEN="+token), "run", fail); r.code != 1 {
				t.Fatalf("run fail.yaml: exit %d, want 1\n%s", r.code, r.stderr)
			}
			noSecretUnder(t, filepath.Join(p.base, ".orchestrator"), token)
		})
	}
}

// keyLeakMasked runs keyleak.yaml with the CLI of case c and env, recording
// it: the model's reply names key, which the step's output must show as
// ***, and its agent writes key into the workspace (else the test proves
// nothing); no file of the run's folder or of the recording may hold key.
func (p *cliProj) keyLeakMasked(t *testing.T, env []string, c cliCase, key string) {
	t.Helper()
	wf := p.put("wf.yaml", p.workflow("keyleak.yaml", c, cliCase{}))
	rec := filepath.Join(p.base, "rec")
	r := p.runWith(env, "run", wf, "--record", rec)
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	if got := p.state(r).Steps["Ask"].Output; got != "the key is ***" {
		t.Errorf("Ask output %q, want the key masked", got)
	}
	if b, err := os.ReadFile(filepath.Join(p.ws, "key.txt")); err != nil || !bytes.Contains(b, []byte(key)) {
		t.Fatalf("the agent did not write key.txt (%v): the test proves nothing", err)
	}
	noSecretUnder(t, filepath.Join(p.base, ".orchestrator"), key)
	noSecretUnder(t, rec, key)
}

// writeRules make the model write one.txt for write.yaml's step with
// permissions: edit, and two.txt for its step with permissions: read.
var writeRules = []fakemodel.Rule{
	{Match: "WRITE-ONE", Reply: fakemodel.Reply{WriteFile: &fakemodel.WriteFile{Path: "one.txt", Content: "first file\n"}, Text: "wrote one"}},
	{Match: "WRITE-TWO", Reply: fakemodel.Reply{WriteFile: &fakemodel.WriteFile{Path: "two.txt", Content: "second file\n"}, Text: "wrote two"}},
}

// editWritesReadRefused runs write.yaml with the CLI of case c, whose
// user's settings allow writing without asking: its step with
// permissions: edit writes one.txt; its step with permissions: read is
// refused the write (tool, as the CLI names it), exits 2 and fails the run,
// and the console names the missing permission (tool "": whichever).
func (p *cliProj) editWritesReadRefused(t *testing.T, c cliCase, tool string) {
	t.Helper()
	wf := p.put("wf.yaml", p.workflow("write.yaml", c, cliCase{}))
	r := p.run("run", wf)
	if got := p.read("workspace/one.txt"); got != "first file\n" {
		t.Errorf("one.txt = %q, want the agent's write (permissions: edit)\n%s", got, r.stderr)
	}
	if got := p.read("workspace/two.txt"); got != "" {
		t.Errorf("two.txt = %q, written with permissions: read (the user's settings widened it)", got)
	}
	if r.code != 1 {
		t.Fatalf("run: exit %d, want 1\n%s", r.code, r.stderr)
	}
	if s := p.state(r).Steps["Read"]; s.ExitCode != 2 {
		t.Errorf("Read exit %d, want 2", s.ExitCode)
	}
	want := "with permissions: read; set permissions: edit to allow it"
	if tool != "" {
		want = "the agent was denied " + tool + " " + want
	}
	if !strings.Contains(r.stderr, want) {
		t.Errorf("the console does not name the missing permission (%q):\n%s", want, r.stderr)
	}
}
