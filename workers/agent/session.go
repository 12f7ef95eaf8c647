package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"smith/source"
	"smith/workers/provider"
	"smith/workers/step"
)

// This file continues agents' sessions (session: continue, CONTRACT
// 12.1): the agent's first provider call starts a session, every later
// one continues it with the provider that holds it; a provider list
// answered by another provider starts a new session there, which the
// agent's later calls continue.

// sessionOrder puts the provider that holds the agent's session first,
// so that a later call continues with the provider that answered last.
func sessionOrder(req *step.Request, provs []provider.Provider) []provider.Provider {
	if !req.Continue || req.Session == nil {
		return provs
	}
	for i, pv := range provs {
		if pv.Name == req.Session.Provider && i > 0 {
			out := append([]provider.Provider{pv}, provs[:i]...)
			return append(out, provs[i+1:]...)
		}
	}
	return provs
}

// sessionOn returns the session a call of provider name continues: the
// agent's, when name holds it; nil to start a new one (or for an agent
// that does not continue its sessions).
func sessionOn(req *step.Request, name string) *step.Session {
	if !req.Continue || req.Session == nil || req.Session.Provider != name || req.Session.ID == "" {
		return nil
	}
	return req.Session
}

// cannotContinue is the error of a call that should continue a session
// on a provider Smith does not know how to continue (a workflow's own
// command, a preset whose command was replaced, a command_override); nil
// when it can.
func cannotContinue(req *step.Request, pv provider.Provider) *source.Error {
	if !req.Continue {
		return nil
	}
	why := ""
	switch {
	case len(req.CommandOverride) > 0 && !pv.Mock:
		why = "the step's command_override replaces the preset's command, which has the resume form"
	case !pv.CanContinue():
		why = "it runs a command of the workflow's own, and Smith knows how to resume claude, gemini, codex and mock only"
	default:
		return nil
	}
	return source.Errorf(source.EExec, "provider '%s' cannot continue the session of agent '%s' (session: continue): %s", pv.Name, req.Agent, why)
}

// mockSessionID is the id of a session the mock starts: the same for the
// same run, agent (and thread) and call, so a call repeated after a crash
// starts the same one.
func mockSessionID(req *step.Request) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%s\x00%d", req.RunID, step.SessionKey(req.Agent, req.Thread), req.Step, req.Execution)))
	return "mock-" + hex.EncodeToString(sum[:8])
}

// sessionAfter is the agent's session after a call of provider name that
// continued sess (nil: started one) and answered in session id: the same
// session one turn further, or a new one at turn 1. usage is the CLI's
// running token total of the session (codex), 0 otherwise.
func sessionAfter(name string, sess *step.Session, id string, usage int) *step.Session {
	out := &step.Session{Provider: name, ID: id, Turns: 1, Usage: usage}
	if sess != nil && sess.ID == id {
		out.Turns = sess.Turns + 1
	}
	return out
}

// readSession keeps the session the reply came from (out.Session, from
// the CLI's stdout), and for a CLI that reports a resumed session's
// running token total (codex) turns out.Tokens into the call's own.
func readSession(rep *callReply, pv provider.Provider, sess *step.Session, out *provider.CLIReply) {
	rep.session = out.Session
	if pv.CLI == nil || !pv.CLI.UsageIsTotal() || !out.Parsed {
		return
	}
	rep.usage = out.Tokens
	if sess != nil && sess.ID == rep.session {
		out.Tokens = max(out.Tokens-sess.Usage, 0)
	}
}

// sessionIDOf is sess's id, "" for none.
func sessionIDOf(sess *step.Session) string {
	if sess == nil {
		return ""
	}
	return sess.ID
}
