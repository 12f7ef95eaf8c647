package vm

import (
	"fmt"

	"smith/source"
)

// maskValue returns a copy of the JSON-like value v (maps, lists, strings,
// numbers, ...) with every secret replaced by "***" in its strings and map
// keys: every value that enters the run (the context, --context, set_context,
// a json or lines capture, loop items) passes through it, so state.json, the
// journal, iterations/*.jsonl and --json never hold a secret (CONTRACT 4).
func (m *Machine) maskValue(v any) any {
	switch x := v.(type) {
	case string:
		return m.mask.String(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[m.mask.String(k)] = m.maskValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = m.maskValue(e)
		}
		return out
	case []string:
		out := make([]string, len(x))
		for i, e := range x {
			out[i] = m.mask.String(e)
		}
		return out
	}
	return v
}

// maskStrings returns ss with every secret replaced (nil stays nil).
func (m *Machine) maskStrings(ss []string) []string {
	if ss == nil {
		return nil
	}
	return m.maskValue(ss).([]string)
}

// tooDeep reports whether the JSON-like value v nests deeper than
// source.MaxDepth levels of maps and lists.
func tooDeep(v any) bool { return depthOver(v, source.MaxDepth) }

// depthOver reports whether v nests deeper than limit levels.
func depthOver(v any, limit int) bool {
	switch x := v.(type) {
	case map[string]any:
		if limit <= 0 {
			return true
		}
		for _, e := range x {
			if depthOver(e, limit-1) {
				return true
			}
		}
	case []any:
		if limit <= 0 {
			return true
		}
		for _, e := range x {
			if depthOver(e, limit-1) {
				return true
			}
		}
	}
	return false
}

// errTooDeep is the E_LIMIT error of a value named what that nests too
// deep to enter the run.
func errTooDeep(what string) error {
	return &source.Error{Code: source.ELimit, Msg: fmt.Sprintf("%s nests deeper than %d levels", what, source.MaxDepth)}
}
