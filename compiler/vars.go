package compiler

import (
	"fmt"

	"smith/lang"
	"smith/manifest"
	"smith/source"
)

// A scope is what a ${...} reference may name where it occurs
// (CONTRACT 3.1).
type scope struct {
	// loops are the as names of the enclosing loops, outermost first; a
	// non-empty list means the reference is inside a loop body.
	loops []string
	// agent is true in a step with an agent.
	agent bool
	// allow holds the Raw text of the step's allow_missing_vars.
	allow []string
	// keys are extra roots that are accepted as they are (provider template
	// keys in a command_override or argv_template).
	keys []string
	// list is the kind of step list the scope's steps are in; thread is
	// true inside a parallel iteration or branch, at any depth.
	list   listKind
	thread bool
}

// A listKind is where a step list is: the top level, a loop body or a
// branch of a parallel step.
type listKind uint8

const (
	listTop listKind = iota
	listLoop
	listBranch
)

// inner returns the scope of a loop body whose items are named as; thread
// says the iterations run as threads (for_each.parallel).
func (sc *scope) inner(as string, thread bool) *scope {
	loops := append(sc.loops[:len(sc.loops):len(sc.loops)], as)
	return &scope{loops: loops, list: listLoop, thread: sc.thread || thread}
}

// branch returns the scope of a branch of a parallel step.
func (sc *scope) branch() *scope {
	return &scope{loops: sc.loops, list: listBranch, thread: true}
}

// Roots of references.
const (
	rootSteps   = "steps"
	rootContext = "context"
	rootEnv     = "env"
	rootRun     = "run"
	rootAgent   = "agent"
	rootLoop    = "loop"
)

// roots returns the roots available in sc, for suggestions.
func (sc *scope) roots() []string {
	out := []string{rootSteps, rootContext, rootEnv, rootRun}
	if sc.agent {
		out = append(out, rootAgent)
	}
	if len(sc.loops) > 0 {
		out = append(out, rootLoop)
		out = append(out, sc.loops...)
	}
	return append(out, sc.keys...)
}

// orContextHint is a did-you-mean for an unknown context key, else how to
// give the key a value.
func (l *lowerer) orContextHint(name, didYouMean string) string {
	switch {
	case didYouMean != "":
		return didYouMean
	case l.yaml:
		return fmt.Sprintf(" (pass --context %s=VALUE or add it under context:)", name)
	}
	return fmt.Sprintf(" (pass --context %s=VALUE)", name)
}

