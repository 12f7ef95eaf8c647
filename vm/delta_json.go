package vm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"smith/workers/text"
)

// AppendJSON appends d to b as the store writes it: the bytes of an
// encoding/json Encoder with HTML escaping off, without its newline. It is
// written by hand because a delta is encoded for every step of every run,
// and reflection over its many empty fields was the largest part of the
// VM's own CPU per step; only values of type any of a type JSON does not
// decode to (jsonAny) still go through encoding/json.
// TestDeltaAppendJSONMatchesReflection compares both on
// deltas with every field set.
func (d *Delta) AppendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, int64(d.Seq), 10)
	b = jsonKeyString(b, "current_step", d.CurrentStep)
	b = jsonKeyString(b, "phase", d.Phase)
	b = jsonOmitString(b, "signal", d.Signal)
	b = jsonKeyString(b, "status", d.Status)
	b = jsonOmitBool(b, "isHalted", d.IsHalted)
	b = jsonOmitString(b, "halted_block", d.HaltedBlock)
	b = jsonOmitString(b, "ended_at", d.EndedAt)
	b = jsonKeyInt(b, "event_seq", d.EventSeq)
	b = jsonOmitString(b, "worktree_path", d.WorktreePath)
	b = jsonOmitString(b, "head", d.Head)
	b = jsonOmitInt(b, "conflict_notices", d.ConflictNotices)
	if b, err = jsonSlice(jsonKey(b, "loop_stack"), d.LoopStack, (*LoopFrame).appendJSON); err != nil {
		return nil, err
	}
	b = jsonOmitBool(b, "set_return", d.SetReturn)
	if len(d.ReturnStack) > 0 {
		b, _ = jsonSlice(jsonKey(b, "return_stack"), d.ReturnStack, (*ReturnFrame).appendJSON)
	}
	if len(d.Reset) > 0 {
		b = append(b, `,"reset":`...)
		b = jsonStrings(b, d.Reset)
	}
	if len(d.Steps) > 0 {
		b = append(b, `,"steps":[`...)
		for i := range d.Steps {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = jsonString(b, d.Steps[i].Name)
			b = append(b, `,"result":`...)
			if b, err = d.Steps[i].Result.appendJSON(b); err != nil {
				return nil, err
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if d.Iteration != nil {
		if b, err = d.Iteration.appendJSON(jsonKey(b, "iteration")); err != nil {
			return nil, err
		}
	}
	if len(d.Context) > 0 {
		if b, err = jsonMap(jsonKey(b, "context"), d.Context, jsonAny); err != nil {
			return nil, err
		}
	}
	if len(d.Payload) > 0 {
		b, _ = jsonSlice(jsonKey(b, "payload"), d.Payload, jsonSegment)
	}
	b = jsonOmitBool(b, "replace_payload", d.ReplacePayload)
	b = jsonOmitBool(b, "set_change_plan", d.SetChangePlan)
	if len(d.ChangePlan) > 0 {
		b = append(b, `,"change_plan":`...)
		b = jsonStrings(b, d.ChangePlan)
	}
	b = d.Stats.appendJSON(jsonKey(b, "stats"))
	if d.Visit != nil {
		b = append(b, `,"visit":{"block":`...)
		b = jsonString(b, d.Visit.Block)
		b = jsonKeyInt(b, "count", d.Visit.Count)
		b = append(b, '}')
	}
	if d.Start != nil {
		if b, err = d.Start.appendJSON(jsonKey(b, "start")); err != nil {
			return nil, err
		}
	}
	b = jsonOmitString(b, "thread", d.Thread)
	if d.ThreadRecord != nil {
		if b, err = d.ThreadRecord.appendJSON(jsonKey(b, "thread_record")); err != nil {
			return nil, err
		}
	}
	if d.ThreadError != nil {
		b = append(b, `,"thread_error":`...)
		b = d.ThreadError.appendJSON(b)
	}
	if len(d.Iterations) > 0 {
		if b, err = jsonSlice(jsonKey(b, "iterations"), d.Iterations, (*IterationChange).appendJSON); err != nil {
			return nil, err
		}
	}
	if len(d.Visits) > 0 {
		b, _ = jsonMap(jsonKey(b, "visits"), d.Visits, jsonInt)
	}
	b = jsonOmitBool(b, "drop_threads", d.DropThreads)
	if len(d.Sessions) > 0 {
		b, _ = jsonMap(jsonKey(b, "sessions"), d.Sessions, jsonSession)
	}
	return append(b, '}'), nil
}

// appendJSON appends the run's identity as encoding/json writes it.
func (st *RunStart) appendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"run_id":`...)
	b = jsonString(b, st.RunID)
	b = jsonKeyString(b, "workflow_name", st.WorkflowName)
	b = jsonKeyString(b, "workflow_path", st.WorkflowPath)
	b = jsonKeyString(b, "program_hash", st.ProgramHash)
	b = jsonKeyString(b, "started_at", st.StartedAt)
	if b, err = jsonMap(jsonKey(b, "context"), st.Context, jsonAny); err != nil {
		return nil, err
	}
	b = jsonOmitString(b, "run_step", st.RunStep)
	b = jsonOmitString(b, "workspace", st.Workspace)
	b = jsonOmitString(b, "base", st.Base)
	return append(b, '}'), nil
}

// appendJSON appends the closed iteration record as encoding/json writes it.
func (c *IterationChange) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"loop":`...)
	b = jsonString(b, c.Loop)
	b, err := c.Record.appendJSON(jsonKey(b, "record"))
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// appendJSON appends the loop frame as encoding/json writes it.
func (f *LoopFrame) appendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"loop":`...)
	b = jsonString(b, f.Loop)
	b = jsonKeyInt(b, "index", f.Index)
	b = jsonKeyInt(b, "total", f.Total)
	if len(f.Items) > 0 {
		if b, err = jsonSlice(jsonKey(b, "items"), f.Items, jsonAnyElem); err != nil {
			return nil, err
		}
	}
	b = jsonOmitString(b, "last", f.Last)
	if b, err = jsonKeyFloat(b, "elapsed", f.Elapsed); err != nil {
		return nil, err
	}
	b = jsonOmitString(b, "started", f.Started)
	return append(b, '}'), nil
}

// appendJSON appends the step result as encoding/json writes it.
func (r *StepResult) appendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"status":`...)
	b = jsonString(b, r.Status)
	b = jsonKeyInt(b, "exit_code", r.ExitCode)
	b = jsonKeyString(b, "output", r.Output)
	b = append(b, `,"lines":`...)
	if r.Lines == nil {
		b = append(b, "null"...)
	} else {
		b = jsonStrings(b, r.Lines)
	}
	if b, err = jsonAny(jsonKey(b, "json"), r.JSON); err != nil {
		return nil, err
	}
	if b, err = jsonKeyFloat(b, "duration", r.Duration); err != nil {
		return nil, err
	}
	b = jsonKeyInt(b, "attempts", r.Attempts)
	b = append(b, `,"truncated":`...)
	b = strconv.AppendBool(b, r.Truncated)
	b = jsonOmitString(b, "spill_stdout_path", r.SpillStdoutPath)
	b = jsonOmitBool(b, "lines_truncated", r.LinesTruncated)
	b = jsonOmitString(b, "output_file", r.OutputFile)
	if r.Error != nil {
		b = append(b, `,"error":`...)
		b = r.Error.appendJSON(b)
	}
	b = jsonOmitString(b, "signal", r.Signal)
	b = jsonOmitInt(b, "visits", r.Visits)
	b = jsonOmitInt(b, "executions", r.Executions)
	if len(r.Iterations) > 0 {
		if b, err = jsonSlice(jsonKey(b, "iterations"), r.Iterations, (*Iteration).appendJSON); err != nil {
			return nil, err
		}
	}
	b = jsonOmitInt(b, "iterations_total", r.IterationsTotal)
	b = jsonOmitString(b, "provider", r.Provider)
	b = jsonOmitInt(b, "message", r.Message)
	b = jsonOmitInt(b, "message_sub", r.MessageSub)
	if len(r.Consumed) > 0 {
		b, _ = jsonSlice(jsonKey(b, "consumed"), r.Consumed, jsonMove)
	}
	b = jsonOmitString(b, "feedback", r.Feedback)
	b = jsonOmitString(b, "commit", r.Commit)
	b = jsonOmitString(b, "capture_path", r.CapturePath)
	b = jsonOmitString(b, "stderr", r.Stderr)
	b = jsonOmitString(b, "started_at", r.StartedAt)
	b = jsonOmitString(b, "ended_at", r.EndedAt)
	b = jsonOmitInt(b, "tokens", r.Tokens)
	if len(r.JoinKept) > 0 {
		b = jsonStrings(jsonKey(b, "join_kept"), r.JoinKept)
	}
	return append(b, '}'), nil
}

