package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"smith/source"
	"smith/workers/step"
	"smith/workers/text"
)

// WireRequest is a step.Request as it travels to an activity: the
// callbacks, the masker and the live writer stay behind (the VM's side
// replays retries and fallbacks from the result), and secret values are
// placeholders (secrets.go) that the activity fills from its own
// environment, so no secret ever enters Temporal's history.
type WireRequest struct {
	step.Request
	// SecretNames are the program's secrets: the activity masks their
	// values in everything it returns.
	SecretNames []string
	// Files is the snapshot of the run's WORKSPACE the step must see (a
	// manifest blob, snapshot.go); "" before the run's first snapshot.
	Files string
}

// MarshalJSON encodes the request's data fields (every field but the
// callbacks, the masker and the live writer, which encoding/json cannot or
// must not carry), so a field added to step.Request travels too.
func (w WireRequest) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	v := reflect.ValueOf(w.Request)
	for _, f := range reflect.VisibleFields(v.Type()) {
		if !f.IsExported() || localOnly(f) {
			continue
		}
		m[f.Name] = v.FieldByIndex(f.Index).Interface()
	}
	if len(w.SecretNames) > 0 {
		m["SecretNames"] = w.SecretNames
	}
	if w.Files != "" {
		m["Files"] = w.Files
	}
	return json.Marshal(m)
}

// UnmarshalJSON decodes what MarshalJSON wrote.
func (w *WireRequest) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*w = WireRequest{}
	v := reflect.ValueOf(&w.Request).Elem()
	for _, f := range reflect.VisibleFields(v.Type()) {
		raw, ok := m[f.Name]
		if !ok || !f.IsExported() || localOnly(f) {
			continue
		}
		if err := json.Unmarshal(raw, v.FieldByIndex(f.Index).Addr().Interface()); err != nil {
			return fmt.Errorf("request field %s: %w", f.Name, err)
		}
	}
	if raw, ok := m["Files"]; ok {
		if err := json.Unmarshal(raw, &w.Files); err != nil {
			return err
		}
	}
	if raw, ok := m["SecretNames"]; ok {
		return json.Unmarshal(raw, &w.SecretNames)
	}
	return nil
}

// localOnly reports whether a request field stays in the process that made
// it: functions, interfaces (the live writer) and the masker.
func localOnly(f reflect.StructField) bool {
	switch f.Type.Kind() {
	case reflect.Func, reflect.Interface, reflect.Chan:
		return true
	}
	return f.Type == reflect.TypeOf((*text.Masker)(nil))
}

// A Call is one callback of the request the activity saw (AttemptID,
// OnRetry or OnFallback), replayed in order on the workflow's side so that
// ids and events come out as on the local engine.
type Call struct {
	Kind              string // attempt, retry, fallback
	Attempt, ExitCode int    `json:",omitempty"`
	Wait              time.Duration
	From, To, Reason  string `json:",omitempty"`
}

// WireResult is a step.Result with its error as data.
type WireResult struct {
	step.Result
	ErrCode string `json:",omitempty"`
	ErrMsg  string `json:",omitempty"`
	HasErr  bool   `json:",omitempty"`
	Calls   []Call `json:",omitempty"`
	// Files is the snapshot of the run's WORKSPACE after the step ("":
	// none taken, the run's files did not travel).
	Files string `json:",omitempty"`
	// Step echoes the request's step, which the workflow checks on replay.
	Step string `json:",omitempty"`
}

// MarshalJSON encodes the result with Err as ErrCode/ErrMsg.
func (w WireResult) MarshalJSON() ([]byte, error) {
	r := w.Result
	if r.Err != nil {
		w.HasErr, w.ErrMsg = true, r.Err.Error()
		var c source.Coded
		if errors.As(r.Err, &c) {
			w.ErrCode = string(c.ErrCode())
		}
	}
	r.Err = nil
	type plain step.Result
	type out struct {
		plain
		Err     struct{} `json:"-"`
		ErrCode string   `json:",omitempty"`
		ErrMsg  string   `json:",omitempty"`
		HasErr  bool     `json:",omitempty"`
		Calls   []Call   `json:",omitempty"`
		Files   string   `json:",omitempty"`
		Step    string   `json:",omitempty"`
	}
	return json.Marshal(out{plain(r), struct{}{}, w.ErrCode, w.ErrMsg, w.HasErr, w.Calls, w.Files, w.Step})
}

// UnmarshalJSON decodes what MarshalJSON wrote, Err included.
func (w *WireResult) UnmarshalJSON(b []byte) error {
	type plain step.Result
	var in struct {
		plain
		Err     struct{} `json:"-"`
		ErrCode string   `json:",omitempty"`
		ErrMsg  string   `json:",omitempty"`
		HasErr  bool     `json:",omitempty"`
		Calls   []Call   `json:",omitempty"`
		Files   string   `json:",omitempty"`
		Step    string   `json:",omitempty"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	w.Result = step.Result(in.plain)
	w.ErrCode, w.ErrMsg, w.HasErr, w.Calls, w.Files, w.Step = in.ErrCode, in.ErrMsg, in.HasErr, in.Calls, in.Files, in.Step
	if in.HasErr {
		w.Result.Err = &StepError{Code: source.Code(in.ErrCode), Msg: in.ErrMsg}
	}
	return nil
}

// StepError is a step's coded error after the trip through history.
type StepError struct {
	Code source.Code
	Msg  string
}

func (e *StepError) Error() string { return e.Msg }

// ErrCode returns the code ("" becomes E_STEP_FAILED).
func (e *StepError) ErrCode() source.Code {
	if e.Code == "" {
		return source.EStepFailed
	}
	return e.Code
}