// checkRef checks one reference statically: that the step, context key,
// environment variable, run/agent/loop field or loop variable it names
// exists where it occurs. References listed in allow_missing_vars are
// exempt.
func (l *lowerer) checkRef(r *lang.Ref, sc *scope) {
	if contains(sc.allow, r.Raw) {
		return
	}
	root := r.Root()
	if contains(sc.keys, root) {
		return
	}
	for i := len(sc.loops) - 1; i >= 0; i-- {
		if sc.loops[i] == root {
			return
		}
	}
	key := func(i int) (string, bool) { // the key at path element i
		if i >= len(r.Path) || r.Path[i].IsIndex {
			return "", false
		}
		return r.Path[i].Key, true
	}
	switch root {
	case rootSteps:
		name, ok := key(1)
		if !ok {
			l.errorf(r.Pos, source.EVarMissing, "reference '${%s}' names no step (expected ${steps.NAME.FIELD})", r.Raw)
			return
		}
		if !l.hasStep(name) {
			l.errorf(r.Pos, source.EVarMissing, "unknown step '%s' in '${%s}'%s", name, r.Raw, source.DidYouMean(name, l.steps))
			return
		}
		field, ok := key(2)
		if !ok {
			l.errorf(r.Pos, source.EVarMissing, "reference '${%s}' names no field of step '%s' (expected one of exit_code, output, lines, json, duration, status, iterations)", r.Raw, name)
			return
		}
		if !contains(lang.StepFields[:], field) {
			l.errorf(r.Pos, source.EVarMissing, "unknown step field '%s' in '${%s}'%s", field, r.Raw, source.DidYouMean(field, lang.StepFields[:]))
			return
		}
		if field == "json" && l.yaml && !l.jsonSteps[name] {
			l.errorf(r.Pos, source.EVarMissing, "'${%s}' reads the json of step '%s', which has no output_capture: json (add output_capture: json to '%s', or read ${steps.%s.output})", r.Raw, name, name, name)
			return
		}
		if len(r.Path) > 3 {
			switch {
			case field == "json" || field == "iterations":
			case field == "lines" && len(r.Path) == 4 && r.Path[3].IsIndex:
			default:
				l.errorf(r.Pos, source.EVarMissing, "step field '%s' in '${%s}' takes no path", field, r.Raw)
			}
		}
	case rootContext:
		name, ok := key(1)
		if !ok {
			if len(r.Path) > 1 {
				l.errorf(r.Pos, source.EVarMissing, "reference '${%s}' names no context key", r.Raw)
			}
			return
		}
		if !contains(l.contextKeys, name) && !contains(l.opt.ContextKeys, name) {
			known := append(l.contextKeys[:len(l.contextKeys):len(l.contextKeys)], l.opt.ContextKeys...)
			l.errorf(r.Pos, source.EVarMissing, "unknown context key '%s'%s", name, l.orContextHint(name, source.DidYouMean(name, known)))
		}
	case rootEnv:
		name, ok := key(1)
		if !ok || len(r.Path) > 2 {
			l.errorf(r.Pos, source.EVarMissing, "reference '${%s}' is not of the form ${env.NAME}", r.Raw)
			return
		}
		if !contains(l.envAllowed, name) {
			l.errorf(r.Pos, source.EEnvNotAllowed, "environment variable '%s' is neither in env_allow nor in secrets", name)
		}
	case rootRun:
		l.checkField(r, lang.RunFields[:], "run")
	case rootAgent:
		if !sc.agent {
			l.errorf(r.Pos, source.EVarMissing, "'${%s}' is only available in a step with an agent", r.Raw)
			return
		}
		l.checkField(r, lang.AgentFields[:], "agent")
	case rootLoop:
		if len(sc.loops) == 0 {
			l.errorf(r.Pos, source.EVarMissing, "'${%s}' is only available inside a for_each body", r.Raw)
			return
		}
		l.checkField(r, lang.LoopFields[:], "loop")
	default:
		hint := source.DidYouMean(root, sc.roots())
		if hint == "" {
			hint = fmt.Sprintf(": Smith substitutes ${...} itself; for a shell variable write $${%s} (Smith turns $$ into $), for the environment use ${env.%s} with %s in env_allow", r.Raw, root, root)
		}
		l.errorf(r.Pos, source.EVarMissing, "unknown variable '%s'%s", root, hint)
	}
}

// checkField checks a reference of the form ${root.FIELD} against fields.
func (l *lowerer) checkField(r *lang.Ref, fields []string, root string) {
	if len(r.Path) != 2 || r.Path[1].IsIndex {
		l.errorf(r.Pos, source.EVarMissing, "reference '${%s}' is not of the form ${%s.FIELD}", r.Raw, root)
		return
	}
	if f := r.Path[1].Key; !contains(fields, f) {
		l.errorf(r.Pos, source.EVarMissing, "unknown %s field '%s' in '${%s}'%s", root, f, r.Raw, source.DidYouMean(f, fields))
	}
}

// allowList parses a step's allow_missing_vars entries and returns their
// canonical Raw text.
func (l *lowerer) allowList(sl manifest.StringList) []string {
	if !sl.Set {
		return nil
	}
	var out []string
	for _, s := range sl.V {
		r, d := manifest.ParseRef(s.V, s.Pos)
		if d != nil {
			l.diags.Append(*d)
			continue
		}
		out = append(out, r.Raw)
	}
	return out
}
