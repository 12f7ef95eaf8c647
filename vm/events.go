package vm

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"smith/workers/text"
)

// Event kinds (Event.Kind, the "event" field of events.jsonl).
const (
	EvRunStarted     = "run_started"
	EvRunResumed     = "run_resumed"
	EvRunCompleted   = "run_completed"
	EvRunFailed      = "run_failed"
	EvRunHalted      = "run_halted"
	EvRunInterrupted = "run_interrupted"
	EvStepStarted    = "step_started"
	EvStepCompleted  = "step_completed"
	EvStepFailed     = "step_failed"
	EvStepSignal     = "step_signal"
	EvStepRetry      = "step_retry"
	EvStepSkipped    = "step_skipped"
	EvStepMaxVisits  = "step_max_visits"
	// EvProviderFallback: a provider failed retryably after its own
	// retries and the next one of the step's list is tried (CONTRACT 5).
	EvProviderFallback = "provider_fallback"
	// Messages between agents (CONTRACT 12.2): Agent and Path say which.
	EvMessageSent     = "message_sent"
	EvMessageConsumed = "message_consumed"
	// EvDebug is a DEBUG event (--log-level debug): Msg says what happened.
	EvDebug = "debug"
	// EvConflict: another active run changes files this run changes too
	// (YAML; manifests get a CONFLICT segment). Msg names the run and files.
	EvConflict = "conflict"
	// EvSession: an agent that continues its sessions (session: continue)
	// started one: its first, or a new one on the provider a fallback
	// handed over to (CONTRACT 12.1).
	EvSession = "session_started"
	// EvFailAction is an error:/FAIL: action ending the run: its console
	// line is ERROR: MSG (CONTRACT 3.3), before the run_failed line.
	EvFailAction = "fail_action"
)

// Event levels.
const (
	LevelInfo    = "INFO"
	LevelWarning = "WARNING"
	LevelError   = "ERROR"
	LevelDebug   = "DEBUG"
)

// An Event is one line of the console and one object of events.jsonl. The
// machine fills Time, Seq and RunID and masks every secret value in Msg and
// Traceback before it hands an event to Config.Events.
type Event struct {
	Time  time.Time `json:"timestamp"`
	RunID string    `json:"run_id"`
	// Seq is strictly increasing across the whole run, resumes included.
	Seq   int    `json:"event_seq"`
	Level string `json:"level"`
	Step  string `json:"step,omitempty"`
	// AttemptID is the number of the step's try (1, 2, ...: CONTRACT 3.5,
	// seed 004) on every event of a step; run events have none (0).
	AttemptID int `json:"attempt_id,omitempty"`
	// AttemptUID is the unique id of a try of a worker step (the same on
	// every event of that try, never on another's).
	AttemptUID string `json:"attempt_uid,omitempty"`
	Kind       string `json:"event"`
	// Duration is in seconds; it is printed only when HasDuration.
	Duration    float64  `json:"duration"`
	HasDuration bool     `json:"-"`
	ExitCode    *int     `json:"exit_code,omitempty"`
	Msg         string   `json:"message,omitempty"`
	Traceback   []string `json:"traceback,omitempty"`

	// Details some console forms need.
	Workflow string  `json:"workflow,omitempty"` // run_started
	Code     string  `json:"code,omitempty"`     // run_failed, step_failed: the error code
	Signal   string  `json:"signal,omitempty"`   // step_signal, step_failed
	Attempt  int     `json:"attempt,omitempty"`  // step_retry: the try that failed, from 1
	Wait     float64 `json:"wait,omitempty"`     // step_retry: seconds until the next try
	Visits   int     `json:"max_visits,omitempty"`
	// Provider is the provider that answered a provider step (CONTRACT 5:
	// with provider: [a, b], the log names it); for provider_fallback, the
	// one that failed, and Next the one tried next.
	Provider string `json:"provider,omitempty"`
	Next     string `json:"next_provider,omitempty"`
	// Agent and Path: message_sent and message_consumed.
	Agent string `json:"agent,omitempty"`
	Path  string `json:"path,omitempty"`
	// Thread is the iteration index or branch name of an event from a
	// thread of a parallel step (CONTRACT 12.3).
	Thread string `json:"thread,omitempty"`
	// Iteration is the index of the iteration of the serial loops an
	// event's step runs in (outermost first, joined by "."): the console
	// names it as it names a thread, 'Fix' [2].
	Iteration string `json:"iteration,omitempty"`
	// Tokens and Cost are what a step's execution used (the provider's
	// tokens, and its cost in US dollars where the CLI reports one), on
	// the event that ends it: summed over a step's events they are its
	// tokens over all its visits and iterations (CONTRACT 13).
	Tokens int     `json:"tokens,omitempty"`
	Cost   float64 `json:"cost_usd,omitempty"`
}

