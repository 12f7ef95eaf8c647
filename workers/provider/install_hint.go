package provider

import "fmt"

// cliInstall names the agent CLIs the presets run and how to get each, so
// that a missing one is a message that says what to do (docs/getting-started.md).
var cliInstall = map[string]string{
	"claude": "Claude Code's CLI: npm install -g @anthropic-ai/claude-code, then run 'claude' once to log in",
	"gemini": "the Gemini CLI: npm install -g @google/gemini-cli, then run 'gemini' once to log in (or set GEMINI_API_KEY)",
	"codex":  "the Codex CLI: npm install -g @openai/codex, then run 'codex login' (or set OPENAI_API_KEY)",
}

// notFoundHint says what to do about a program that is not on PATH.
func InstallHint(name string) string {
	if how, ok := cliInstall[name]; ok {
		return fmt.Sprintf(": it is not on PATH; install %s (or try the workflow offline first with provider: mock)", how)
	}
	return ": it is not on PATH; install it, or give its full path in the argv"
}
