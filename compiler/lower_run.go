package compiler

import (
	"strings"

	"smith/isa"
	"smith/lang"
	"smith/manifest"
	"smith/source"
)

// This file lowers what both formats share about how a worker runs
// (CONTRACT 5): the run-wide secrets, env_allow and env, the defaults
// (model, permissions, timeout, retry) and the providers' own env and
// secrets.

// runWide sets the program's secrets, env_allow and env, and what
// ${env.NAME} may read.
func (l *lowerer) runWide(data *isa.Program, secrets, envAllow manifest.StringList, env manifest.StringMap) {
	data.Secrets, data.EnvAllow = rawStrings(secrets), rawStrings(envAllow)
	l.secrets = data.Secrets
	l.envAllowed = append(append([]string(nil), data.EnvAllow...), data.Secrets...)
	data.Env = l.env(env, &scope{})
}

// env converts an env: map, checking every value as a template in sc.
func (l *lowerer) env(m manifest.StringMap, sc *scope) []isa.EnvVar {
	var out []isa.EnvVar
	for _, kv := range m.V {
		out = append(out, isa.EnvVar{Name: kv.Key, Val: l.template(kv.Val, sc)})
	}
	return out
}

// declaredSecrets checks that every name of sl is one of the document's
// secrets; what says whose list it is ("step", "provider 'claude'").
func (l *lowerer) declaredSecrets(sl manifest.StringList, what string) []string {
	var out []string
	for _, sec := range sl.V {
		out = append(out, sec.V)
		if !contains(l.secrets, sec.V) {
			l.errorf(sec.Pos, source.EEnvNotAllowed, "%s secret '%s' is not declared in the top-level secrets%s",
				what, sec.V, source.DidYouMean(sec.V, l.secrets))
		}
	}
	return out
}

// An execLayer is one place that may set how a worker runs: a step or an
// AI worker, an agent, the document's defaults. The first layer that sets
// a key wins.
type execLayer struct {
	model, permissions manifest.String
	timeout            manifest.Number
	retry              *manifest.Retry
	object             string // the type of manifest whose timeout it is (its limit)
}

// modelOf is the model a step or worker asks for: model:, else
// provider_params.model (the same key, CONTRACT 5).
func modelOf(model manifest.String, params manifest.Free) manifest.String {
	if model.Set {
		return model
	}
	if v := params.V.Get("model"); v != nil && v.Kind == manifest.KString {
		return manifest.String{V: v.Str, Pos: v.Pos, Set: true}
	}
	return model
}

// defaultsLayer is the layer of a document's defaults: (nil = none).
func defaultsLayer(d *manifest.Defaults) execLayer {
	if d == nil {
		return execLayer{}
	}
	return execLayer{model: d.Model, permissions: d.Permissions, timeout: d.Timeout, retry: d.Retry, object: "Defaults"}
}

// applyLayers fills st's model, permissions, timeout and retry from the
// first layer that sets each.
func (l *lowerer) applyLayers(st *isa.Step, sc *scope, layers ...execLayer) {
	var model, perm manifest.String
	var timeout manifest.Number
	var timeoutOf string
	var retry *manifest.Retry
	for _, ly := range layers {
		if !model.Set && ly.model.Set {
			model = ly.model
		}
		if !perm.Set && ly.permissions.Set {
			perm = ly.permissions
		}
		if !timeout.Set && ly.timeout.Set {
			timeout, timeoutOf = ly.timeout, ly.object
		}
		if retry == nil && ly.retry != nil {
			retry = ly.retry
		}
	}
	if model.Set && strings.TrimSpace(model.V) != "" {
		st.Model = l.templatePtr(model, sc)
	}
	st.Permissions = perm.V
	if timeout.Set {
		st.Timeout = l.limited(timeout, "timeout", timeoutOf, "timeout")
	}
	l.retry(retry, st)
}

// checkDefaults checks the ranges of a document's defaults where they are
// written, whether or not a step or block takes them (one that does checks
// them again, with the same diagnostic, which Sort keeps once).
func (l *lowerer) checkDefaults(d *manifest.Defaults) {
	if d == nil {
		return
	}
	if d.Timeout.Set {
		l.limited(d.Timeout, "timeout", "Defaults", "timeout")
	}
	l.retry(d.Retry, &isa.Step{})
}

// retry converts a retry: object into st.
func (l *lowerer) retry(r *manifest.Retry, st *isa.Step) {
	if r == nil {
		return
	}
	if r.Attempts.Set {
		st.Attempts = l.limitedInt(r.Attempts, "retry.attempts", "Retry", "attempts")
	}
	if r.BackoffSec.Set {
		st.BackoffSec, st.HasBackoff = l.limited(r.BackoffSec, "retry.backoff_sec", "Retry", "backoff_sec"), true
	}
}

// providerRun converts a provider entry's env and secrets, and reports an
// entry that is no preset and has no command to run.
func (l *lowerer) providerRun(p *manifest.Provider, def *isa.ProviderDef) {
	def.Env = l.env(p.Env, &scope{})
	def.Secrets = l.declaredSecrets(p.Secrets, "provider '"+p.Key+"'")
	def.Isolated = p.Home.V == lang.HomeIsolated
	if p.Home.Set && p.Home.V == lang.HomeIsolated && (p.Key == lang.PresetMock || !contains(lang.ProviderPresets[:], p.Key)) {
		l.errorf(p.Home.Pos, source.ESchema, "home: isolated applies to the claude, gemini and codex presets, not to provider '%s'; remove it", p.Key)
	}
	if !p.Command.Set && !contains(lang.ProviderPresets[:], p.Key) {
		l.errorf(p.Pos, source.ESchema, "provider '%s' is not a built-in preset (%s), so it needs a command",
			p.Key, strings.Join(lang.ProviderPresets[:], ", "))
	}
}
