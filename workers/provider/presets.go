package provider

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/tidwall/gjson"

	"smith/lang"
	"smith/workers/step"
)

// Permission levels (permissions:).
const (
	PermRead = "read"
	PermEdit = "edit"
	PermFull = "full"
)

// A CLI is everything Smith knows about one agent CLI, proven against
// the pinned versions (docs/providers.md). It is the one table of preset
// facts: argv, flags, the variables that pass, config homes, settings files,
// how to install it, and the readers of its reply and of its activity. A
// new preset is its name in lang.ProviderPresets and one entry of clis.
//
// A preset runs the CLI as its user runs it (CONTRACT 5): the user's HOME and
// the CLI's own configuration, Smith adding only the flags that make the
// call headless and shape it. With home: isolated (Call.Isolated) the CLI
// gets a fresh config home under RUN_ROOT/providers/<name> instead, with
// the settings of Files written there.
type CLI struct {
	argv []string // the command; the prompt always goes on stdin
	tail []string // arguments after every flag (codex: "-", read stdin)
	// modelFlag passes model:, added only when a model is set.
	modelFlag string
	// Perms maps permissions: to the CLI's flags.
	Perms map[string][]string
	// Install says how to get the CLI when it is not on PATH.
	Install Install
	// newReader makes the reader of one call's stdout (ReadReplyFrom,
	// stdout.go): the model's text, tokens and session, or the error the
	// CLI reported, and what it refused to do for lack of permission.
	newReader func() stdoutReader
	// startFailure, when set, reads the reason of a failure whose stdout
	// is not in the CLI's format from stderr (gemini prints a startup
	// failure's reason on the line before the last); stderr's last line
	// otherwise.
	startFailure func(stderr string) string
	// activity reads one event of the CLI's streamed stdout into Acts
	// (NewActivityReader).
	activity func(a *ActivityReader, ev gjson.Result) []Act
	// StdoutFile reads stdout through a file: node cuts writes to a pipe
	// short when the CLI exits, so a pipe loses the end of a long reply.
	StdoutFile bool
	// MaxPrompt is the most the CLI reads from stdin (0 = no limit); a
	// longer prompt fails the step instead of being cut silently.
	MaxPrompt int
	// Vars are the variables the CLI itself reads for its key, login
	// token, endpoint, project, proxy and config home: set in Smith's
	// environment, they reach this preset's processes (and no other
	// process), masked like secrets everywhere.
	Vars []string
	// Switches are variables that choose the CLI's backend or region
	// (values such as "1" or "us-east5"): they pass like Vars but are not
	// masked (masking "1" would blank every digit one of a run's output).
	Switches []string
	// Home is the variable naming the CLI's config home; homeSub is the
	// folder of the configuration under HOME when Home is not set, and
	// under Home's folder too when homeAbove (gemini's GEMINI_CLI_HOME
	// names the folder above .gemini).
	Home, homeSub string
	homeAbove     bool
	// ConfigFile is the file of the config home the preset reads (codex:
	// config.toml, for the model provider the user chose); read only.
	// configBroken is what the CLI says when it cannot load its
	// configuration (a file that is not TOML, a key it no longer takes).
	ConfigFile   string
	configBroken string
	// DenySettings are the settings files where the user's deny rules
	// (permissions.deny) live: in the config home, and, after a "./", in
	// the working directory (claude: settings.json; .claude/settings.json
	// and .claude/settings.local.json of the project). A deny rule holds
	// with every permission mode: a call it refused names the files.
	DenySettings []string
	// SettingsEnv is the file of the config home whose "env" block sets
	// variables for the CLI and everything it starts (claude:
	// settings.json): the values of its Vars there are masked like the
	// same variables from Smith's environment.
	SettingsEnv string
	// DotEnv are the files, relative to the config home, of NAME=value
	// lines the CLI loads into its own environment (gemini: .env in
	// ~/.gemini, and ~/.env): the values of its Vars there are masked too.
	DotEnv []string
	// Files are written into an isolated home before each call (its
	// settings: retries off, the auth type); never into the user's.
	Files map[string]string
	// Env are fixed variables in both modes (retries off, no telemetry);
	// the step's and the provider's env override them.
	Env []step.EnvVar
	// TmpInHome points TMPDIR into an isolated home (the CLI writes error
	// reports, with the request, into its temporary directory).
	TmpInHome bool
	// args adds arguments from the call (codex: its retries off for the
	// model provider in use).
	args func(c Call) []string
	// ReadPolicy, for a CLI whose users' settings can let the write and
	// shell tools run without asking (gemini: tools.allowed, their policy
	// files), is a policy file that denies those tools whatever the user's
	// settings say; with permissions: read the runner writes it for the
	// call (Call.Policy) and policyFlag gives it to the CLI.
	ReadPolicy, policyFlag string
	// KeyNeeded: in an isolated home (no login there) the CLI cannot work
	// without KeyVar, and does not say so quickly (codex retries its
	// connection for minutes): the step fails at once.
	KeyNeeded bool
	// KeyVar and baseVar are the variables a user sets for a key and a
	// server; error reasons name them. Login is how a user logs in.
	KeyVar, baseVar, Login string
	// userKeyVar, when set, is the key variable the CLI reads with the
	// user's own configuration (codex's built-in provider reads
	// CODEX_API_KEY, not OPENAI_API_KEY); KeyVar otherwise. saveKey is
	// the CLI's command that saves a key read on stdin as its login.
	userKeyVar, saveKey string
	// Tested is the version the presets are proven against (the pin of
	// testdata/clis/package.json; TestPinnedVersions keeps them equal).
	Tested string
	// Credentials are the Vars that are a key or a login token by
	// themselves, or, with a backend switch, select a cloud login.
	Credentials []string
	// secretVars are the other Vars that hold a credential (a cloud's
	// secret key or session token, a client key's passphrase): no login by
	// themselves, but a commit must not hold them either (KeyVars).
	secretVars []string
	// LoginStatus is the CLI's own command that says, without a model
	// request, whether it is logged in (exit 0 and no notLoggedIn phrase);
	// LoginFiles, where there is none, are the files of a login in its
	// configuration home.
	LoginStatus []string
	notLoggedIn []string
	LoginFiles  []string
	// LoginOKExit is LoginStatus's exit code when logged in (0 unless set).
	LoginOKExit int
	// authFix maps what the CLI says of its auth (a phrase) to what a
	// setup that says it needs besides a login or a key.
	authFix [][2]string
	// Overlay, for a CLI whose retries only its settings file can turn
	// off, gives a call in the user's home an overlay home instead (the
	// Home variable set to it): Dir of the user's home linked entry by
	// entry, and File a copy of theirs with Set applied. The user's files
	// are never written.
	Overlay *Overlay
	// Sessions (session: continue, CONTRACT 12.1; session.go): noSession
	// are the flags of argv that keep the CLI from saving its session
	// (left out for an agent that continues), resume the arguments that
	// continue session id (the reader reads the id of the session a reply
	// came from), usageTotal says the CLI reports a resumed session's
	// running token total instead of the call's.
	noSession  []string
	resume     func(id string) []string
	usageTotal bool
	// SessionFiles are where the CLI saves a session's messages, prompts
	// and replies in clear, as text (a glob relative to its config home):
	// a file of session ID has the first 8 characters of ID in its name
	// and ID in its content. In an isolated home, under RUN_ROOT, a call
	// that does not continue its session removes its own (gemini saves
	// every call's), and one that does masks the secrets in them.
	SessionFiles []string
	// Reports are the files the CLI writes into an isolated home with a
	// request in clear (a glob relative to it; gemini: its error reports in
	// tmp/, its TMPDIR there): their secrets are masked after each call.
	Reports []string
}

