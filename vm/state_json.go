package vm

import (
	"slices"
	"strconv"

	"smith/workers/step"
)

// AppendJSON appends s to b as the store writes state.json: the bytes of an
// encoding/json Encoder with HTML escaping off, without its newline. It is
// written by hand, as Delta.AppendJSON is, because encoding/json builds its
// encoders for State's many types by reflection on a process's first
// snapshot (a part of the start-up of every smithvm run) and walks them by
// reflection at every snapshot. Values of type any take the common types
// (what JSON decodes to) by hand and the others through encoding/json.
// TestStateAppendJSONMatchesReflection compares both on states with every
// field set: a field added to State or a type it holds fails there until
// AppendJSON writes it.
func (s *State) AppendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"run_id":`...)
	b = jsonString(b, s.RunID)
	b = jsonKeyString(b, "workflow_name", s.WorkflowName)
	b = jsonKeyString(b, "workflow_path", s.WorkflowPath)
	b = jsonKeyString(b, "program_hash", s.ProgramHash)
	b = jsonKeyString(b, "status", s.Status)
	b = jsonKeyString(b, "started_at", s.StartedAt)
	b = jsonOmitString(b, "ended_at", s.EndedAt)
	b = jsonOmitString(b, "run_step", s.RunStep)
	b = jsonKeyString(b, "current_step", s.CurrentStep)
	b = jsonKeyString(b, "phase", s.Phase)
	b = strconv.AppendBool(jsonKey(b, "isHalted"), s.IsHalted)
	b = jsonOmitString(b, "halted_block", s.HaltedBlock)
	b = jsonOmitString(b, "signal", s.Signal)
	if b, err = jsonMap(jsonKey(b, "context"), s.Context, jsonAny); err != nil {
		return nil, err
	}
	b = s.Stats.appendJSON(jsonKey(b, "stats"))
	b, _ = jsonSlice(jsonKey(b, "payload"), s.Payload, jsonSegment)
	if b, err = jsonMap(jsonKey(b, "steps"), s.Steps, jsonStepResult); err != nil {
		return nil, err
	}
	b, _ = jsonSlice(jsonKey(b, "return_stack"), s.ReturnStack, (*ReturnFrame).appendJSON)
	if b, err = jsonSlice(jsonKey(b, "loop_stack"), s.LoopStack, (*LoopFrame).appendJSON); err != nil {
		return nil, err
	}
	b, _ = jsonMap(jsonKey(b, "visits"), s.Visits, jsonInt)
	b = jsonOmitString(b, "workspace", s.Workspace)
	b = jsonOmitString(b, "worktree_path", s.WorktreePath)
	b = jsonOmitString(b, "base", s.Base)
	b = jsonOmitString(b, "head", s.Head)
	if len(s.ChangePlan) > 0 {
		b = jsonStrings(jsonKey(b, "change_plan"), s.ChangePlan)
	}
	b = jsonOmitInt(b, "conflict_notices", s.ConflictNotices)
	if len(s.Threads) > 0 {
		if b, err = jsonMap(jsonKey(b, "threads"), s.Threads, jsonThread); err != nil {
			return nil, err
		}
	}
	if len(s.Sessions) > 0 {
		b, _ = jsonMap(jsonKey(b, "sessions"), s.Sessions, jsonSession)
	}
	b = jsonKeyInt(b, "seq", s.Seq)
	b = jsonKeyInt(b, "event_seq", s.EventSeq)
	return append(b, '}'), nil
}

// jsonThread appends the thread (null when nil) as encoding/json writes it.
func jsonThread(b []byte, t *Thread) ([]byte, error) {
	if t == nil {
		return append(b, "null"...), nil
	}
	var err error
	b = append(b, `{"status":`...)
	b = jsonString(b, t.Status)
	b = jsonKeyString(b, "current_step", t.CurrentStep)
	b = jsonKeyString(b, "phase", t.Phase)
	b = jsonOmitString(b, "signal", t.Signal)
	if b, err = jsonSlice(jsonKey(b, "loop_stack"), t.LoopStack, (*LoopFrame).appendJSON); err != nil {
		return nil, err
	}
	if b, err = jsonMap(jsonKey(b, "steps"), t.Steps, jsonStepResult); err != nil {
		return nil, err
	}
	if len(t.Context) > 0 {
		if b, err = jsonMap(jsonKey(b, "context"), t.Context, jsonAny); err != nil {
			return nil, err
		}
	}
	if len(t.Payload) > 0 {
		b, _ = jsonSlice(jsonKey(b, "payload"), t.Payload, jsonSegment)
	}
	if len(t.Visits) > 0 {
		b, _ = jsonMap(jsonKey(b, "visits"), t.Visits, jsonInt)
	}
	if t.Record != nil {
		if b, err = t.Record.appendJSON(jsonKey(b, "record")); err != nil {
			return nil, err
		}
	}
	if t.Error != nil {
		b = t.Error.appendJSON(jsonKey(b, "error"))
	}
	b = jsonOmitString(b, "worktree_path", t.WorktreePath)
	b = jsonOmitString(b, "head", t.Head)
	return append(b, '}'), nil
}

// appendJSON appends the iteration record as encoding/json writes it.
func (it *Iteration) appendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(it.Index), 10)
	if b, err = jsonAny(jsonKey(b, "item"), it.Item); err != nil {
		return nil, err
	}
	b = jsonKeyString(b, "status", it.Status)
	b = jsonKeyInt(b, "exit_code", it.ExitCode)
	if b, err = jsonKeyFloat(b, "duration", it.Duration); err != nil {
		return nil, err
	}
	b = jsonKeyString(b, "output", it.Output)
	if b, err = jsonMap(jsonKey(b, "steps"), it.Steps, jsonStepResult); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// appendJSON appends the return frame as encoding/json writes it.
func (f *ReturnFrame) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"return_block":`...)
	b = jsonString(b, f.ReturnBlock)
	b = jsonKeyString(b, "node", f.Node)
	b = jsonOmitString(b, "call_block", f.CallBlock)
	b = jsonOmitString(b, "return_phase", f.ReturnPhase)
	b = jsonOmitBool(b, "saved", f.Saved)
	if len(f.SavedPayload) > 0 {
		b, _ = jsonSlice(jsonKey(b, "saved_payload"), f.SavedPayload, jsonSegment)
	}
	return append(b, '}'), nil
}

