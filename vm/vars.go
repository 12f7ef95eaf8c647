package vm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"smith/isa"
	"smith/lang"
	"smith/source"
)

// A scope is where a template is substituted: the block whose step it
// belongs to (for ${agent.*} and allow_missing_vars), and whether
// references with a root that is no namespace of the machine pass through
// untouched (provider templates: ${PROMPT}, ${model}, ...).
type scope struct {
	b           *isa.Block // nil outside a block (the program's context)
	passUnknown bool
}

// blockScope is the scope of block b's step.
func blockScope(b *isa.Block) scope { return scope{b: b} }

// timestampLayout is the form of ${run.timestamp_utc}.
const timestampLayout = "20060102T150405Z"

// subst substitutes every reference of t and returns the string.
func (m *Machine) subst(sc scope, t lang.Template) (string, error) {
	if len(t.Parts) == 1 && t.Parts[0].Ref == nil {
		return t.Parts[0].Lit, nil
	}
	var b strings.Builder
	for _, p := range t.Parts {
		if p.Ref == nil {
			b.WriteString(p.Lit)
			continue
		}
		v, err := m.resolve(sc, p.Ref)
		if err != nil {
			return "", err
		}
		b.WriteString(render(v))
	}
	return b.String(), nil
}

// substAll substitutes every template of ts.
func (m *Machine) substAll(sc scope, ts []lang.Template) ([]string, error) {
	if ts == nil {
		return nil, nil
	}
	return m.substInto(make([]string, 0, len(ts)), sc, ts)
}

// substInto appends the substitution of every template of ts to dst.
func (m *Machine) substInto(dst []string, sc scope, ts []lang.Template) ([]string, error) {
	for _, t := range ts {
		s, err := m.subst(sc, t)
		if err != nil {
			return nil, err
		}
		dst = append(dst, s)
	}
	return dst, nil
}

// substOpt substitutes t, or returns "" when t is nil.
func (m *Machine) substOpt(sc scope, t *lang.Template) (string, error) {
	if t == nil {
		return "", nil
	}
	return m.subst(sc, *t)
}

// typed substitutes t: a template that is one whole reference gives the
// referenced value itself (a list stays a list), anything else a string.
func (m *Machine) typed(sc scope, t lang.Template) (any, error) {
	if r := t.Whole(); r != nil {
		return m.resolve(sc, r)
	}
	return m.subst(sc, t)
}