// An Overlay is a settings file of the user's with a few keys set for a
// call, in a home of Smith's that links everything else of theirs.
type Overlay struct {
	File, Dir string
	Set       []Setting
	// Saves are the sub-folders of Dir where the CLI saves its sessions
	// (gemini: tmp/<project>/chats): for an agent that continues its
	// session they are created in the user's folder when missing, so the
	// overlay links them and the sessions land with the user's, as in a
	// terminal, instead of in the overlay removed after the call.
	Saves []string
	// Copies are the files at the top of Dir holding state the CLI
	// shares between its runs and writes by rename (gemini: projects.json,
	// its registry of project folders): the overlay holds a copy of the
	// user's, so that the CLI reads it and its writes, and its lock, stay
	// in the overlay. (A file the CLI makes when missing with a plain write,
	// gemini's installation_id, is linked only when the user has it: else
	// the CLI makes it in the overlay.)
	Copies []string
}

// A Setting is one key (a dotted JSON path) and its value.
type Setting struct {
	Path  string
	Value any
}

// A Call is what a preset's command depends on besides model and
// permissions: the child's environment, and whether its home is isolated.
type Call struct {
	Env      map[string]string
	Isolated bool
	// Config is the CLI's configuration file (ConfigFile in its config
	// home) as the runner read it, nil when there is none.
	Config []byte
	// Policy is the file holding the CLI's ReadPolicy for this call
	// (permissions: read), "" for none.
	Policy string
	// Continue is set for an agent that continues its session (the CLI
	// saves it); Session is the id of the session to resume ("" = start
	// one).
	Continue bool
	Session  string
}

