package engine

import (
	"bytes"
	"encoding/json"

	"smith/workers/step"
	"smith/workers/text"
)

// The workflow never sees a secret's value: its environment answers a
// secret's name with a placeholder, which travels in the step's request
// and is replaced by the value from the executing worker's environment
// inside the activity; the activity masks the values in what it returns.
// History therefore holds names, never values.

const placeholderMark = "\u241f" // SYMBOL FOR UNIT SEPARATOR: never in a real value

// Placeholder stands for the value of the secret name in workflow code.
func Placeholder(name string) string {
	return placeholderMark + "smith-secret:" + name + placeholderMark
}

// fillSecrets replaces every placeholder in req with the value lookup
// gives (an unset secret becomes ""), and returns the values for masking.
func fillSecrets(w *WireRequest, lookup func(string) (string, bool)) ([]string, error) {
	var values []string
	for _, n := range w.SecretNames {
		if v, ok := lookup(n); ok && v != "" {
			values = append(values, v)
		}
	}
	b, err := json.Marshal(*w)
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(b, []byte(placeholderMark)) {
		return values, nil
	}
	for _, n := range w.SecretNames {
		v, _ := lookup(n)
		q, _ := json.Marshal(v)
		b = bytes.ReplaceAll(b, []byte(Placeholder(n)), q[1:len(q)-1])
	}
	var out WireRequest
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	*w = out
	return values, nil
}

// maskResult masks secret values in everything a result carries.
func maskResult(r *step.Result, m *text.Masker) {
	r.Output = m.String(r.Output)
	for i := range r.Lines {
		r.Lines[i] = m.String(r.Lines[i])
	}
	for i := range r.Segments {
		r.Segments[i].Content = m.String(r.Segments[i].Content)
	}
	if r.HasJSON && r.JSON != nil {
		if b, err := json.Marshal(r.JSON); err == nil {
			if s := m.String(string(b)); s != string(b) {
				var v any
				if json.Unmarshal([]byte(s), &v) == nil {
					r.JSON = v
				}
			}
		}
	}
	if r.Err != nil {
		if msg := m.String(r.Err.Error()); msg != r.Err.Error() {
			r.Err = maskedErr{r.Err, msg}
		}
	}
}

// maskedErr keeps an error's code with a masked message.
type maskedErr struct {
	error
	msg string
}

func (e maskedErr) Error() string { return e.msg }
func (e maskedErr) Unwrap() error { return e.error }
