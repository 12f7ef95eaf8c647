package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"smith/internal/stepfake"
	"smith/isa"
	"smith/lang"
	"smith/source"
	"smith/workers/agent"
	"smith/workers/provider"
	"smith/workers/step"
	"smith/workers/text"
)

// fallbackReq is a provider step whose first provider is rate limited and
// whose second answers.
func fallbackReq(t *testing.T, f *fixture, claudeCmd, geminiCmd []string) *step.Request {
	r := f.Req(isa.KindProvider, "Ask")
	r.Providers = []string{"claude", "gemini"}
	r.ProviderDefs = []provider.Def{{Name: "claude", Command: claudeCmd}, {Name: "gemini", Command: geminiCmd}}
	r.Prompt = "capital of France?\nanswer briefly, token hunter2"
	r.Mask = text.NewMasker([]string{"hunter2"})
	r.Attempts = 2
	r.OutputFile = "answer.txt"
	return r
}

func TestRecordReplay(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "rec")

	rec := newFixture(t)
	rec.run.Record = dir
	recorded := rec.run.Run(context.Background(), fallbackReq(t, rec, stepfake.Exe(t, "print", claude429), stepfake.Exe(t, "print", geminiOK)))
	const want = `signal=SIGNAL:SUCCESS exit=0 attempts=3 output="Paris." provider=gemini tokens=30`
	if stepfake.Describe(recorded) != want {
		t.Fatalf("Run(record) = %s, want %s", stepfake.Describe(recorded), want)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for i := range names {
		names[i] = filepath.Base(names[i])
	}
	if strings.Join(names, " ") != "Ask-1.json Ask-2.json Ask-3.json" {
		t.Errorf("recorded files = %v, want Ask-1.json Ask-2.json Ask-3.json", names)
	}
	var r3 agent.Recording
	b, _ := os.ReadFile(filepath.Join(dir, "Ask-3.json"))
	if err := json.Unmarshal(b, &r3); err != nil {
		t.Fatalf("recording Ask-3.json: %v", err)
	}
	if r3.Step != "Ask" || r3.Attempt != 3 || r3.Provider != "gemini" || r3.Reply != "Paris." || r3.Tokens != 30 ||
		r3.Prompt != "capital of France?\nanswer briefly, token ***" {
		t.Errorf("recording Ask-3.json = %+v", r3)
	}
	if strings.Contains(string(b), "hunter2") {
		t.Errorf("recording Ask-3.json holds a secret: %s", b)
	}

	// Replay in a new run: no CLI exists, the answers come from DIR.
	rep := newFixture(t)
	rep.run.Replay = dir
	replayed := rep.run.Run(context.Background(), fallbackReq(t, rep, []string{"smith-no-such-cli"}, []string{"smith-no-such-cli"}))
	if stepfake.Describe(replayed) != stepfake.Describe(recorded) {
		t.Errorf("Run(replay) = %s, want %s", stepfake.Describe(replayed), stepfake.Describe(recorded))
	}
	if c := rep.Read("artifacts/Ask/answer.txt"); c != "Paris." {
		t.Errorf("Run(replay) output_file = %q, want %q", c, "Paris.")
	}
	if len(rep.Pauses) != 0 {
		t.Errorf("Run(replay) paused %v, want no backoff while replaying", rep.Pauses)
	}

	// The recordings are used up: the next call misses.
	again := rep.run.Run(context.Background(), fallbackReq(t, rep, []string{"x"}, []string{"x"}))
	want2 := wantMiss("no recording of call 4 of step 'Ask'")
	want2.Attempts = 1
	want2.Check(t, "replay after the last recording", again)
}

func wantMiss(has string) stepfake.Want {
	return stepfake.Want{Signal: lang.SigFailure, Exit: -1, Code: source.EReplayMiss, ErrHas: has}
}

func TestReplayMiss(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "rec")
	rec := newFixture(t)
	rec.run.Record = dir
	rec.Write("s.yaml", "- reply: hmm\n  signal: NEEDS_CLARIFICATION\n")
	first := mockRun(rec, "Ask", "s.yaml", "line one\nline two\nline three", nil)

	t.Run("same prompt", func(t *testing.T) {
		f := newFixture(t)
		f.run.Replay = dir
		got := mockRun(f, "Ask", "s.yaml", "line one\nline two\nline three", nil)
		if stepfake.Describe(got) != stepfake.Describe(first) || got.Signal != "SIGNAL:NEEDS_CLARIFICATION" {
			t.Errorf("Run(replay mock) = %s, want %s", stepfake.Describe(got), stepfake.Describe(first))
		}
	})
	t.Run("different prompt", func(t *testing.T) {
		f := newFixture(t)
		f.run.Replay = dir
		got := mockRun(f, "Ask", "s.yaml", "line one\nline 2\nline three", nil)
		wantMiss("prompt of step 'Ask' differs from the recording").Check(t, "changed prompt", got)
		if got.Err == nil || !strings.HasSuffix(got.Err.Error(), "@@ line 2 @@\n-line two\n+line 2") {
			t.Errorf("Run(changed prompt) err = %v, want a diff of line 2", got.Err)
		}
	})
	t.Run("unknown step", func(t *testing.T) {
		f := newFixture(t)
		f.run.Replay = dir
		wantMiss("no recording of call 1 of step 'Other'").Check(t, "other step", mockRun(f, "Other", "", "x", nil))
	})
	// A damaged recording is named with what is wrong in it, in words.
	for _, tt := range []struct{ name, content, want string }{
		{"cut short", `{"step": "Bad", "prompt": `, "recording " + filepath.Join(dir, "Bad-1.json") + " is not a recording --record wrote: the JSON ends too early"},
		{"wrong type", `{"step": "Bad", "prompt": "x", "reply": 5}`, "recording " + filepath.Join(dir, "Bad-1.json") + " is not a recording --record wrote: 'reply' must be a string, found number"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(dir, "Bad-1.json"), []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			f := newFixture(t)
			f.run.Replay = dir
			got := mockRun(f, "Bad", "", "x", nil)
			wantMiss(tt.want).Check(t, tt.name, got)
			if got.Err != nil && strings.Contains(got.Err.Error(), "Go struct") {
				t.Errorf("Run(%s) err = %v: the JSON library's own text", tt.name, got.Err)
			}
		})
	}
}