// proxyVars are the proxies every preset's CLI honours (node's and Rust's
// HTTP clients): a proxy's address may hold a password, so they are
// masked. netVars, the proxy exceptions and certificate files, are not.
var (
	proxyVars = []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"}
	netVars   = []string{"NO_PROXY", "no_proxy", "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR"}
)

// clis are the built-in agent CLIs.
var clis = map[string]*CLI{
	"claude": {
		// --settings: a user's settings.json env block beats the process
		// environment, so CLAUDE_CODE_MAX_RETRIES=0 also goes in as a
		// settings layer of the call's own (merged over the user's, which
		// are not changed).
		argv: []string{"claude", "-p", "--output-format", "stream-json", "--verbose", "--no-session-persistence",
			"--settings", `{"env": {"CLAUDE_CODE_MAX_RETRIES": "0"}}`},
		modelFlag: "--model",
		// read: dontAsk refuses what would need approval, but the user's
		// own allow rules (permissions.allow: ["Write", "Edit"]) need none;
		// the deny rule Edit(//**) (every path; Edit rules cover every tool
		// that edits files) beats them, and claude still offers the tools
		// and reports each refusal in permission_denials. Bash is denied
		// as a whole: an allow rule of the user's (Bash(*), Bash(node:*))
		// runs any command, and claude's check of a command's paths against
		// Edit(//**) sees rm and redirections but not a program that writes
		// (node -e, python3 -c). Denied, the shell is not offered at all
		// (claude then offers Grep and Glob, which it leaves out beside
		// it). --permission-mode plan is no answer: in 2.1.330 it leaves
		// each command that is not read-only to a model's safety check.
		Perms: map[string][]string{
			PermRead: {"--permission-mode", "dontAsk", "--disallowedTools=Edit(//**),Bash"},
			PermEdit: {"--permission-mode", "acceptEdits"},
			PermFull: {"--permission-mode", "bypassPermissions"},
		},
		Install:   Install{"Claude Code's CLI", "@anthropic-ai/claude-code", "run 'claude' once to log in"},
		newReader: func() stdoutReader { return &claudeReader{} },
		activity:  (*ActivityReader).claude,
		Vars: append([]string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_BASE_URL",
			"ANTHROPIC_CUSTOM_HEADERS", "CLAUDE_CONFIG_DIR", "ANTHROPIC_BEDROCK_BASE_URL", "ANTHROPIC_VERTEX_BASE_URL",
			"ANTHROPIC_FOUNDRY_BASE_URL", "ANTHROPIC_FOUNDRY_RESOURCE", "ANTHROPIC_FOUNDRY_API_KEY", "ANTHROPIC_FOUNDRY_AUTH_TOKEN",
			"ANTHROPIC_VERTEX_PROJECT_ID", "GOOGLE_CLOUD_PROJECT", "AWS_BEARER_TOKEN_BEDROCK", "AWS_ACCESS_KEY_ID",
			"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS", "CLAUDE_CODE_CLIENT_CERT",
			"CLAUDE_CODE_CLIENT_KEY", "CLAUDE_CODE_CLIENT_KEY_PASSPHRASE"}, proxyVars...),
		Switches: append([]string{"CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY",
			"CLAUDE_CODE_SKIP_BEDROCK_AUTH", "CLAUDE_CODE_SKIP_VERTEX_AUTH", "CLOUD_ML_REGION", "AWS_REGION", "AWS_DEFAULT_REGION",
			"AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "ANTHROPIC_MODEL", "ANTHROPIC_SMALL_FAST_MODEL",
			"ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL"}, netVars...),
		Home:         "CLAUDE_CONFIG_DIR",
		homeSub:      ".claude",
		SettingsEnv:  "settings.json",
		DenySettings: []string{"settings.json", "./.claude/settings.json", "./.claude/settings.local.json"},
		Env: []step.EnvVar{
			{Name: "CLAUDE_CODE_MAX_RETRIES", Value: "0"},
			{Name: "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", Value: "1"},
		},
		KeyVar:      "ANTHROPIC_API_KEY",
		baseVar:     "ANTHROPIC_BASE_URL",
		Login:       "run 'claude' once to log in",
		Tested:      "2.1.330",
		LoginStatus: []string{"claude", "auth", "status", "--text"},
		notLoggedIn: []string{"Not logged in", "not logged in"},
		Credentials: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_FOUNDRY_API_KEY",
			"AWS_BEARER_TOKEN_BEDROCK", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY"},
		secretVars:   []string{"ANTHROPIC_FOUNDRY_AUTH_TOKEN", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "CLAUDE_CODE_CLIENT_KEY_PASSPHRASE"},
		LoginFiles:   []string{".credentials.json"},
		noSession:    []string{"--no-session-persistence"},
		resume:       claudeResume,
		SessionFiles: []string{"projects/*/*.jsonl"},
	},
	"gemini": {
		argv:      []string{"gemini", "--output-format", "stream-json"},
		modelFlag: "-m",
		Perms: map[string][]string{
			PermRead: {"--approval-mode", "default"},
			PermEdit: {"--approval-mode", "auto_edit"},
			PermFull: {"--approval-mode", "yolo"},
		},
		Install:      Install{"the Gemini CLI", "@google/gemini-cli", "run 'gemini' once to log in (or set GEMINI_API_KEY)"},
		newReader:    func() stdoutReader { return &geminiReader{} },
		startFailure: lastParagraph,
		activity:     (*ActivityReader).gemini,
		StdoutFile:   true,
		MaxPrompt:    8 << 20,
		Vars: append([]string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_VERTEX_BASE_URL",
			"GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_PROJECT_ID", "GOOGLE_CLOUD_ACCESS_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS",
			"GEMINI_CLI_CUSTOM_HEADERS", "GEMINI_CLI_HOME"}, proxyVars...),
		Switches: append([]string{"GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_GCA", "GOOGLE_CLOUD_LOCATION", "GOOGLE_CLOUD_QUOTA_PROJECT",
			"GEMINI_MODEL", "GOOGLE_GENAI_API_VERSION", "GEMINI_API_KEY_AUTH_MECHANISM", "GEMINI_FORCE_FILE_STORAGE",
			"GEMINI_FORCE_ENCRYPTED_FILE_STORAGE", "GEMINI_CLI_TRUSTED_FOLDERS_PATH"}, netVars...),
		Home:      "GEMINI_CLI_HOME",
		homeSub:   ".gemini",
		homeAbove: true,
		DotEnv:    []string{".env", "../.env"},
		Files: map[string]string{
			".gemini/settings.json": `{"security": {"auth": {"selectedType": "gemini-api-key"}}, "general": {"maxAttempts": 1, "retryFetchErrors": false, "sessionRetention": {"enabled": false}}, "privacy": {"usageStatisticsEnabled": false}}` + "\n",
		},
		// GEMINI_CLI_NO_RELAUNCH: gemini otherwise starts a second node
		// process of itself with a bigger heap, which costs a second start.
		// NO_BROWSER: with a Google login selected and none saved, gemini
		// would otherwise ask for consent on stdin (eating the prompt) or
		// open a browser and wait.
		Env: []step.EnvVar{{Name: "GEMINI_CLI_TRUST_WORKSPACE", Value: "true"}, {Name: "GEMINI_CLI_NO_RELAUNCH", Value: "true"},
			{Name: "NO_BROWSER", Value: "true"}},
		// gemini takes its retries (10 tries, 5 s doubling to 30 s) only
		// from settings, and reads system settings only from root-owned
		// files: in the user's home the call gets an overlay home of its
		// own, the user's ~/.gemini linked entry by entry, with their
		// settings.json and these keys set over it. The session cleanup
		// gemini runs at each start (general.sessionRetention, on by
		// default) is off, as in Files: it deletes every session file of
		// the project that has no prompt yet, with all the files of the
		// same id, so a session whose resume left a prompt-less file
		// (gemini 0.61 starts a file named after the minute before it
		// resumes: the names differ across a minute boundary), or the new
		// session of a call starting next to it. projects.json, gemini's
		// registry of project folders under tmp/ and history/, it
		// replaces by rename: see Overlay.Copies.
		Overlay: &Overlay{File: ".gemini/settings.json", Dir: ".gemini", Set: []Setting{{"general.maxAttempts", 1}, {"general.retryFetchErrors", false},
			{"general.sessionRetention.enabled", false}},
			Saves: []string{"tmp", "history"}, Copies: []string{"projects.json"}},
		TmpInHome: true,
		// read: a user's tools.allowed (or a policy file of theirs) lets
		// write_file, replace and run_shell_command run without asking in
		// --approval-mode default too. A policy of the admin tier, which
		// beats the user's settings and policies, denies them: gemini then
		// does not offer them, and a call of one is "Error executing tool
		// write_file: ..." on stderr (a denial, exit 2). gemini ignores it
		// only where the machine's administrator has system policies.
		ReadPolicy:  "[[rule]]\ntoolName = [\"write_file\", \"replace\", \"run_shell_command\"]\ndecision = \"deny\"\npriority = 999\n",
		policyFlag:  "--admin-policy",
		KeyVar:      "GEMINI_API_KEY",
		baseVar:     "GOOGLE_GEMINI_BASE_URL",
		Login:       "run 'gemini' once to log in",
		Tested:      "0.61.0",
		Credentials: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_GCA"},
		secretVars:  []string{"GOOGLE_CLOUD_ACCESS_TOKEN"},
		LoginFiles:  []string{"oauth_creds.json"},
		// With empty stdin gemini checks its auth and stops before any
		// model request: exit 42 ("No input provided") means it is ready,
		// 41 that it has no usable auth.
		LoginStatus: []string{"gemini", "--output-format", "json"},
		LoginOKExit: 42,
		// With GOOGLE_GEMINI_BASE_URL set and no auth type in the
		// settings, gemini chooses a gateway auth and refuses it, even
		// with GEMINI_API_KEY set.
		authFix:      [][2]string{{"Invalid auth method selected", `and choose the auth type in gemini's settings.json ("security": {"auth": {"selectedType": "gemini-api-key"}} for GEMINI_API_KEY): with GOOGLE_GEMINI_BASE_URL set, gemini chooses none that works by itself`}},
		resume:       geminiResume,
		SessionFiles: []string{".gemini/tmp/*/chats/session-*.json*"},
		Reports:      []string{"tmp/gemini-client-error-*.json"},
	},
	"codex": {
		argv:      []string{"codex", "exec", "--json", "--skip-git-repo-check", "--ephemeral", "--disable", "unbounded_connection_retries", "--disable", "shell_snapshot"},
		tail:      []string{"-"},
		modelFlag: "-m",
		Perms: map[string][]string{
			PermRead: {"--sandbox", "read-only"},
			PermEdit: {"--sandbox", "workspace-write"},
			PermFull: {"--dangerously-bypass-approvals-and-sandbox"},
		},
		Install:    Install{"the Codex CLI", "@openai/codex", "run 'codex login' (or set CODEX_API_KEY)"},
		newReader:  func() stdoutReader { return &codexReader{} },
		activity:   (*ActivityReader).codex,
		Vars:       append([]string{"OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORGANIZATION", "OPENAI_PROJECT", "CODEX_HOME"}, proxyVars...),
		Switches:   append([]string{"CODEX_CA_CERTIFICATE"}, netVars...),
		Home:       "CODEX_HOME",
		homeSub:    ".codex",
		ConfigFile: "config.toml",
		// codex exec: "Error loading config.toml:"; codex login status:
		// "Error loading configuration:".
		configBroken: "Error loading config",
		startFailure: codexStartFailure,
		KeyNeeded:    true,
		args:         codexArgs,
		KeyVar:       "OPENAI_API_KEY",
		userKeyVar:   "CODEX_API_KEY",
		saveKey:      "codex login --with-api-key",
		baseVar:      "OPENAI_BASE_URL",
		Login:        "run 'codex login' (or 'codex login --with-api-key')",
		Tested:       "0.169.0",
		Credentials:  []string{"CODEX_API_KEY"},
		LoginStatus:  []string{"codex", "login", "status"},
		LoginFiles:   []string{"auth.json"},
		notLoggedIn:  []string{"Not logged in"},
		noSession:    []string{"--ephemeral"},
		resume:       codexResume,
		usageTotal:   true,
		SessionFiles: []string{"sessions/*/*/*/rollout-*.jsonl"},
	},
}

