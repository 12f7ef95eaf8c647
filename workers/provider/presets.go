package provider

import (
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"smith/lang"
	"smith/workers/proc"
)

// A replyFormat says how a provider's stdout is read.
type replyFormat uint8

const (
	formatRaw    replyFormat = iota // stdout is the reply
	formatClaude                    // claude -p --output-format json: one result object
	formatGemini                    // gemini --output-format json: {response, stats}; errors as JSON at the end of stderr
	formatCodex                     // codex exec --json: JSONL events
)

// Permission levels (permissions:).
const (
	PermRead = "read"
	PermEdit = "edit"
	PermFull = "full"
)

// A CLI is everything Smith knows about one agent CLI, proven against
// the pinned versions (docs/providers.md). It is the one table of preset
// facts: argv, flags, environment, settings files and reply format.
type CLI struct {
	argv []string // the command; the prompt always goes on stdin
	tail []string // arguments after every flag (codex: "-", read stdin)
	// modelFlag passes model:, added only when a model is set.
	modelFlag string
	// Perms maps permissions: to the CLI's flags.
	Perms  map[string][]string
	format replyFormat
	// StdoutFile reads stdout through a file: node cuts writes to a pipe
	// short when the CLI exits, so a pipe loses the end of a long reply.
	StdoutFile bool
	// MaxPrompt is the most the CLI reads from stdin (0 = no limit); a
	// longer prompt fails the step instead of being cut silently.
	MaxPrompt int
	// Home is the variable naming the CLI's config home; unless the step's
	// environment sets it, it is RUN_ROOT/providers/<name>, so sessions,
	// settings and keys never land under the user's HOME.
	Home string
	// Files are written into that home before each call (its settings).
	Files map[string]string
	// Env are fixed variables (retries off, ...); the step's and the
	// provider's env override them.
	Env []proc.EnvVar
	// TmpInHome points TMPDIR into the home (the CLI writes error reports,
	// with the request, into its temporary directory).
	TmpInHome bool
	// args adds arguments from the child's environment (codex: a model
	// provider with retries off).
	args func(env map[string]string) []string
	// KeyNeeded: with a config home of Smith's (no login there) the CLI
	// cannot work without KeyVar, and does not say so quickly (codex
	// retries its connection for minutes): the step fails at once.
	KeyNeeded bool
	// KeyVar and baseVar are the variables a user sets for a key and a
	// server; error reasons name them.
	KeyVar, baseVar string
	// denied finds, in stdout and stderr, a tool call the CLI refused for
	// lack of permission; it returns what was denied.
	denied func(stdout, stderr string) string
}

// clis are the built-in agent CLIs.
var clis = map[string]*CLI{
	"claude": {
		argv:      []string{"claude", "-p", "--output-format", "json", "--no-session-persistence"},
		modelFlag: "--model",
		Perms: map[string][]string{
			PermRead: {"--permission-mode", "dontAsk"},
			PermEdit: {"--permission-mode", "acceptEdits"},
			PermFull: {"--permission-mode", "bypassPermissions"},
		},
		format: formatClaude,
		Home:   "CLAUDE_CONFIG_DIR",
		Env: []proc.EnvVar{
			{Name: "CLAUDE_CODE_MAX_RETRIES", Value: "0"},
			{Name: "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", Value: "1"},
		},
		KeyVar:  "ANTHROPIC_API_KEY",
		baseVar: "ANTHROPIC_BASE_URL",
		denied:  claudeDenied,
	},
	"gemini": {
		argv:      []string{"gemini", "--output-format", "json"},
		modelFlag: "-m",
		Perms: map[string][]string{
			PermRead: {"--approval-mode", "default"},
			PermEdit: {"--approval-mode", "auto_edit"},
			PermFull: {"--approval-mode", "yolo"},
		},
		format:     formatGemini,
		StdoutFile: true,
		MaxPrompt:  8 << 20,
		Home:       "GEMINI_CLI_HOME",
		Files: map[string]string{
			".gemini/settings.json": `{"security": {"auth": {"selectedType": "gemini-api-key"}}, "general": {"maxAttempts": 1, "retryFetchErrors": false}, "privacy": {"usageStatisticsEnabled": false}}` + "\n",
		},
		// GEMINI_CLI_NO_RELAUNCH: gemini otherwise starts a second node
		// process of itself with a bigger heap, which costs a second start.
		Env:       []proc.EnvVar{{Name: "GEMINI_CLI_TRUST_WORKSPACE", Value: "true"}, {Name: "GEMINI_CLI_NO_RELAUNCH", Value: "true"}},
		TmpInHome: true,
		KeyVar:    "GEMINI_API_KEY",
		baseVar:   "GOOGLE_GEMINI_BASE_URL",
		denied:    geminiDenied,
	},
	"codex": {
		argv:      []string{"codex", "exec", "--json", "--skip-git-repo-check", "--ephemeral", "--disable", "unbounded_connection_retries"},
		tail:      []string{"-"},
		modelFlag: "-m",
		Perms: map[string][]string{
			PermRead: {"--sandbox", "read-only"},
			PermEdit: {"--sandbox", "workspace-write"},
			PermFull: {"--dangerously-bypass-approvals-and-sandbox"},
		},
		format:    formatCodex,
		Home:      "CODEX_HOME",
		KeyNeeded: true,
		args:      codexProvider,
		KeyVar:    "OPENAI_API_KEY",
		baseVar:   "OPENAI_BASE_URL",
		denied:    codexDenied,
	},
}