func TestRecordKeepsErrors(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "rec")
	rec := newFixture(t)
	rec.run.Record = dir
	r := rec.Req(isa.KindProvider, "Slow")
	r.Providers = []string{"echo"}
	r.ProviderDefs = []provider.Def{fake(t, "echo", "sleep", "20s")}
	r.Timeout = 50 * time.Millisecond
	recorded := rec.run.Run(context.Background(), r)

	rep := newFixture(t)
	rep.run.Replay = dir
	r2 := rep.Req(isa.KindProvider, "Slow")
	r2.Providers = []string{"echo"}
	r2.ProviderDefs = []provider.Def{{Name: "echo", Command: []string{"x"}}}
	replayed := rep.run.Run(context.Background(), r2)
	if stepfake.Describe(replayed) != stepfake.Describe(recorded) || recorded.Signal != lang.SigTimeout {
		t.Errorf("Run(replay of a timeout) = %s, want %s", stepfake.Describe(replayed), stepfake.Describe(recorded))
	}
}

// TestReplayAcrossRunIDs: a prompt that names its run (the METADATA layer of
// AI workers) replays in a run with another id.
func TestReplayAcrossRunIDs(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "rec")
	mockReq := func(f *fixture, runID string) *step.Request {
		r := f.Req(isa.KindProvider, "Ask")
		r.RunID = runID
		r.Providers = []string{"mock"}
		r.Prompt = "question\n=== METADATA ===\nrun_id: " + runID
		return r
	}
	rec := newFixture(t)
	rec.run.Record = dir
	recorded := rec.run.Run(context.Background(), mockReq(rec, "run-aaa"))
	if recorded.Signal != lang.SigSuccess {
		t.Fatalf("Run(record) = %s", stepfake.Describe(recorded))
	}
	rep := newFixture(t)
	rep.run.Replay = dir
	replayed := rep.run.Run(context.Background(), mockReq(rep, "run-bbb"))
	if replayed.Signal != lang.SigSuccess || replayed.Err != nil {
		t.Fatalf("Run(replay in another run) = %s, err %v; want the recording to match", stepfake.Describe(replayed), replayed.Err)
	}
	// A prompt that really differs still misses.
	rep2 := newFixture(t)
	rep2.run.Replay = dir
	other := mockReq(rep2, "run-ccc")
	other.Prompt = "another question\n=== METADATA ===\nrun_id: run-ccc"
	wantMiss("differs from the recording").Check(t, "replay of another prompt", rep2.run.Run(context.Background(), other))
}

// TestReplayRepeatsACrashedCall: replay answers a numbered call repeated
// after a crash with the same recording, and the next call with the next.
func TestReplayRepeatsACrashedCall(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "rec")
	call := func(f *fixture, n int, prompt string) step.Result {
		r := f.Req(isa.KindProvider, "Ask")
		r.Providers = []string{"mock"}
		r.Prompt = prompt
		r.Execution = n
		return f.run.Run(context.Background(), r)
	}
	rec := newFixture(t)
	rec.run.Record = dir
	call(rec, 1, "first")
	call(rec, 2, "second")
	rep := newFixture(t)
	rep.run.Replay = dir
	if r := call(rep, 1, "first"); r.Err != nil {
		t.Fatalf("replay call 1: %v", r.Err)
	}
	if r := call(rep, 1, "first"); r.Err != nil || r.Output != "first" {
		t.Errorf("replay of call 1 repeated after a crash = %q, %v; want the first recording again", r.Output, r.Err)
	}
	if r := call(rep, 2, "second"); r.Err != nil || r.Output != "second" {
		t.Errorf("replay call 2 = %q, %v; want the second recording", r.Output, r.Err)
	}
}

// TestRecordRepeatedCall: a call repeated after a crash that came after
// its recording was written (the same execution, provider and try)
// replaces that recording instead of adding a second one, which a later
// call of the step would be answered with; the next call adds one.
func TestRecordRepeatedCall(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "rec")
	f := newFixture(t)
	f.run.Record = dir
	req := func(exec int) *step.Request {
		r := f.Req(isa.KindProvider, "Ask")
		r.Providers = []string{"mock"}
		r.Prompt = "hello"
		r.Execution = exec
		return r
	}
	for _, exec := range []int{1, 1, 2} {
		if res := f.run.Run(context.Background(), req(exec)); res.ExitCode != 0 {
			t.Fatalf("Run(execution %d) = %s", exec, stepfake.Describe(res))
		}
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for i := range names {
		names[i] = filepath.Base(names[i])
	}
	if got := strings.Join(names, " "); got != "Ask-1.json Ask-2.json" {
		t.Errorf("recorded files = %s, want Ask-1.json Ask-2.json", got)
	}
}