// ConfigHome is where the CLI finds its configuration in env: the Home
// variable's folder, else HOME's (with homeSub under either: ~/.claude,
// ~/.gemini, ~/.codex).
func (f *CLI) ConfigHome(env map[string]string) string {
	if v := env[f.Home]; v != "" {
		if f.homeAbove {
			return filepath.Join(v, f.homeSub)
		}
		return v
	}
	if env["HOME"] == "" {
		return "~/" + f.homeSub
	}
	return filepath.Join(env["HOME"], f.homeSub)
}

// CLIOf returns the facts of preset name's CLI.
func CLIOf(name string) (*CLI, bool) {
	f, ok := clis[name]
	return f, ok
}

// Program is the CLI's program name (looked up in PATH).
func (f *CLI) Program() string { return f.argv[0] }

// CredentialIn returns the first of the CLI's credential variables set in
// env, "" for none.
func (f *CLI) CredentialIn(env map[string]string) string {
	for _, v := range f.Credentials {
		if env[v] != "" {
			return v
		}
	}
	return ""
}

// NotLoggedIn reports whether the login status command's words say there
// is no login (some say so with exit 0).
func (f *CLI) NotLoggedIn(said string) bool {
	for _, p := range f.notLoggedIn {
		if strings.Contains(said, p) {
			return true
		}
	}
	return false
}

