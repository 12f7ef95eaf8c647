package compiler

import (
	"path"
	"strings"

	"smith/isa"
	"smith/manifest"
	"smith/source"
)

// This file lowers agents and messages, the same in both formats
// (CONTRACT 12.1, 12.2).

// lowerAgents checks and converts the document's agents.
func (l *lowerer) lowerAgents(m map[string]*manifest.Agent) []isa.AgentDef {
	l.agents = dropNil(byOrder(m, func(a *manifest.Agent) int { return a.Order }))
	var out []isa.AgentDef
	for _, a := range l.agents {
		if a.Key == "" || a.Key == "." || a.Key == ".." || strings.ContainsAny(a.Key, "/\\\x00\n\r") {
			l.errorf(a.Pos, source.ESchema, "agent name '%s' is not a plain name: it names the folder agents/NAME, so it may hold no '/', '\\' or line break and may not be '.' or '..'", a.Key)
		}
		def := isa.AgentDef{Name: a.Key, Providers: l.checkProviders(a.Provider, nil), Inbox: "agents/" + a.Key + "/inbox",
			Instructions: a.Instructions.V, InstructionsFile: a.InstructionsFile.V, Session: l.lowerSession(a)}
		if a.Inbox.Set {
			def.Inbox = strings.TrimRight(a.Inbox.V, "/")
			if def.Inbox == "" || path.Clean(def.Inbox) == "." {
				l.errorf(a.Inbox.Pos, source.ESchema, "agent '%s' has no inbox (inbox: '%s'): name a folder, or leave inbox out for agents/%s/inbox", a.Key, a.Inbox.V, a.Key)
			}
			t := l.template(a.Inbox, &scope{agent: true})
			l.checkPath(&t, a.Inbox.Pos)
		}
		def.Processed = path.Join(path.Dir(def.Inbox), "processed")
		if a.InstructionsFile.Set {
			t := l.template(a.InstructionsFile, &scope{agent: true})
			l.checkPath(&t, a.InstructionsFile.Pos)
		}
		if a.Instructions.Set && a.InstructionsFile.Set {
			l.errorf(a.InstructionsFile.Pos, source.ESchema, "agent '%s' has both instructions and instructions_file: keep one", a.Key)
		}
		out = append(out, def)
	}
	l.checkInboxes(out)
	return out
}

// checkInboxes reports an agent's inbox that is another agent's inbox or
// processed folder, or its own processed folder (or lies in one): its
// messages would be taken for consumed ones, or consumed by the wrong
// agent.
func (l *lowerer) checkInboxes(defs []isa.AgentDef) {
	within := func(p, dir string) bool {
		for d := path.Clean(p); d != "." && d != "/"; d = path.Dir(d) {
			if d == path.Clean(dir) {
				return true
			}
		}
		return false
	}
	overlap := func(x, y string) bool { return within(x, y) || within(y, x) }
	for i, a := range defs {
		for j, b := range defs {
			what, folder := "", ""
			switch {
			case j < i && overlap(a.Inbox, b.Inbox):
				what, folder = "the inbox of agent '"+b.Name+"'", b.Inbox
			case i == j && overlap(a.Inbox, b.Processed):
				what, folder = "its own processed folder", b.Processed
			case i != j && overlap(a.Inbox, b.Processed):
				what, folder = "the processed folder of agent '"+b.Name+"'", b.Processed
			default:
				continue
			}
			pos := l.agents[i].Pos
			if l.agents[i].Inbox.Set {
				pos = l.agents[i].Inbox.Pos
			}
			l.errorf(pos, source.ESchema, "the inbox '%s' of agent '%s' overlaps %s ('%s'): give each agent a folder of its own", a.Inbox, a.Name, what, folder)
		}
	}
}

// agent returns the agent named name, or nil.
func (l *lowerer) agent(name string) *manifest.Agent {
	for _, a := range l.agents {
		if a.Key == name {
			return a
		}
	}
	return nil
}

// agentRef resolves an agent: (or send to:) reference, reporting an
// unknown one; nil when unset or unknown.
func (l *lowerer) agentRef(s manifest.String) *manifest.Agent {
	if !s.Set {
		return nil
	}
	a := l.agent(s.V)
	if a == nil {
		names := make([]string, len(l.agents))
		for i, a := range l.agents {
			names[i] = a.Key
		}
		hint := source.DidYouMean(s.V, names)
		if len(names) == 0 {
			hint = " (the document has no agents: key)"
		}
		l.errorf(s.Pos, source.EUnknownAgent, "agent '%s' is not defined%s", s.V, hint)
	}
	return a
}

// send converts a send: step kind.
func (l *lowerer) send(s *manifest.Send, sc *scope) *isa.Send {
	out := &isa.Send{To: s.To.V}
	if a := l.agentRef(s.To); a != nil && a.Inbox.Set && (strings.TrimRight(a.Inbox.V, "/") == "" || path.Clean(a.Inbox.V) == ".") {
		l.errorf(s.To.Pos, source.ESchema, "send to agent '%s', which has no inbox: give it one (inbox: FOLDER, default agents/%s/inbox)", s.To.V, s.To.V)
	}
	out.File = l.templatePtr(s.File, sc)
	l.checkPath(out.File, s.File.Pos)
	out.Content = l.templatePtr(s.Content, sc)
	out.Name = l.templatePtr(s.Name, sc)
	if s.Name.Set && (s.Name.V == "" || strings.ContainsAny(s.Name.V, "/\\\n\r\x00") || s.Name.V == "." || s.Name.V == "..") {
		l.errorf(s.Name.Pos, source.ESchema, "send.name must be a plain file name (no '/', '\\' or line break), got '%s'",
			strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(s.Name.V))
	}
	return out
}

// checkConsume checks that a wait_for with consume: true belongs to a step
// with an agent and that its glob lies inside that agent's inbox (the
// messages it consumes move to the agent's processed folder).
func (l *lowerer) checkConsume(w *manifest.WaitFor, agent *manifest.Agent) {
	if w == nil || !w.Consume.V {
		return
	}
	if agent == nil {
		l.errorf(w.Consume.Pos, source.ESchema, "wait_for.consume needs the step's agent: (whose inbox the messages come from)")
		return
	}
	inbox := "agents/" + agent.Key + "/inbox"
	if agent.Inbox.Set {
		inbox = strings.TrimRight(agent.Inbox.V, "/")
	}
	g := w.Glob.V
	for _, prefix := range []string{"${agent.inbox}/", inbox + "/"} {
		if rest, ok := strings.CutPrefix(g, prefix); ok && rest != "" && !strings.Contains(rest, "/") && rest != ".." {
			return
		}
	}
	l.errorf(w.Glob.Pos, source.ESchema, "wait_for.consume takes messages from agent '%s''s inbox: the glob must be '${agent.inbox}/PATTERN' or '%s/PATTERN', got '%s'",
		agent.Key, inbox, g)
}
