package provider

import "slices"

// This file holds how each preset continues a session (CONTRACT 12.1,
// session: continue): the flags that keep the CLI from saving one (left
// out for an agent that continues), the arguments that resume one, and
// where the CLI's output names the session it answered in (its
// stdoutReader's session). The facts sit in the clis table (noSession,
// resume, usageTotal).

// claudeResume continues a claude session: claude -p --resume ID (the
// session keeps its id).
func claudeResume(id string) []string { return []string{"--resume", id} }

// geminiResume continues a gemini session: gemini --resume ID (0.61
// takes the session's UUID, headless as well).
func geminiResume(id string) []string { return []string{"--resume", id} }

// codexResume continues a codex thread: codex exec [flags] resume ID -
// (exec's flags go before the subcommand; the tail "-" reads stdin).
func codexResume(id string) []string { return []string{"resume", id} }

// CanContinue reports whether the provider can continue a session
// headless: a preset's own command (a workflow's replacement of it, or a
// provider of its own, has no resume form), or the mock.
func (p Provider) CanContinue() bool {
	if p.Mock {
		return true
	}
	return p.Own && p.CLI != nil && p.CLI.resume != nil
}

// UsageIsTotal reports whether the CLI's token usage of a resumed session
// is the session's running total (codex), not the call's own.
func (f *CLI) UsageIsTotal() bool { return f.usageTotal }

// sessionArgs returns argv (the preset's command and flags, before its
// tail) shaped for a call of a continued session: without the flags that
// keep the CLI from saving it, and, with an id, resuming that session.
func (f *CLI) sessionArgs(argv []string, c Call) []string {
	if !c.Continue {
		return argv
	}
	out := argv[:0:0]
	for _, a := range argv {
		if !slices.Contains(f.noSession, a) {
			out = append(out, a)
		}
	}
	if c.Session != "" && f.resume != nil {
		out = append(out, f.resume(c.Session)...)
	}
	return out
}
