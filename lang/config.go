package lang

import "time"

// SignalPattern is the form of every signal: a document's transition keys
// (the JSON Schema pattern), a signal the compiler accepts and a signal
// line a worker reads from a reply.
const SignalPattern = `^SIGNAL:[A-Z0-9_]+$`

// IsSignal reports whether s matches SignalPattern, without a regexp (the
// compiler checks every transition of a document with it);
// TestIsSignalMatchesPattern checks that both agree.
func IsSignal(s string) bool {
	const prefix = "SIGNAL:"
	if len(s) <= len(prefix) || s[:len(prefix)] != prefix {
		return false
	}
	for i := len(prefix); i < len(s); i++ {
		if c := s[i]; !('A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// DefaultTimeout is a step's timeout when it names none (CONTRACT 3.5).
const DefaultTimeout = 300 * time.Second

// The isolation modes (config.isolation): none, or a git worktree and
// branch of the run's own (and of each thread of a parallel step).
const (
	IsolationNone     = "none"
	IsolationWorktree = "git-worktree"
)

// IsolationModes are the values isolation: accepts.
var IsolationModes = []string{IsolationNone, IsolationWorktree}

// Values of a provider entry's home: (CONTRACT 5): the user's own
// configuration (the default) or a fresh config home under RUN_ROOT.
const (
	HomeUser     = "user"
	HomeIsolated = "isolated"
)

// HomeModes are the values home: accepts.
var HomeModes = []string{HomeUser, HomeIsolated}

// Values of an agent's session: (CONTRACT 12.1): every provider call a new
// conversation (the default), or each call continuing the agent's previous
// conversation with its CLI.
const (
	SessionFresh    = "fresh"
	SessionContinue = "continue"
)

// SessionModes are the values session: accepts.
var SessionModes = []string{SessionFresh, SessionContinue}

// The keys of the config commands the internal workers run.
const (
	ConfigTestCommand  = "test_command"
	ConfigLintCommand  = "lint_command"
	ConfigBuildCommand = "build_command"
)

// Command returns the config command of key (ConfigTestCommand, ...), nil
// when it is not set or key names none.
func (c Config) Command(key string) []string {
	switch key {
	case ConfigTestCommand:
		return c.TestCommand
	case ConfigLintCommand:
		return c.LintCommand
	case ConfigBuildCommand:
		return c.BuildCommand
	}
	return nil
}

// Config holds a workflow's project commands and isolation mode: compiled
// into the program, handed to the internal workers as it is.
type Config struct {
	TestCommand  []string `json:"test_command,omitempty"`
	LintCommand  []string `json:"lint_command,omitempty"`
	BuildCommand []string `json:"build_command,omitempty"`
	Isolation    string   `json:"isolation,omitempty"`
	// CommitArtifacts puts artifacts/ into a run's step commits, which
	// otherwise leave it out (CONTRACT 12.4).
	CommitArtifacts bool `json:"commit_artifacts,omitempty"`
}
