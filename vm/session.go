package vm

import (
	"fmt"

	"smith/isa"
	"smith/workers/step"
)

// This file keeps agents' sessions (session: continue, CONTRACT 12.1) in
// the run's state: one per agent, and one per agent and thread inside a
// parallel step, so two threads never share a conversation. The session
// a call answered in is saved with the step's result (one delta), so a
// crash at any instant resumes with the last session that a completed
// step recorded.

// session returns agent's session as the run's state holds it for this
// machine's thread, nil when the agent has none yet.
func (m *Machine) session(agent string) *step.Session {
	s, ok := m.st.Sessions[step.SessionKey(agent, m.threadKey())]
	if !ok {
		return nil
	}
	return &s
}

// keepSession records the session the step's call of blk's agent answered
// in, and logs a session that started (the agent's first, or a new one on
// the provider a fallback handed over to).
func (m *Machine) keepSession(blk *isa.Block, s step.Session) {
	key := step.SessionKey(blk.Agent, m.threadKey())
	old, had := m.st.Sessions[key]
	if had && old == s {
		return
	}
	if m.st.Sessions == nil {
		m.st.Sessions = map[string]step.Session{}
	}
	m.st.Sessions[key] = s
	if m.d.Sessions == nil {
		m.d.Sessions = map[string]step.Session{}
	}
	m.d.Sessions[key] = s
	if had && old.ID == s.ID {
		return
	}
	var prev *step.Session
	if had {
		prev = &old
	}
	m.emit(evSessionStarted(blk.ID, blk.Agent, s, prev)) // saved with the step's result
}

// evSessionStarted: agent's step started session s (session: continue),
// its first or, when prev is set, a new one (a fallback's provider).
func evSessionStarted(stepID, agent string, s step.Session, prev *step.Session) Event {
	msg := fmt.Sprintf("agent '%s' started session %s on '%s'", agent, s.ID, s.Provider)
	if prev != nil {
		msg += fmt.Sprintf("; its session %s on '%s' did not answer, so the agent's later calls continue on '%s'", prev.ID, prev.Provider, s.Provider)
	}
	return Event{Kind: EvSession, Level: LevelInfo, Step: stepID, Agent: agent, Provider: s.Provider, Msg: msg}
}