// MarshalJSON writes the event with duration only where it applies. It is
// written by hand (one is encoded per event of every run): the keys in the
// order of the fields, duration last, and the bytes of json.Marshal of the
// same fields (TestEventMarshalJSONMatchesReflection checks both).
func (e Event) MarshalJSON() ([]byte, error) {
	return e.AppendJSON(make([]byte, 0, 192))
}

// AppendJSON appends what MarshalJSON returns to b: the store writes it
// as it is, compact JSON, without compacting it again.
func (e Event) AppendJSON(b []byte) ([]byte, error) {
	// The bytes of Time.MarshalJSON, appended in place (no buffer of its own).
	b = append(b, `{"timestamp":"`...)
	b, err := e.Time.AppendText(b)
	if err != nil {
		return nil, errors.New("Time.MarshalJSON: " + strings.TrimPrefix(err.Error(), "Time.AppendText: "))
	}
	b = append(b, '"')
	b = appendKey(b, "run_id", e.RunID)
	b = append(b, `,"event_seq":`...)
	b = strconv.AppendInt(b, int64(e.Seq), 10)
	b = appendKey(b, "level", e.Level)
	b = appendOmit(b, "step", e.Step)
	if e.AttemptID != 0 {
		b = append(b, `,"attempt_id":`...)
		b = strconv.AppendInt(b, int64(e.AttemptID), 10)
	}
	b = appendOmit(b, "attempt_uid", e.AttemptUID)
	b = appendKey(b, "event", e.Kind)
	if e.ExitCode != nil {
		b = append(b, `,"exit_code":`...)
		b = strconv.AppendInt(b, int64(*e.ExitCode), 10)
	}
	b = appendOmit(b, "message", e.Msg)
	if len(e.Traceback) > 0 {
		tb, err := json.Marshal(e.Traceback)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"traceback":`...), tb...)
	}
	b = appendOmit(b, "workflow", e.Workflow)
	b = appendOmit(b, "code", e.Code)
	b = appendOmit(b, "signal", e.Signal)
	if e.Attempt != 0 {
		b = append(b, `,"attempt":`...)
		b = strconv.AppendInt(b, int64(e.Attempt), 10)
	}
	if e.Wait != 0 {
		if b, err = jsonKeyFloat(b, "wait", e.Wait); err != nil {
			return nil, err
		}
	}
	if e.Visits != 0 {
		b = append(b, `,"max_visits":`...)
		b = strconv.AppendInt(b, int64(e.Visits), 10)
	}
	b = appendOmit(b, "provider", e.Provider)
	b = appendOmit(b, "next_provider", e.Next)
	b = appendOmit(b, "agent", e.Agent)
	b = appendOmit(b, "path", e.Path)
	b = appendOmit(b, "thread", e.Thread)
	b = appendOmit(b, "iteration", e.Iteration)
	if e.Tokens != 0 {
		b = append(b, `,"tokens":`...)
		b = strconv.AppendInt(b, int64(e.Tokens), 10)
	}
	if e.Cost != 0 {
		if b, err = jsonKeyFloat(b, "cost_usd", e.Cost); err != nil {
			return nil, err
		}
	}
	if e.HasDuration {
		if b, err = jsonKeyFloat(b, "duration", e.Duration); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendOmit appends ,"key":value unless value is empty (omitempty).
func appendOmit(b []byte, key, value string) []byte {
	if value == "" {
		return b
	}
	return appendKey(b, key, value)
}

// appendKey appends ,"key":value with value encoded as json.Marshal
// encodes a string.
func appendKey(b []byte, key, value string) []byte {
	return text.AppendJSONString(jsonKey(b, key), value, true)
}

// exitCodes are the exit codes 0-255 for events to point at: an Event's
// ExitCode is read, never written through, so the usual codes cost no
// allocation per event.
var exitCodes = func() (a [256]int) {
	for i := range a {
		a[i] = i
	}
	return a
}()

// exitCodeOf returns a pointer to the exit code c.
func exitCodeOf(c int) *int {
	if c >= 0 && c < len(exitCodes) {
		return &exitCodes[c]
	}
	n := c // allocated here only: c itself stays on the stack
	return &n
}

func evFailAction(step, msg string) Event {
	return Event{Kind: EvFailAction, Level: LevelError, Step: step, Msg: msg}
}

func evRunStarted(workflow string) Event {
	return Event{Kind: EvRunStarted, Level: LevelInfo, Workflow: workflow}
}

func evRunResumed(step string) Event {
	return Event{Kind: EvRunResumed, Level: LevelInfo, Step: step}
}

func evRunCompleted() Event { return Event{Kind: EvRunCompleted, Level: LevelInfo} }

func evRunFailed(step string, code, reason string, traceback []string) Event {
	return Event{Kind: EvRunFailed, Level: LevelError, Step: step, Code: code, Msg: reason, Traceback: traceback}
}

func evRunHalted(block string) Event {
	return Event{Kind: EvRunHalted, Level: LevelWarning, Step: block}
}

func evRunInterrupted(step string) Event {
	return Event{Kind: EvRunInterrupted, Level: LevelWarning, Step: step}
}

// A try is a try of a step: its number (0: filled in by emit) and, for a
// worker step, its unique id.
type try struct {
	n   int
	uid string
}

func evStepStarted(step string, t try) Event {
	return Event{Kind: EvStepStarted, Level: LevelInfo, Step: step, AttemptID: t.n, AttemptUID: t.uid}
}

func evStepCompleted(step string, t try, exitCode int, dur float64) Event {
	return Event{Kind: EvStepCompleted, Level: LevelInfo, Step: step, AttemptID: t.n, AttemptUID: t.uid,
		ExitCode: exitCodeOf(exitCode), Duration: dur, HasDuration: true}
}

// evStepFailed is a failed step: msg is the error's message ("" when the
// exit code says it all).
func evStepFailed(step string, t try, signal string, exitCode *int, dur float64, code, msg string) Event {
	return Event{Kind: EvStepFailed, Level: LevelError, Step: step, AttemptID: t.n, AttemptUID: t.uid, Signal: signal,
		ExitCode: exitCode, Duration: dur, HasDuration: true, Code: code, Msg: msg}
}

// evOutcome is the event of step's result r (try t's): completed for
// SIGNAL:SUCCESS, failed for an error, a failure or a timeout, else the
// signal it finished with.
func evOutcome(step string, t try, r *StepResult) Event {
	switch {
	case r.Signal == SigSuccess:
		return evStepCompleted(step, t, r.ExitCode, r.Duration)
	case r.Error != nil || r.Signal == SigFailure || r.Signal == SigTimeout:
		code, e := r.ExitCode, StepError{}
		if r.Error != nil {
			e = *r.Error
		}
		return evStepFailed(step, t, r.Signal, exitCodeOf(code), r.Duration, e.Code, e.Message)
	}
	return evStepSignal(step, t, r.Signal, r.ExitCode, r.Duration)
}

func evStepSignal(step string, t try, signal string, exitCode int, dur float64) Event {
	return Event{Kind: EvStepSignal, Level: LevelInfo, Step: step, AttemptID: t.n, AttemptUID: t.uid, Signal: signal,
		ExitCode: exitCodeOf(exitCode), Duration: dur, HasDuration: true}
}

func evStepRetry(step string, t try, exitCode int, wait time.Duration) Event {
	return Event{Kind: EvStepRetry, Level: LevelWarning, Step: step, AttemptID: t.n, AttemptUID: t.uid, Attempt: t.n,
		ExitCode: exitCodeOf(exitCode), Wait: wait.Seconds()}
}

func evProviderFallback(step, from, to, reason string) Event {
	return Event{Kind: EvProviderFallback, Level: LevelWarning, Step: step, Provider: from, Next: to, Msg: reason}
}

func evMessage(kind, step, agent, path string) Event {
	return Event{Kind: kind, Level: LevelInfo, Step: step, Agent: agent, Path: path}
}

func evStepSkipped(step string) Event {
	return Event{Kind: EvStepSkipped, Level: LevelInfo, Step: step, Signal: SigSkipped}
}

func evStepMaxVisits(step string, max int) Event {
	return Event{Kind: EvStepMaxVisits, Level: LevelWarning, Step: step, Signal: SigMaxVisits, Visits: max}
}