// tvalue evaluates a document value, substituting its strings (typed).
func (m *Machine) tvalue(sc scope, v isa.TValue) (any, error) {
	switch v.Kind {
	case isa.TNull:
		return nil, nil
	case isa.TBool:
		return v.Bool, nil
	case isa.TNumber:
		f, err := strconv.ParseFloat(v.Num, 64)
		if err != nil {
			return nil, fmt.Errorf("internal error: number %q: %w", v.Num, err)
		}
		return f, nil
	case isa.TString:
		return m.typed(sc, v.Str)
	case isa.TList:
		out := make([]any, len(v.List))
		for i, e := range v.List {
			x, err := m.tvalue(sc, e)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case isa.TMap:
		out := make(map[string]any, len(v.Map))
		for _, f := range v.Map {
			x, err := m.tvalue(sc, f.Val)
			if err != nil {
				return nil, err
			}
			out[f.Key] = x
		}
		return out, nil
	}
	return nil, fmt.Errorf("internal error: value kind %d", v.Kind)
}

// render prints a substituted value inside a longer string: strings as
// they are, anything else as JSON.
func render(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case int:
		return strconv.Itoa(x)
	case bool:
		return strconv.FormatBool(x)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// resolve returns the value of reference r, "" for a missing reference
// that the step lists in allow_missing_vars, or an E_VAR_MISSING or
// E_ENV_NOT_ALLOWED error.
func (m *Machine) resolve(sc scope, r *lang.Ref) (any, error) {
	v, ok, err := m.lookup(sc, r)
	switch {
	case err != nil:
		return nil, err
	case ok:
		if m.cfg.Debug {
			m.debugf(sc.b, "${%s} = %s", r.Raw, debugValue(v))
		}
		return v, nil
	case sc.b != nil && sc.b.Step != nil && slices.Contains(sc.b.Step.AllowMissing, r.Raw):
		return "", nil
	}
	return nil, &source.Error{Code: source.EVarMissing, Msg: fmt.Sprintf("reference '${%s}' cannot be resolved%s", r.Raw, contextHint(r, m.p.Format == "workflow"))}
}

// contextHint tells how to give a missing ${context.KEY} a value (yaml: a
// YAML workflow, which has a context: section): "" for other references.
func contextHint(r *lang.Ref, yaml bool) string {
	if len(r.Path) < 2 || r.Path[0].Key != "context" || r.Path[1].IsIndex {
		return ""
	}
	key := r.Path[1].Key
	for _, p := range r.Path[2:] {
		if p.IsIndex {
			break
		}
		key += "." + p.Key
	}
	if !yaml {
		return fmt.Sprintf(": the context has no '%s'; pass --context %s=VALUE", key, key)
	}
	return fmt.Sprintf(": the context has no '%s'; pass --context %s=VALUE or add it under the workflow's context:", key, key)
}

// lookup finds the value of r by its root namespace. ok is false when it
// does not exist.
func (m *Machine) lookup(sc scope, r *lang.Ref) (v any, ok bool, err error) {
	if len(r.Path) == 0 {
		return nil, false, nil
	}
	root, rest := r.Path[0].Key, r.Path[1:]
	if f := m.loopFrameFor(root); f != nil {
		if f.Index >= len(f.Items) {
			return nil, false, nil
		}
		v, ok := navigate(f.Items[f.Index], rest)
		return v, ok, nil
	}
	switch root {
	case "loop":
		return m.loopVar(rest)
	case "steps":
		return m.stepVar(rest)
	case "context":
		v, ok := navigate(m.st.Context, rest)
		return v, ok, nil
	case "env":
		return m.envVar(r, rest)
	case "run":
		return m.runVar(rest)
	case "agent":
		return m.agentVar(sc, rest)
	}
	if sc.passUnknown {
		return "${" + r.Raw + "}", true, nil
	}
	return nil, false, nil
}

// loopFrameFor returns the innermost loop frame whose variable is name
// (item, or the loop's as name), or nil.
func (m *Machine) loopFrameFor(name string) *LoopFrame {
	for i := len(m.st.LoopStack) - 1; i >= 0; i-- {
		f := &m.st.LoopStack[i]
		if name == "item" {
			return f
		}
		if b := m.block(f.Loop); b != nil && b.Loop != nil && b.Loop.As == name {
			return f
		}
	}
	return nil
}

// loopVar resolves ${loop.index} and ${loop.total} in the innermost loop.
func (m *Machine) loopVar(rest []lang.PathElem) (any, bool, error) {
	n := len(m.st.LoopStack)
	if n == 0 || len(rest) != 1 {
		return nil, false, nil
	}
	f := m.st.LoopStack[n-1]
	switch rest[0].Key {
	case "index":
		return f.Index, true, nil
	case "total":
		return f.Total, true, nil
	}
	return nil, false, nil
}

// stepVar resolves ${steps.NAME.FIELD...}.
func (m *Machine) stepVar(rest []lang.PathElem) (any, bool, error) {
	if len(rest) < 2 || rest[0].IsIndex || rest[1].IsIndex {
		return nil, false, nil
	}
	res := m.st.Steps[rest[0].Key]
	if res == nil {
		return nil, false, nil
	}
	resolve, ok := stepFieldResolvers[rest[1].Key]
	if !ok {
		return nil, false, nil
	}
	if rest[1].Key == "lines" {
		if err := m.linesKept(rest[0].Key, res, rest[2:]); err != nil {
			return nil, false, err
		}
	}
	v, ok := navigate(resolve(m, rest[0].Key, res), rest[2:])
	return v, ok, nil
}

// linesKept refuses ${steps.NAME.lines...} (path: what follows lines) when
// the lines it reads were not kept, instead of giving a partial list: the
// whole list, or an index past the kept lines, of a step whose stdout passed
// the 1 MiB a lines capture splits; any of the lines of a step without a
// lines capture whose output the state holds only an excerpt of.
func (m *Machine) linesKept(name string, res *StepResult, path []lang.PathElem) error {
	switch {
	case res.LinesTruncated:
		kept := len(m.capture(name, res).Lines)
		if len(path) > 0 && path[0].IsIndex && path[0].Index < kept {
			return nil
		}
		what := "every line"
		if len(path) > 0 && path[0].IsIndex {
			what = fmt.Sprintf("line %d", path[0].Index)
		}
		where := ""
		if res.SpillStdoutPath != "" {
			where = fmt.Sprintf(" (the whole stdout is in %s)", res.SpillStdoutPath)
		}
		return &source.Error{Code: source.ELinesCut, Msg: fmt.Sprintf("'${steps.%s.lines}' needs %s of step '%s', which printed more than the 1 MiB a lines capture keeps: its lines are the %d complete lines of the first 1 MiB%s; have '%s' print less (fewer, or batched, lines), or process its output in one command step", name, what, name, kept, where, name)}
	case res.Truncated && res.Lines == nil && m.capture(name, res).Lines == nil:
		// (A capture file may be there for a long stderr alone.)
		return &source.Error{Code: source.ELinesCut, Msg: fmt.Sprintf("'${steps.%s.lines}' reads the lines of step '%s', whose output the state keeps only the first 8 KiB of: add output_capture: lines to '%s' (up to 1 MiB of lines)", name, name, name)}
	}
	return nil
}

// stepFieldResolvers resolve ${steps.NAME.FIELD}, one per field of
// lang.StepFields (TestStepFieldTable keeps them equal).
var stepFieldResolvers = map[string]func(m *Machine, name string, res *StepResult) any{
	"exit_code": func(_ *Machine, _ string, res *StepResult) any { return res.ExitCode },
	"output":    func(_ *Machine, _ string, res *StepResult) any { return res.Output },
	"stderr": func(m *Machine, name string, res *StepResult) any {
		// state.json holds an excerpt of a long stderr; the capture file
		// the first 1 MiB (CONTRACT 12.5).
		if res.CapturePath != "" {
			if e := m.capture(name, res).Stderr; e != "" {
				return e
			}
		}
		return res.Stderr
	},
	"lines": func(m *Machine, name string, res *StepResult) any {
		lines := m.capture(name, res).Lines
		if lines == nil && res.Output != "" {
			// Any step's output can be read as lines; output_capture: lines
			// only decides what state.json keeps.
			lines = strings.Split(res.Output, "\n")
		}
		l := make([]any, len(lines))
		for i, s := range lines {
			l[i] = s
		}
		return l
	},
	"json":             func(m *Machine, name string, res *StepResult) any { return m.capture(name, res).JSON },
	"duration":         func(_ *Machine, _ string, res *StepResult) any { return res.Duration },
	"status":           func(_ *Machine, _ string, res *StepResult) any { return res.Status },
	"signal":           func(_ *Machine, _ string, res *StepResult) any { return res.Signal },
	"attempts":         func(_ *Machine, _ string, res *StepResult) any { return res.Attempts },
	"started_at":       func(_ *Machine, _ string, res *StepResult) any { return res.StartedAt },
	"ended_at":         func(_ *Machine, _ string, res *StepResult) any { return res.EndedAt },
	"validation_error": func(_ *Machine, _ string, res *StepResult) any { return validationError(res) },
	"iterations":       func(_ *Machine, _ string, res *StepResult) any { return plainJSON(res.Iterations) },
	// output_file is this run's copy of the step's output file (a run keeps
	// its own outputs: CONTRACT 6), "" when the step has none.
	"output_file": func(_ *Machine, _ string, res *StepResult) any { return res.OutputFile },
}

// plainJSON returns x as the generic JSON value (maps, lists, float64) it
// encodes to.
func plainJSON(x any) any {
	b, err := json.Marshal(x)
	if err != nil {
		return nil
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return nil
	}
	return v
}

// envVar resolves ${env.NAME}: only names in env_allow or secrets.
func (m *Machine) envVar(r *lang.Ref, rest []lang.PathElem) (any, bool, error) {
	if len(rest) != 1 || rest[0].IsIndex {
		return nil, false, nil
	}
	name := rest[0].Key
	if !slices.Contains(m.p.EnvAllow, name) && !slices.Contains(m.p.Secrets, name) {
		return nil, false, &source.Error{Code: source.EEnvNotAllowed, Msg: fmt.Sprintf("'${%s}': '%s' is neither in env_allow nor in secrets", r.Raw, name)}
	}
	v, ok := m.env(name)
	return v, ok, nil
}

// runVar resolves ${run.id} and ${run.timestamp_utc}.
func (m *Machine) runVar(rest []lang.PathElem) (any, bool, error) {
	if len(rest) != 1 {
		return nil, false, nil
	}
	switch rest[0].Key {
	case "id":
		return m.st.RunID, true, nil
	case "timestamp_utc":
		t, err := time.Parse(time.RFC3339, m.st.StartedAt)
		if err != nil {
			return nil, false, nil
		}
		return t.UTC().Format(timestampLayout), true, nil
	}
	return nil, false, nil
}

// agentVar resolves ${agent.name} and ${agent.inbox} for a step with an
// agent.
func (m *Machine) agentVar(sc scope, rest []lang.PathElem) (any, bool, error) {
	if len(rest) != 1 || sc.b == nil || sc.b.Agent == "" {
		return nil, false, nil
	}
	a := m.agent(sc.b.Agent)
	switch rest[0].Key {
	case "name":
		return a.Name, true, nil
	case "inbox":
		return a.Inbox, true, nil
	case "processed":
		return a.Processed, true, nil
	}
	return nil, false, nil
}

// agent returns the program's definition of agent name, with the default
// inbox filled in.
func (m *Machine) agent(name string) isa.AgentDef {
	a := isa.AgentDef{Name: name}
	for _, d := range m.p.Agents {
		if d.Name == name {
			a = d
			break
		}
	}
	if a.Inbox == "" {
		a.Inbox = "agents/" + name + "/inbox"
	}
	if a.Processed == "" {
		a.Processed = path.Join(path.Dir(a.Inbox), "processed")
	}
	return a
}

// navigate follows keys and indexes into v.
func navigate(v any, path []lang.PathElem) (any, bool) {
	for _, e := range path {
		switch x := v.(type) {
		case map[string]any:
			if e.IsIndex {
				return nil, false
			}
			var ok bool
			if v, ok = x[e.Key]; !ok {
				return nil, false
			}
		case []any:
			if !e.IsIndex || e.Index < 0 || e.Index >= len(x) {
				return nil, false
			}
			v = x[e.Index]
		case []string:
			if !e.IsIndex || e.Index < 0 || e.Index >= len(x) {
				return nil, false
			}
			v = x[e.Index]
		default:
			return nil, false
		}
	}
	return v, true
}
