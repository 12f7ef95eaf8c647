package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"smith/source"
	"smith/workers/confine"
	"smith/workers/step"
)

// replayCursors is the file under RUN_ROOT that counts, per step, the
// recordings a replayed run has used, so that a resumed run continues.
const replayCursors = "replay-cursors.json"

// WasReplayed reports whether the run whose RUN_ROOT is runRoot answered
// provider calls from recordings (--replay): it has replay cursors.
func WasReplayed(runRoot string) bool {
	_, err := os.Lstat(filepath.Join(runRoot, replayCursors))
	return err == nil
}

// A Recording is one provider call as --record writes it: DIR/<Step>-<N>.json,
// where N counts the step's calls in the order they were made (retries,
// fallbacks to the next provider and loop iterations each make a call).
// Prompt and reply are masked.
type Recording struct {
	Step      string  `json:"step"`
	RunID     string  `json:"run_id,omitempty"` // the recording run's id: replay reads it as this run's
	Attempt   int     `json:"attempt"`          // the try of this execution of the step, from 1
	Provider  string  `json:"provider"`
	Prompt    string  `json:"prompt"`
	Reply     string  `json:"reply"`
	ExitCode  int     `json:"exit_code"`
	Signal    string  `json:"signal,omitempty"` // a custom signal (mock)
	Tokens    int     `json:"tokens"`
	Cost      float64 `json:"cost_usd,omitempty"` // where the CLI reports it
	Duration  float64 `json:"duration"`           // seconds
	ErrorCode string  `json:"error_code,omitempty"`
	Error     string  `json:"error,omitempty"`
	// Patch is what the call did to the files of its working directory
	// (WORKSPACE or the run's worktree): replay applies it there.
	Patch []FileChange `json:"patch,omitempty"`
	// Session is the session the call continued (session: continue; ""
	// for a new one), SessionID the session the reply came from, and
	// SessionUsage the CLI's running token total of it (codex): replay
	// checks the first and answers with the others.
	Session      string `json:"session,omitempty"`
	SessionID    string `json:"session_id,omitempty"`
	SessionUsage int    `json:"session_usage,omitempty"`
	// Call identifies the call within its run (execution/provider/try,
	// see callID): a call repeated after a crash that came after its
	// recording was written replaces that recording, not a second one
	// that a later call would be answered with.
	Call string `json:"call,omitempty"`
}

// record writes one provider call to the --record directory (sess: the
// session it continued).
func (r *Runner) record(req *step.Request, name string, sess *step.Session, prompt string, rep callReply, attempt int, call string, d time.Duration) error {
	cursorMu.Lock()
	defer cursorMu.Unlock()
	if err := os.MkdirAll(r.Record, 0o755); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	last, err := lastRecording(r.Record, req.CallKey())
	if err != nil {
		return err
	}
	// The calls of one key are made one after another, so a call
	// repeated after a crash can only have written the last recording.
	n := last + 1
	if call != "" && last > 0 {
		var prev struct {
			RunID string `json:"run_id"`
			Call  string `json:"call"`
		}
		b, err := os.ReadFile(recordingPath(r.Record, req.CallKey(), last))
		if err == nil && json.Unmarshal(b, &prev) == nil && prev.Call == call && prev.RunID == req.RunID {
			n = last
		}
	}
	rec := Recording{
		Call:     call,
		Step:     req.Step,
		RunID:    req.RunID,
		Attempt:  attempt,
		Provider: name,
		Prompt:   req.Mask.String(prompt),
		Reply:    rep.text,
		ExitCode: rep.exit,
		Signal:   rep.signal,
		Tokens:   rep.tokens,
		Cost:     rep.cost,
		Duration: d.Seconds(),
		Patch:    rep.files,

		SessionID:    rep.session,
		SessionUsage: rep.usage,
	}
	if sess != nil {
		rec.Session = sess.ID
	}
	if rep.err != nil {
		rec.ErrorCode, rec.Error = string(rep.err.Code), rep.err.Msg
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return confine.WriteFileAtomic(recordingPath(r.Record, req.CallKey(), n), append(b, '\n'), 0o644)
}

// RecordedRuns returns the ids of the runs whose recordings DIR holds
// (files DIR/<Step>-<N>.json), sorted, none when DIR does not exist. A
// replay reads a step's recordings from its first, so a folder holds the
// recordings of one run: run and resume check --record with it.
func RecordedRuns(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var runs []string
	for _, e := range ents {
		stem, ok := strings.CutSuffix(e.Name(), ".json")
		i := strings.LastIndexByte(stem, '-')
		if !ok || i < 0 || !e.Type().IsRegular() {
			continue
		}
		if n, err := strconv.Atoi(stem[i+1:]); err != nil || n < 1 {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		var rec struct {
			RunID string `json:"run_id"`
		}
		if json.Unmarshal(b, &rec) == nil && rec.RunID != "" && !slices.Contains(runs, rec.RunID) {
			runs = append(runs, rec.RunID)
		}
	}
	slices.Sort(runs)
	return runs, nil
}

// recordingPath is DIR/<Step>-<n>.json.
func recordingPath(dir, step string, n int) string {
	return filepath.Join(dir, step+"-"+strconv.Itoa(n)+".json")
}

// lastRecording returns the highest N of DIR/<Step>-<N>.json, 0 if none.
func lastRecording(dir, step string) (int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("record: %w", err)
	}
	last := 0
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), step+"-")
		if !ok {
			continue
		}
		num, ok := strings.CutSuffix(rest, ".json")
		if !ok {
			continue
		}
		if n, err := strconv.Atoi(num); err == nil && n > last && strconv.Itoa(n) == num {
			last = n
		}
	}
	return last, nil
}