// appendJSON appends the counters as encoding/json writes them.
func (st *Stats) appendJSON(b []byte) []byte {
	b = append(b, `{"totalTokensUsed":`...)
	b = strconv.AppendInt(b, int64(st.TotalTokensUsed), 10)
	b = jsonKeyInt(b, "totalLinesWritten", st.TotalLinesWritten)
	return append(b, '}')
}

// jsonStepResult appends the step result (null when nil).
func jsonStepResult(b []byte, r *StepResult) ([]byte, error) {
	if r == nil {
		return append(b, "null"...), nil
	}
	return r.appendJSON(b)
}

func jsonSegment(g *step.Segment, b []byte) ([]byte, error) {
	b = append(b, `{"id":`...)
	b = jsonString(b, g.ID)
	b = jsonKeyString(b, "type", g.Type)
	b = jsonKeyString(b, "content", g.Content)
	b = jsonKeyString(b, "timestamp", g.Timestamp)
	return append(b, '}'), nil
}

func jsonSession(b []byte, s step.Session) ([]byte, error) {
	b = append(b, `{"provider":`...)
	b = jsonString(b, s.Provider)
	b = jsonKeyString(b, "id", s.ID)
	b = jsonKeyInt(b, "turns", s.Turns)
	b = jsonOmitInt(b, "usage", s.Usage)
	return append(b, '}'), nil
}

func jsonMove(m *step.Move, b []byte) ([]byte, error) {
	b = append(b, `{"from":`...)
	b = jsonString(b, m.From)
	b = jsonKeyString(b, "to", m.To)
	b = jsonOmitString(b, "claim", m.Claim)
	return append(b, '}'), nil
}

func jsonInt(b []byte, n int) ([]byte, error) {
	return strconv.AppendInt(b, int64(n), 10), nil
}

// jsonSlice appends l as encoding/json writes a slice: null when nil, else
// its elements by elem (a method expression, such as
// (*LoopFrame).appendJSON).
func jsonSlice[E any](b []byte, l []E, elem func(*E, []byte) ([]byte, error)) ([]byte, error) {
	if l == nil {
		return append(b, "null"...), nil
	}
	var err error
	b = append(b, '[')
	for i := range l {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = elem(&l[i], b); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// jsonMap appends m as encoding/json writes a map with string keys: null
// when nil, else its entries sorted by key (as bytes), values by elem.
func jsonMap[V any](b []byte, m map[string]V, elem func([]byte, V) ([]byte, error)) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var err error
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(jsonString(b, k), ':')
		if b, err = elem(b, m[k]); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// jsonAnyElem appends *e as jsonAny does (an element for jsonSlice).
func jsonAnyElem(e *any, b []byte) ([]byte, error) { return jsonAny(b, *e) }

// jsonAny appends v as encoding/json writes it: the types JSON decodes to
// (and int, []string) by hand, any other through encoding/json.
func jsonAny(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return jsonString(b, x), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case float64:
		return jsonFloat(b, x)
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case map[string]any:
		return jsonMap(b, x, jsonAny)
	case []any:
		return jsonSlice(b, x, jsonAnyElem)
	case []string:
		if x == nil {
			return append(b, "null"...), nil
		}
		return jsonStrings(b, x), nil
	}
	return jsonValue(b, v)
}