// codexProvider gives codex a model provider with its retries off when an
// API key is set: codex's built-in provider cannot be changed, and it
// retries each request 4 times and each stream 5. OPENAI_BASE_URL (which
// codex itself ignores) chooses the server. Without OPENAI_API_KEY codex
// keeps its own provider and login.
func codexProvider(env map[string]string) []string {
	if env["OPENAI_API_KEY"] == "" {
		return nil
	}
	base := env["OPENAI_BASE_URL"]
	if base == "" {
		base = "https://api.openai.com/v1"
	}
	return []string{
		"-c", "model_provider=smith",
		"-c", `model_providers.smith={name="smith", base_url=` + tomlString(base) +
			`, env_key="OPENAI_API_KEY", wire_api="responses", request_max_retries=0, stream_max_retries=0}`,
	}
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte("0123456789abcdef"[r>>4])
			b.WriteByte("0123456789abcdef"[r&15])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// Command returns the preset's argv for model and permissions (already
// checked) and the child's environment.
func (f *CLI) Command(model, perms string, env map[string]string) []string {
	argv := append([]string(nil), f.argv...)
	if model != "" {
		argv = append(argv, f.modelFlag, model)
	}
	argv = append(argv, f.Perms[perms]...)
	if f.args != nil {
		argv = append(argv, f.args(env)...)
	}
	return append(argv, f.tail...)
}

// A Provider is a resolved provider: a preset, a workflow's own provider, or
// a workflow's override of a preset (which keeps the preset's reply format,
// environment and stdout handling).
type Provider struct {
	Def    // Name, Command, Defaults, Transport; Env and Secrets of the provider entry
	format replyFormat
	Mock   bool // the built-in mock: no process
	CLI    *CLI // a preset's facts (nil for a workflow's own provider)
	Own    bool // the preset's own command (not overridden): model and permission flags are added
}

// RawReply reports whether the provider's stdout is its reply as it is (a
// workflow's own provider), not a CLI's format that ReadReply reads.
func (p Provider) RawReply() bool { return p.format == formatRaw }

// preset returns a built-in preset (a fresh value each time).
func preset(name string) (Provider, bool) {
	if name == lang.PresetMock {
		return Provider{Def: Def{Name: name}, Mock: true}, true
	}
	f, ok := clis[name]
	if !ok {
		return Provider{}, false
	}
	return Provider{Def: Def{Name: name, Command: f.argv}, format: f.format, CLI: f, Own: true}, true
}

// Lookup resolves name: a workflow's Def of that name (defs)
// overrides the preset (its command replaces the preset's; a def without a
// command keeps the preset's command, so `mock: {defaults: {script: x}}` stays
// the built-in mock), otherwise the preset.
func Lookup(defs []Def, name string) (Provider, bool) {
	p, isPreset := preset(name)
	for _, d := range defs {
		if d.Name != name {
			continue
		}
		switch {
		case len(d.Command) > 0:
			p.Mock, p.Own = false, false
		case !isPreset:
			return Provider{}, false
		default:
			d.Command = p.Command
		}
		p.Def = d
		return p, true
	}
	return p, isPreset
}

// Names returns every provider name a step can use: the presets, then the
// workflow's own (defs).
func Names(defs []Def) []string {
	names := append([]string(nil), lang.ProviderPresets[:]...)
	for _, d := range defs {
		if _, ok := preset(d.Name); !ok {
			names = append(names, d.Name)
		}
	}
	return names
}

// ---- denied tool calls ----

// claudeDenied reads permission_denials of claude's result object.
func claudeDenied(stdout, _ string) string {
	v := claudeResult(stdout)
	var tools []string
	v.Get("permission_denials").ForEach(func(_, d gjson.Result) bool {
		tools = appendUnique(tools, d.Get("tool_name").String())
		return true
	})
	return strings.Join(tools, ", ")
}

// geminiDenied finds the tool errors gemini prints on stderr for a tool it
// did not offer (approval mode default hides the write tools) or refused.
func geminiDenied(_, stderr string) string {
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

// isWriteTool tells gemini's tools that change files or run commands.
func isWriteTool(name string) bool {
	switch name {
	case "write_file", "replace", "edit", "run_shell_command":
		return true
	}
	return false
}

// codexDenied finds codex's refusals (on stderr) of a patch or a command
// its sandbox blocks.
func codexDenied(_, stderr string) string {
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

// KeyVars returns the variables that hold the presets' keys
// (ANTHROPIC_API_KEY, ...), sorted: values that must never be committed
// (CONTRACT 12.4), whether or not a workflow declares them.
func KeyVars() []string {
	var out []string
	for _, f := range clis {
		if f.KeyVar != "" {
			out = appendUnique(out, f.KeyVar)
		}
	}
	slices.Sort(out)
	return out
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
