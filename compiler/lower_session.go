package compiler

import (
	"smith/lang"
	"smith/manifest"
	"smith/source"
)

// This file checks agents' session: key (CONTRACT 12.1): continue needs a
// provider Smith knows how to continue headless.

// lowerSession checks agent a's session: value and returns it for the
// program ("" = fresh).
func (l *lowerer) lowerSession(a *manifest.Agent) string {
	if !a.Session.Set {
		return ""
	}
	if a.Session.V == lang.SessionContinue {
		for _, p := range a.Provider.V {
			l.checkContinues(p.V, p.Pos, a.Key)
		}
		return lang.SessionContinue
	}
	return "" // fresh; another value is a schema error already
}

// checkContinues reports provider name, used by agent with session:
// continue, when Smith cannot continue its conversations: a workflow's own
// command (or a preset whose command the workflow replaced) has no resume
// form; the presets (claude, gemini, codex and the mock) all have one.
func (l *lowerer) checkContinues(name string, pos source.Pos, agent string) {
	for _, p := range l.providers {
		if p.Key != name {
			continue
		}
		if len(p.Command.V) > 0 {
			what := "a provider of the workflow's own"
			if contains(lang.ProviderPresets[:], name) {
				what = "the preset with its command replaced by the workflow"
			}
			l.errorf(pos, source.ESchema, "agent '%s' has session: continue, but provider '%s' (%s) cannot continue a session headless: Smith knows how to resume claude, gemini, codex and mock only; use one of them, or session: fresh",
				agent, name, what)
		}
		return
	}
}

// checkStepContinues checks the providers a provider step of an agent
// with session: continue names itself (its own provider: over the
// agent's).
func (l *lowerer) checkStepContinues(agent *manifest.Agent, providers manifest.StringOrList) {
	if agent == nil || !providers.Set || agent.Session.V != lang.SessionContinue {
		return
	}
	for _, p := range providers.V {
		l.checkContinues(p.V, p.Pos, agent.Key)
	}
}