// replay answers a provider call from the --replay directory: the step's next
// recording, whose prompt must equal this call's (masked) prompt and which
// must continue the same session (sess, nil: none). A missing recording, a
// different prompt or session is E_REPLAY_MISS.
func (r *Runner) replay(req *step.Request, prompt, call string, sess *step.Session) callReply {
	miss := func(format string, args ...any) callReply {
		return callReply{exit: step.ExitNotRun, err: source.Errorf(source.EReplayMiss, format, args...)}
	}
	cursorMu.Lock()
	defer cursorMu.Unlock()
	key := req.CallKey()
	cursors, cur, err := loadCursor[replayCursor](req.RunRoot, replayCursors, key)
	if err != nil {
		return miss("replay: %v", err)
	}
	n, seen := cur.Calls[call]
	if !seen || call == "" {
		n = cur.Used + 1
	}
	path := recordingPath(r.Replay, key, n)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return miss("no recording of call %d of step '%s' in %s", n, req.Step, r.Replay)
	}
	if err != nil {
		return miss("replay step '%s': %v", req.Step, err)
	}
	var rec Recording
	if err := json.Unmarshal(b, &rec); err != nil {
		return miss("replay step '%s': recording %s is not a recording --record wrote: %s", req.Step, path, recordingProblem(err))
	}
	recorded := rec.Prompt
	if rec.RunID != "" && req.RunID != "" && rec.RunID != req.RunID {
		// A prompt that names its run (the METADATA layer) is compared as
		// if the recording had been made by this run.
		recorded = strings.ReplaceAll(recorded, rec.RunID, req.RunID)
	}
	if masked := req.Mask.String(prompt); recorded != masked {
		return miss("prompt of step '%s' differs from the recording %s:\n%s", req.Step, path, promptDiff(recorded, masked))
	}
	if passed := sessionIDOf(sess); passed != rec.Session {
		return miss("step '%s' continues session '%s', but the recording %s continued session '%s'", req.Step, passed, path, rec.Session)
	}
	// The files as the CLI left them, before the cursor moves on: a file
	// already as recorded (the call repeated after a crash) is left alone.
	if serr := applyChanges(req, rec.Patch, path); serr != nil {
		return callReply{exit: step.ExitNotRun, err: serr}
	}
	if !seen || call == "" {
		cur.Used = n
		noteCall(&cur.Calls, call, n)
		if err := saveCursors(req.RunRoot, replayCursors, cursors); err != nil {
			return miss("replay: %v", err)
		}
	}
	rep := callReply{text: rec.Reply, exit: rec.ExitCode, signal: rec.Signal, tokens: rec.Tokens, cost: rec.Cost, session: rec.SessionID, usage: rec.SessionUsage}
	if rec.ErrorCode != "" {
		rep.err = &source.Error{Code: source.Code(rec.ErrorCode), Msg: rec.Error}
	}
	return rep
}

// A replayCursor is how far replay has read one step's recordings, and
// which recording answered each numbered call (see callID).
type replayCursor struct {
	Used  int            `json:"used"`
	Calls map[string]int `json:"calls,omitempty"`
}

// promptDiff shows the first line where two prompts differ, unified style.
func promptDiff(recorded, current string) string {
	a, b := strings.Split(recorded, "\n"), strings.Split(current, "\n")
	line := func(ls []string, i int) string {
		if i >= len(ls) {
			return "(end of prompt)"
		}
		s := ls[i]
		if len(s) > 200 {
			s = s[:200] + "..."
		}
		return s
	}
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return fmt.Sprintf("@@ line %d @@\n-%s\n+%s", i+1, line(a, i), line(b, i))
}

// recordingProblem says in words why a recording file does not decode.
func recordingProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se) && strings.Contains(se.Error(), "end of JSON input"):
		return "the JSON ends too early"
	case errors.As(err, &se):
		return fmt.Sprintf("malformed JSON at byte %d (%v)", se.Offset, se)
	case errors.As(err, &te) && te.Field != "" && te.Type != nil:
		want := "a " + te.Type.Kind().String()
		switch te.Type.Kind() {
		case reflect.Int, reflect.Int64, reflect.Float64:
			want = "a number"
		case reflect.Slice:
			want = "a list"
		case reflect.Struct, reflect.Map:
			want = "an object"
		case reflect.Bool:
			want = "a boolean"
		}
		found := te.Value
		if found == "bool" {
			found = "boolean"
		}
		return fmt.Sprintf("'%s' must be %s, found %s", te.Field, want, found)
	}
	return err.Error()
}