// appendJSON appends the step error as encoding/json writes it.
func (e *StepError) appendJSON(b []byte) []byte {
	b = append(b, `{"code":`...)
	b = jsonString(b, e.Code)
	b = jsonKeyString(b, "message", e.Message)
	return append(b, '}')
}

// jsonString appends s as an encoding/json Encoder with HTML escaping off
// writes it.
func jsonString(b []byte, s string) []byte { return text.AppendJSONString(b, s, false) }

// jsonKey appends ,"key":.
func jsonKey(b []byte, key string) []byte {
	return append(append(append(b, `,"`...), key...), `":`...)
}

func jsonStrings(b []byte, l []string) []byte {
	b = append(b, '[')
	for i, s := range l {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonString(b, s)
	}
	return append(b, ']')
}

func jsonKeyString(b []byte, key, s string) []byte {
	b = jsonKey(b, key)
	return jsonString(b, s)
}

func jsonOmitString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return jsonKeyString(b, key, s)
}

func jsonKeyInt(b []byte, key string, n int) []byte {
	b = jsonKey(b, key)
	return strconv.AppendInt(b, int64(n), 10)
}

func jsonOmitInt(b []byte, key string, n int) []byte {
	if n == 0 {
		return b
	}
	return jsonKeyInt(b, key, n)
}

func jsonOmitBool(b []byte, key string, v bool) []byte {
	if !v {
		return b
	}
	return append(jsonKey(b, key), "true"...)
}

// jsonKeyFloat appends ,"key": and f as jsonFloat does.
func jsonKeyFloat(b []byte, key string, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, unsupportedFloat(f)
	}
	return jsonFloat(jsonKey(b, key), f)
}

// jsonFloat appends a float64 as encoding/json formats it: %f, or %e for
// very small and large magnitudes with a one-digit negative exponent
// written without its 0; NaN and infinities are an error.
func jsonFloat(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, unsupportedFloat(f)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

func unsupportedFloat(f float64) error {
	return fmt.Errorf("json: unsupported value: %s", strconv.FormatFloat(f, 'g', -1, 64))
}

// jsonValue appends v as an encoding/json Encoder with HTML escaping off
// writes it, without the newline.
func jsonValue(b []byte, v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), nil
}
