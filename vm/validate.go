package vm

import (
	"encoding/json"
	"fmt"
	"time"

	"smith/isa"
	"smith/lang"
	"smith/source"
	"smith/workers/reply"
	"smith/workers/step"
)

// Signals and segment types of AI replies (CONTRACT 7.1, 9).
const (
	// SigValidationFail is the signal of a reply that failed its
	// validation schema.
	SigValidationFail = lang.SigValidationFail
	// defaultOutputType is the segment type of an AI worker's reply when
	// the worker names no output_type.
	defaultOutputType = lang.DefaultOutputType
)

// schemaSet returns the run's SchemaSet (the built-ins and the program's
// schemas), compiling it on first use.
func (m *Machine) schemaSet() (*reply.SchemaSet, error) {
	if m.schemas == nil && m.schemaErr == nil {
		defs := make([]reply.SchemaDoc, len(m.p.Schemas))
		for i, s := range m.p.Schemas {
			defs[i] = reply.SchemaDoc{Name: s.Name, JSON: s.Schema}
		}
		m.schemas, m.schemaErr = reply.NewSchemaSet(defs)
		if m.schemaErr != nil {
			m.schemaErr = &source.Error{Code: source.EUnknownSchema, Msg: fmt.Sprintf("compile the program's schemas: %v", m.schemaErr)}
		}
	}
	return m.schemas, m.schemaErr
}

// reply post-processes the result of block blk whose worker produced sig:
//
//   - an AI worker (a manifest workers entry with a provider) may name its
//     own signal on the last non-empty line of its reply: that signal wins
//     and the line is removed;
//   - with a validation schema and SIGNAL:SUCCESS, the reply is cleaned and
//     validated: on success the output becomes the cleaned value, on failure
//     the signal becomes SIGNAL:VALIDATION_FAIL with an E_VALIDATION error;
//   - an AI worker's reply becomes a segment of its output_type (default
//     AI_RESPONSE), followed on a validation failure by a VALIDATION_ERROR
//     segment saying what failed.
//
// A worker that failed (an error, a non-zero exit, FAILURE or TIMEOUT) is
// left as it is: there is no reply to process.
func (m *Machine) reply(blk *isa.Block, res *step.Result, sig string) string {
	s := blk.Step
	if s == nil || res.Err != nil || res.ExitCode != 0 || sig == SigFailure || sig == SigTimeout {
		return sig
	}
	ai := s.AI != nil || s.PayloadIO // replies become payload segments
	provider := blk.Kind == isa.KindProvider || s.PayloadIO
	if !provider && s.Validation == "" {
		return sig
	}
	text := res.Output
	if provider {
		// An AI reply may name its signal in its last line (CONTRACT 7.1;
		// YAML routes it with on.signals).
		if named, rest, ok := reply.LastLineSignal(text); ok {
			sig, text = named, rest
		}
	}
	problem := ""
	if s.Validation != "" && sig == SigSuccess {
		set, err := m.schemaSet()
		if err != nil {
			res.Err = err
			return SigFailure
		}
		cleaned, p, ok := set.Validate(s.Validation, text)
		if ok {
			text = cleaned
			if s.OutputCapture == "json" {
				var v any
				if json.Unmarshal([]byte(cleaned), &v) == nil {
					res.JSON, res.HasJSON = v, true
				}
			}
		} else {
			sig, problem = SigValidationFail, p
			res.Err = &source.Error{Code: source.EValidation, Msg: p}
		}
	}
	res.Output = text
	if ai {
		typ := s.OutputType
		if s.AI != nil && s.AI.OutputType != "" {
			typ = s.AI.OutputType
		}
		if typ == "" {
			typ = defaultOutputType
		}
		res.Segments = append(res.Segments, step.Segment{Type: typ, Content: text})
		if problem != "" {
			res.Segments = append(res.Segments, step.Segment{Type: step.SegValidationError, Content: problem})
		}
	}
	return sig
}

// validationError is what failed validation the last time step r ran
// ("" when it did not fail validation): ${steps.S.validation_error}.
func validationError(r *StepResult) string {
	if r == nil || r.Signal != SigValidationFail || r.Error == nil {
		return ""
	}
	return r.Error.Message
}

// feedback is what a YAML provider step's prompt gets appended when the
// step runs again after its own validation failure (CONTRACT 9): the same
// text as a manifest's VALIDATION_ERROR segment. Manifests carry it in
// the payload instead.
func (m *Machine) feedback(blk *isa.Block) string {
	if blk.Kind != isa.KindProvider || m.p.Format != "workflow" {
		return ""
	}
	r := m.st.Steps[blk.ID]
	if r != nil && r.Status == StepRunning {
		return r.Feedback // cut off by a crash: the same prompt again
	}
	return validationError(r)
}

// stamp gives every segment without an id or a timestamp one.
func (m *Machine) stamp(segs []step.Segment) []step.Segment {
	out := make([]step.Segment, len(segs))
	for i, s := range segs {
		if s.ID == "" {
			s.ID = m.newID()
		}
		if s.Timestamp == "" {
			s.Timestamp = m.now().Format(time.RFC3339)
		}
		out[i] = s
	}
	return out
}