// PresetVars returns the variables that pass from Smith's environment to
// preset name's processes (CONTRACT 5), masked ones first.
func PresetVars(name string) (masked, plain []string) {
	f, ok := clis[name]
	if !ok {
		return nil, nil
	}
	return f.Vars, f.Switches
}

// MinMasked is the shortest value of a preset's variable that is masked:
// a shorter one ("1", "eu") is no credential, and masking it would blank
// ordinary text.
const MinMasked = 6

// AllVars returns the presets' masked variables, their key variables and
// MinMasked: what a run masks wherever it writes, and what a commit must
// not hold (CONTRACT 5).
func AllVars() step.PresetVars {
	return step.PresetVars{Masked: MaskedVars(), Keys: KeyVars(), MinMasked: MinMasked}
}

// MaskedVars returns every preset's masked variables, sorted, without
// repeats: a run masks their values wherever it writes (CONTRACT 5).
func MaskedVars() []string {
	var out []string
	for _, f := range clis {
		for _, v := range f.Vars {
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	slices.Sort(out)
	return out
}

// codexArgs bounds codex's own retries (CONTRACT 5). In an isolated home
// with an API key it is given a provider of Smith's with retries off
// (codex's built-in provider cannot be changed): OPENAI_BASE_URL (which
// codex itself ignores) chooses the server. In the user's own home the
// model provider they chose stays; when it is one of theirs, its request
// and stream retries are set to 0 for this call (-c overrides one key of
// it, nothing else).
func codexArgs(c Call) []string {
	env := c.Env
	if !c.Isolated {
		_, name, defined, _ := codexProvider(c.Config)
		if name == "" || codexBuiltin(name) || !defined {
			return nil // -c on a built-in or unknown provider is refused
		}
		if strings.ContainsAny(name, ".=") {
			// codex's -c splits its key at every dot and takes no
			// quotes: no -c names this provider (one that tried would
			// fail the call), so codex's own retries apply.
			return nil
		}
		key := "model_providers." + name
		return []string{"-c", key + ".request_max_retries=0", "-c", key + ".stream_max_retries=0"}
	}
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
// checked) and the call.
func (f *CLI) Command(model, perms string, c Call) []string {
	argv := append([]string(nil), f.argv...)
	if model != "" {
		argv = append(argv, f.modelFlag, model)
	}
	argv = append(argv, f.Perms[perms]...)
	if c.Policy != "" && f.policyFlag != "" {
		argv = append(argv, f.policyFlag+"="+c.Policy)
	}
	if f.args != nil {
		argv = append(argv, f.args(c)...)
	}
	argv = f.sessionArgs(argv, c)
	return append(argv, f.tail...)
}

// A Provider is a resolved provider: a preset, a workflow's own provider, or
// a workflow's override of a preset (which keeps the preset's reply format,
// environment and stdout handling).
type Provider struct {
	Def       // Name, Command, Defaults, Transport; Env and Secrets of the provider entry
	Mock bool // the built-in mock: no process
	// CLI is a preset's facts, kept by a workflow's override of the preset
	// (nil for the mock and a workflow's own provider).
	CLI *CLI
	Own bool // the preset's own command (not overridden): model and permission flags are added
	// ConfigHome is the configuration home the CLI was given for this call
	// (the runner sets it): failure reasons name it. KeyVar, when set, is
	// the variable the key comes from instead of the CLI's own (the env_key
	// of a model provider of the user's).
	ConfigHome, KeyVar string
	// DenyFiles are the settings files of the CLI that hold deny rules
	// (the runner sets them, DenySettings): a tool call one refused names
	// them.
	DenyFiles []string
}

// RawReply reports whether the provider's stdout is its reply as it is (a
// workflow's own provider), not a CLI's format that ReadReply reads.
func (p Provider) RawReply() bool { return p.CLI == nil }

// preset returns a built-in preset (a fresh value each time).
func preset(name string) (Provider, bool) {
	if name == lang.PresetMock {
		return Provider{Def: Def{Name: name}, Mock: true}, true
	}
	f, ok := clis[name]
	if !ok {
		return Provider{}, false
	}
	return Provider{Def: Def{Name: name, Command: f.argv}, CLI: f, Own: true}, true
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

// isWriteTool tells gemini's tools that change files or run commands.
func isWriteTool(name string) bool {
	switch name {
	case "write_file", "replace", "edit", "run_shell_command":
		return true
	}
	return false
}

// KeyVars returns the variables that hold the presets' keys and login
// tokens (ANTHROPIC_API_KEY, CLAUDE_CODE_OAUTH_TOKEN, CODEX_API_KEY, ...),
// sorted: values that must never be committed (CONTRACT 12.4), whether or
// not a workflow declares them. (Endpoints and config homes are masked but
// may well appear in code: they are not scanned for.)
func KeyVars() []string {
	var out []string
	for _, f := range clis {
		for _, v := range slices.Concat([]string{f.KeyVar, f.userKeyVar}, f.Credentials, f.secretVars) {
			if v != "" && slices.Contains(f.Vars, v) {
				out = appendUnique(out, v)
			}
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

// A codexProviderTable is what Smith reads of a [model_providers.NAME]
// table of codex's config.toml: where its key and headers come from.
type codexProviderTable struct {
	EnvKey string `toml:"env_key"`
	// EnvHTTPHeaders maps a header to the variable codex reads its value
	// from; HTTPHeaders are headers with their values in the file.
	EnvHTTPHeaders map[string]string `toml:"env_http_headers"`
	HTTPHeaders    map[string]string `toml:"http_headers"`
	BearerToken    string            `toml:"experimental_bearer_token"`
}

// codexProvider returns the model provider codex's config.toml (config,
// as the runner read it) selects with its top-level model_provider: its
// table, its name ("" when none: codex's built-in openai provider) and
// whether the file has a [model_providers.NAME] table for it. (codex 0.169
// refuses a profile key in config.toml, and Smith passes no --profile: the
// top-level key decides.)
//
// A config.toml Smith cannot read is broken: err says so, and the callers
// then decide nothing from it (no argument, no early failure), so that
// codex itself reports what is wrong with its file (configBroken).
func codexProvider(config []byte) (p codexProviderTable, name string, defined bool, err error) {
	var doc struct {
		ModelProvider  string                        `toml:"model_provider"`
		ModelProviders map[string]codexProviderTable `toml:"model_providers"`
	}
	if len(config) == 0 {
		return p, "", false, nil
	}
	if _, err := toml.Decode(string(config), &doc); err != nil {
		return p, "", false, err
	}
	p, defined = doc.ModelProviders[doc.ModelProvider]
	return p, doc.ModelProvider, defined, nil
}

// A ModelProvider is what the model provider chosen in a CLI's
// configuration file asks of the preset's processes (codex: a
// [model_providers.NAME] table of the user's).
type ModelProvider struct {
	// KeyVar is the variable it reads its key from (its env_key), "" when
	// none. It passes to the preset's processes, masked, like the preset's
	// own variables.
	KeyVar string
	// HeaderVars are the headers it takes from variables (its
	// env_http_headers), as {header, variable} pairs sorted by header.
	HeaderVars [][2]string
	// Secrets are the credentials its table holds as they are
	// (experimental_bearer_token, the values of http_headers), at least
	// MinMasked bytes long: masked like its key.
	Secrets []string
}

// Vars are the variables the model provider reads (KeyVar, then those of
// HeaderVars), each once: they pass to the preset's processes, masked.
func (m ModelProvider) Vars() []string {
	var out []string
	if m.KeyVar != "" {
		out = append(out, m.KeyVar)
	}
	for _, hv := range m.HeaderVars {
		if !slices.Contains(out, hv[1]) {
			out = append(out, hv[1])
		}
	}
	return out
}

// ModelProvider returns what the model provider chosen in the CLI's
// configuration file (config, as read) asks for; nothing for a CLI whose
// file chooses none, or a file Smith cannot read (ConfigError).
func (f *CLI) ModelProvider(config []byte) ModelProvider {
	var m ModelProvider
	if f.ConfigFile != "config.toml" {
		return m
	}
	p, _, _, err := codexProvider(config)
	if err != nil {
		return m
	}
	m.KeyVar = p.EnvKey
	for _, h := range slices.Sorted(maps.Keys(p.EnvHTTPHeaders)) {
		if v := p.EnvHTTPHeaders[h]; v != "" {
			m.HeaderVars = append(m.HeaderVars, [2]string{h, v})
		}
	}
	for _, v := range append([]string{p.BearerToken}, slices.Sorted(maps.Values(p.HTTPHeaders))...) {
		if len(v) >= MinMasked {
			m.Secrets = append(m.Secrets, v)
		}
	}
	return m
}

// LoginNeeded reports whether the CLI, with the configuration file config,
// can only work with a login or a key of its own (codex's built-in openai
// provider: it reads CODEX_API_KEY or its login in auth.json, and without
// either sends unauthenticated requests for 13-30 s before failing): a
// step then fails at once when there is neither.
func (f *CLI) LoginNeeded(config []byte) bool {
	if f.ConfigFile != "config.toml" {
		return false
	}
	_, name, _, err := codexProvider(config)
	if err != nil {
		return false // codex says what is wrong with the file, at once
	}
	return name == "" || name == "openai"
}

// AuthFix returns what the setup the CLI's words about its auth (said)
// name needs besides a login or a key, "" for nothing.
func (f *CLI) AuthFix(said string) string {
	for _, h := range f.authFix {
		if strings.Contains(said, h[0]) {
			return h[1]
		}
	}
	return ""
}

// ConfigError returns why the CLI's configuration file (config, as read)
// cannot be read, nil when it can or there is none (codex: config.toml that
// is not TOML).
func (f *CLI) ConfigError(config []byte) error {
	if f.ConfigFile != "config.toml" {
		return nil
	}
	_, _, _, err := codexProvider(config)
	return err
}

// ConfigBroken reports whether the CLI's words (said: its stderr, or what
// its login status command printed) say it could not load its
// configuration file: a failure to fix in that file, not a login or a key.
func (f *CLI) ConfigBroken(said string) bool {
	return f.configBroken != "" && strings.Contains(said, f.configBroken)
}

// UserKeyVar is the key variable the CLI reads in the user's own home.
func (f *CLI) UserKeyVar() string {
	if f.userKeyVar != "" {
		return f.userKeyVar
	}
	return f.KeyVar
}

// HasKey reports whether env gives the CLI a key or a login token of its
// own (one of its credential variables, or KeyVar) in a home of Smith's
// (home: isolated).
func (f *CLI) HasKey(env map[string]string) bool {
	return env[f.KeyVar] != "" || f.CredentialIn(env) != ""
}

// HasUserKey reports whether env gives the CLI a key or a login token it
// reads with the user's own configuration (UserKeyVar, or one of its
// credential variables): codex's built-in provider does not read
// OPENAI_API_KEY.
func (f *CLI) HasUserKey(env map[string]string) bool {
	return env[f.UserKeyVar()] != "" || f.CredentialIn(env) != ""
}

// UnreadKey is a note for a missing login when env sets KeyVar and the
// CLI, with the user's own configuration, does not read it (codex and
// OPENAI_API_KEY): how to make that key count. "" otherwise.
func (f *CLI) UnreadKey(env map[string]string) string {
	if f.userKeyVar == "" || f.userKeyVar == f.KeyVar || env[f.KeyVar] == "" {
		return ""
	}
	return fmt.Sprintf(" (%s is set, but %s's built-in model provider does not read it: 'printenv %s | %s' saves it as %s's login)",
		f.KeyVar, f.Program(), f.KeyVar, f.saveKey, f.Program())
}

// codexBuiltin reports codex's built-in model providers, whose settings a
// -c override cannot change.
func codexBuiltin(name string) bool {
	switch name {
	case "openai", "oss", "ollama", "lmstudio":
		return true
	}
	return false
}
