package step

// A Session is an agent's conversation with one provider's CLI (CONTRACT
// 12.1, session: continue): the provider that holds it, the CLI's own id
// for it, and how many calls it has had. The run's state keeps one per
// agent (and per thread of a parallel step), so that resume continues it.
type Session struct {
	Provider string `json:"provider"`
	ID       string `json:"id"`
	// Turns counts the provider calls the session has answered.
	Turns int `json:"turns"`
	// Usage is the session's token count as the CLI last reported it,
	// for a CLI that reports a resumed session's running total (codex):
	// a call's own tokens are what it adds. 0 for the others.
	Usage int `json:"usage,omitempty"`
}

// SessionKey is the key of an agent's session in the run's state: the
// agent's name, and in a thread of a parallel step its iteration index or
// branch name ("engineer[2]"), so two threads never share a conversation.
func SessionKey(agent, thread string) string {
	if thread == "" {
		return agent
	}
	return agent + "[" + thread + "]"
}
