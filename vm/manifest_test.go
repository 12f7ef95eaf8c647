package vm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"smith/compiler"
	"smith/internal/goldenfile"
	"smith/isa"
	"smith/vm"
	"smith/workers"
	"smith/workers/confine"
	"smith/workers/step"
)

// TestManifestGolden compiles testdata/manifests/NAME.json with the real
// compiler and runs it with a real workers.Registry (the mock provider and
// the internal workers; no process runs) in a fresh BASE whose WORKSPACE is
// a copy of testdata/manifests/workspace. NAME.resume, when present, holds
// a JSON list of resume options ({"signal", "note"}): after the run ends,
// each is used for one Resume. The events of every run and the final state
// are compared with NAME.events.golden and NAME.state.golden (BASE shown as
// $BASE, the program hash as HASH).
func TestManifestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/manifests/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/manifests/*.json inputs")
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(name, func(t *testing.T) {
			prog := mfCompile(t, file)
			var resumes []vm.ResumeOptions
			if b, err := os.ReadFile(strings.TrimSuffix(file, ".json") + ".resume"); err == nil {
				var opts []struct{ Signal, Note string }
				if err := json.Unmarshal(b, &opts); err != nil {
					t.Fatalf("%s.resume: %v", name, err)
				}
				for _, o := range opts {
					resumes = append(resumes, vm.ResumeOptions{Signal: o.Signal, Note: o.Note})
				}
			}
			h := newMfHarness(t, "testdata/manifests/workspace")
			st, runErr := h.run(prog, resumes)
			var ev bytes.Buffer
			for _, e := range h.events {
				b, err := json.Marshal(e)
				if err != nil {
					t.Fatal(err)
				}
				ev.Write(b)
				ev.WriteByte('\n')
			}
			golden(t, "manifests/"+name+".events.golden", []byte(h.norm(ev.String())))
			out := jsonOf(t, st)
			out = strings.ReplaceAll(out, st.ProgramHash, "HASH")
			if runErr != nil {
				out += "\nerror: " + runErr.Error()
			}
			golden(t, "manifests/"+name+".state.golden", []byte(h.norm(out)+"\n"))
			h.checkRebuilt(t, st)
		})
	}
}

// mfCompile compiles a manifest (or workflow) file with the real compiler.
func mfCompile(t *testing.T, file string) *isa.Program {
	t.Helper()
	res, ds := compiler.CompileFile(file, compiler.Options{})
	if res.Prog == nil {
		t.Fatalf("CompileFile(%s) failed:\n%s", file, ds.Error())
	}
	return res.Prog
}

// An mfHarness runs manifests in one temporary BASE with a real Registry.
type mfHarness struct {
	t      *testing.T
	base   string
	dirs   confine.Dir
	reg    *workers.Registry
	now    func() time.Time
	events []vm.Event
	deltas [][]byte
}

// newMfHarness makes a BASE whose WORKSPACE is a copy of ws ("" for an
// empty one).
func newMfHarness(t *testing.T, ws string) *mfHarness {
	t.Helper()
	base := t.TempDir()
	dirs, err := confine.New(base)
	if err != nil {
		t.Fatal(err)
	}
	if ws != "" {
		mfCopyDir(t, ws, dirs.Workspace)
	}
	if err := os.MkdirAll(dirs.Workspace, 0o755); err != nil {
		t.Fatal(err)
	}
	reg := workers.NewRegistry(nil)
	reg.Clock = clock()
	return &mfHarness{t: t, base: base, dirs: dirs, reg: reg, now: clock()}
}

// config is the machine's configuration for run id r1.
func (h *mfHarness) config(runner step.Runner) vm.Config {
	return vm.Config{
		Registry: runner,
		Host:     clocked{now: h.now},
		RunID:    "r1",
		Dirs:     h.dirs,
		RunRoot:  filepath.Join(h.base, ".orchestrator", "runs", "r1"),
		Events:   func(e vm.Event) { h.events = append(h.events, e) },
		Checkpoint: func(d *vm.Delta, st *vm.State) error {
			b, err := json.Marshal(d)
			if err != nil {
				return err
			}
			h.deltas = append(h.deltas, b)
			return nil
		},
	}
}

// run runs prog and then resumes it once per entry of resumes.
func (h *mfHarness) run(prog *isa.Program, resumes []vm.ResumeOptions) (*vm.State, error) {
	h.t.Helper()
	m, err := vm.New(prog, h.config(h.reg))
	if err != nil {
		h.t.Fatalf("New: %v", err)
	}
	st, runErr := m.Run(context.Background())
	for _, opt := range resumes {
		m, err := vm.New(prog, h.config(h.reg))
		if err != nil {
			h.t.Fatalf("New: %v", err)
		}
		st, runErr = m.Resume(context.Background(), st, opt)
	}
	return st, runErr
}

// norm shows BASE as $BASE.
func (h *mfHarness) norm(s string) string { return strings.ReplaceAll(s, h.base, "$BASE") }

// checkRebuilt asserts that the deltas rebuild st exactly.
func (h *mfHarness) checkRebuilt(t *testing.T, st *vm.State) {
	t.Helper()
	re := &vm.State{}
	for _, b := range h.deltas {
		var d vm.Delta
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("unmarshal delta: %v", err)
		}
		re.Apply(&d)
	}
	if got, want := jsonOf(t, re), jsonOf(t, st); got != want {
		t.Errorf("state rebuilt from deltas differs from the final state:\n%s", goldenfile.FirstDiff(got, want))
	}
}

// mfCopyDir copies the tree src to dst.
func mfCopyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// mfSource compiles manifest text written to a temporary file.
func mfSource(t *testing.T, src string) *isa.Program {
	t.Helper()
	file := filepath.Join(t.TempDir(), "flow.json")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return mfCompile(t, file)
}

// mfWrite writes files (path -> content) under dir.
func mfWrite(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for path, content := range files {
		abs := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(abs, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// payloadText prints a payload as "TYPE:content" lines.
func payloadText(p []step.Segment) string {
	var b strings.Builder
	for _, s := range p {
		b.WriteString(s.Type + ":" + s.Content + "\n")
	}
	return b.String()
}

// TestManifestSemantics runs small manifests with the mock provider and
// checks one thing each: the signal, the payload, the run's end.
func TestManifestSemantics(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		files   map[string]string // under WORKSPACE
		signal  string            // the final signal register
		status  string
		payload string // payloadText of the final payload ("" = not checked)
		errSub  string // a substring of the run's error ("" = nil)
		stats   vm.Stats
		check   func(t *testing.T, st *vm.State)
	}{
		{
			name: "custom signal from the last line wins and is removed",
			src: `{"version":"1","entry":"N","workers":{"W":{"provider":"mock","provider_params":{"script":"s.json"},"output_type":"REVIEW"}},
			 "nodes":{"N":{"entry_block":"A","blocks":{"A":{"worker":"W","transitions":[
			   {"on_signal":"SIGNAL:APPROVED","action":"END"},{"on_signal":"SIGNAL:FAIL_DEFAULT","action":"FAIL:no"}]}}}}}`,
			files:   map[string]string{"s.json": `[{"reply":"Looks good.\n\nSIGNAL:APPROVED\n"}]`},
			signal:  "SIGNAL:APPROVED",
			status:  vm.StatusCompleted,
			payload: "REVIEW:Looks good.\n",
		},
		{
			name: "a reply without a signal line is SIGNAL:SUCCESS in AI_RESPONSE",
			src: `{"version":"1","entry":"N","workers":{"W":{"provider":"mock","provider_params":{"script":"s.json"}}},
			 "nodes":{"N":{"entry_block":"A","blocks":{"A":{"worker":"W","transitions":[
			   {"on_signal":"SIGNAL:SUCCESS","action":"END"},{"on_signal":"SIGNAL:FAIL_DEFAULT","action":"FAIL:no"}]}}}}}`,
			files:   map[string]string{"s.json": `[{"reply":"the signal is SIGNAL:APPROVED, in prose"}]`},
			signal:  vm.SigSuccess,
			status:  vm.StatusCompleted,
			payload: "AI_RESPONSE:the signal is SIGNAL:APPROVED, in prose\n",
		},
		{
			name: "timeout falls back to the failure transition",
			src: `{"version":"1","entry":"N","workers":{"W":{"provider":"mock","provider_params":{"script":"s.json"}}},
			 "nodes":{"N":{"entry_block":"A","blocks":{"A":{"worker":"W","transitions":[
			   {"on_signal":"SIGNAL:SUCCESS","action":"END"},{"on_signal":"SIGNAL:FAILURE","action":"FAIL:failure handler"},
			   {"on_signal":"SIGNAL:FAIL_DEFAULT","action":"FAIL:default handler"}]}}}}}`,
			files:  map[string]string{"s.json": `[{"reply":"slow","exit_code":124}]`},
			signal: vm.SigTimeout,
			status: vm.StatusFailed,
			errSub: "failure handler",
		},
		{
			name: "an unmatched signal takes SIGNAL:FAIL_DEFAULT",
			src: `{"version":"1","entry":"N","workers":{"W":{"provider":"mock","provider_params":{"script":"s.json"}}},
			 "nodes":{"N":{"entry_block":"A","blocks":{"A":{"worker":"W","transitions":[
			   {"on_signal":"SIGNAL:SUCCESS","action":"FAIL:success handler"},{"on_signal":"SIGNAL:FAIL_DEFAULT","action":"END"}]}}}}}`,
			files:  map[string]string{"s.json": `[{"reply":"hm\nSIGNAL:NEEDS_CLARIFICATION"}]`},
			signal: "SIGNAL:NEEDS_CLARIFICATION",
			status: vm.StatusCompleted,
		},
		{
			name: "validation-fix loop succeeds on the second reply",
			src: `{"version":"1","entry":"N","workers":{"W":{"provider":"mock","provider_params":{"script":"s.json"},"output_type":"CODE_OUTPUT"}},
			 "nodes":{"N":{"entry_block":"Gen","blocks":{"Gen":{"worker":"W","validationSchema":"CodeAndExplanation","max_visits":3,"transitions":[
			   {"on_signal":"SIGNAL:SUCCESS","action":"END"},{"on_signal":"SIGNAL:VALIDATION_FAIL","action":"JUMP:Gen"},
			   {"on_signal":"SIGNAL:MAX_VISITS","action":"FAIL:never valid"},{"on_signal":"SIGNAL:FAIL_DEFAULT","action":"FAIL:no"}]}}}}}`,
			files: map[string]string{"s.json": `[{"reply":"Sure! Here is the code you asked for:\n` + "```go\\npackage main\\n```" + `\nHope this helps!"},
			  {"reply":"Of course, here it is:\n` + "```json\\n{\\\"code\\\": \\\"package main\\\", \\\"explanation\\\": \\\"the package clause\\\"}\\n```" + `"}]`},
			signal: vm.SigSuccess,
			status: vm.StatusCompleted,
			check: func(t *testing.T, st *vm.State) {
				if n := len(st.Payload); n != 3 {
					t.Fatalf("payload = %s, want 3 segments", payloadText(st.Payload))
				}
				if got := st.Payload[1]; got.Type != "VALIDATION_ERROR" || !strings.HasPrefix(got.Content, "Output failed validation. Fix this: ") {
					t.Errorf("payload[1] = %s:%q, want a VALIDATION_ERROR", got.Type, got.Content)
				}
				if got, want := st.Payload[2].Content, `{"code":"package main","explanation":"the package clause"}`; got != want {
					t.Errorf("cleaned reply = %q, want %q", got, want)
				}
				if got := st.Steps["Gen"].Executions; got != 2 {
					t.Errorf("executions = %d, want 2", got)
				}
			},
		},
		{
			name: "max_visits produces SIGNAL:MAX_VISITS",
			src: `{"version":"1","entry":"N","workers":{"W":{"provider":"mock","provider_params":{"script":"s.json"}}},
			 "nodes":{"N":{"entry_block":"Gen","blocks":{"Gen":{"worker":"W","validationSchema":"CodeAndExplanation","max_visits":2,"transitions":[
			   {"on_signal":"SIGNAL:SUCCESS","action":"END"},{"on_signal":"SIGNAL:VALIDATION_FAIL","action":"JUMP:Gen"},
			   {"on_signal":"SIGNAL:MAX_VISITS","action":"FAIL:never valid"},{"on_signal":"SIGNAL:FAIL_DEFAULT","action":"FAIL:no"}]}}}}}`,
			files:  map[string]string{"s.json": `[{"reply":"nope"},{"reply":"still nope"},{"reply":"never read"}]`},
			signal: vm.SigMaxVisits,
			status: vm.StatusFailed,
			errSub: "never valid",
		},
		{
			name: "pure CALL restores the payload and appends the callee's last segment",
			src: `{"version":"1","entry":"Main","workers":{"W":{"provider":"mock","provider_params":{"script":"s.json"}}},
			 "nodes":{
			  "Main":{"entry_block":"Ask","blocks":{"Ask":{"worker":"W","transitions":[
			    {"on_signal":"SIGNAL:NEED_LINT","action":"CALL:Lint"},{"on_signal":"SIGNAL:SUCCESS","action":"END"},
			    {"on_signal":"SIGNAL:FAIL_DEFAULT","action":"FAIL:no"}]}}},
			  "Lint":{"entry_block":"L1","context_inheritance":false,"blocks":{
			    "L1":{"worker":"W","transitions":[{"on_signal":"SIGNAL:SUCCESS","action":"JUMP:L2"},{"on_signal":"SIGNAL:FAIL_DEFAULT","action":"RETURN"}]},
			    "L2":{"worker":"W","transitions":[{"on_signal":"SIGNAL:SUCCESS","action":"RETURN"},{"on_signal":"SIGNAL:FAIL_DEFAULT","action":"RETURN"}]}}}}}`,
			files: map[string]string{"s.json": `[{"match":"block: Ask\n","reply":"first\nSIGNAL:NEED_LINT"},{"match":"block: L1\n","reply":"lint one"},
			  {"match":"block: L2\n","reply":"lint two"},{"match":"block: Ask\n","reply":"done"}]`},
			signal:  vm.SigSuccess,
			status:  vm.StatusCompleted,
			payload: "AI_RESPONSE:first\nAI_RESPONSE:lint two\nAI_RESPONSE:done\n",
		},
		{
			name: "inheriting CALL shares the payload; return_to continues elsewhere",
			src: `{"version":"1","entry":"Main","workers":{"W":{"provider":"mock","provider_params":{"script":"s.json"}}},
			 "nodes":{
			  "Main":{"entry_block":"Ask","blocks":{
			    "Ask":{"worker":"W","transitions":[{"on_signal":"SIGNAL:SUCCESS","action":"CALL:Sub","return_to":"After"},{"on_signal":"SIGNAL:FAIL_DEFAULT","action":"FAIL:no"}]},
			    "After":{"worker":"W","transitions":[{"on_signal":"SIGNAL:SUCCESS","action":"END"},{"on_signal":"SIGNAL:FAIL_DEFAULT","action":"FAIL:no"}]}}},
			  "Sub":{"entry_block":"S1","context_inheritance":true,"blocks":{
			    "S1":{"worker":"W","transitions":[{"on_signal":"SIGNAL:SUCCESS","action":"RETURN"},{"on_signal":"SIGNAL:FAIL_DEFAULT","action":"RETURN"}]}}}}}`,
			files:   map[string]string{"s.json": `[{"match":"block: Ask\n","reply":"a"},{"match":"block: S1\n","reply":"s"},{"match":"block: After\n","reply":"b"}]`},
			signal:  vm.SigSuccess,
			status:  vm.StatusCompleted,
			payload: "AI_RESPONSE:a\nAI_RESPONSE:s\nAI_RESPONSE:b\n",
		},
		{
			name: "RETURN with an empty stack ends the run",
			src: `{"version":"1","entry":"N","workers":{"W":{"provider":"mock"}},
			 "nodes":{"N":{"entry_block":"A","blocks":{"A":{"worker":"W","transitions":[
			   {"on_signal":"SIGNAL:SUCCESS","action":"RETURN"},{"on_signal":"SIGNAL:FAIL_DEFAULT","action":"FAIL:no"}]}}}}}`,
			signal: vm.SigSuccess,
			status: vm.StatusCompleted,
		},
		{
			name: "internal workers: files written, lines counted, change plan in state",
			src: `{"version":"1","entry":"N","workers":{"W":{"provider":"mock","provider_params":{"script":"s.json"},"output_type":"CODE_OUTPUT"},
			   "P":{"provider":"mock","provider_params":{"script":"p.json"},"output_type":"NEW_FILES_IDENTIFIED"}},
			 "nodes":{"N":{"entry_block":"Plan","blocks":{
			   "Plan":{"worker":"P","transitions":[{"on_signal":"SIGNAL:SUCCESS","action":"JUMP:Update"},{"on_signal":"SIGNAL:FAIL_DEFAULT","action":"FAIL:no"}]},
			   "Update":{"worker":"Internal:UpdateChangePlan","transitions":[{"on_signal":"SIGNAL:SUCCESS","action":"JUMP:Gen"}]},
			   "Gen":{"worker":"W","transitions":[{"on_signal":"SIGNAL:SUCCESS","action":"JUMP:Write"},{"on_signal":"SIGNAL:FAIL_DEFAULT","action":"FAIL:no"}]},
			   "Write":{"worker":"Internal:FileSystemWriter","transitions":[{"on_signal":"SIGNAL:SUCCESS","action":"END"},{"on_signal":"SIGNAL:FAILURE","action":"FAIL:write"}]}}}}}`,
			files: map[string]string{"p.json": `[{"reply":"[\"hello.go\"]"}]`,
				"s.json": `[{"reply":"{\"filePath\":\"hello.go\",\"fileContent\":\"package main\\n\\nfunc main() {}\\n\"}"}]`},
			signal: vm.SigSuccess,
			status: vm.StatusCompleted,
			check: func(t *testing.T, st *vm.State) {
				if got := strings.Join(st.ChangePlan, ","); got != "hello.go" {
					t.Errorf("change_plan = %q, want hello.go", got)
				}
				if st.Stats.TotalLinesWritten != 3 {
					t.Errorf("totalLinesWritten = %d, want 3", st.Stats.TotalLinesWritten)
				}
				if st.Stats.TotalTokensUsed == 0 {
					t.Errorf("totalTokensUsed = 0, want the mock's count")
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog := mfSource(t, tt.src)
			h := newMfHarness(t, "")
			mfWrite(t, h.dirs.Workspace, tt.files)
			st, err := h.run(prog, nil)
			switch {
			case tt.errSub == "" && err != nil:
				t.Fatalf("Run() = %v, want nil", err)
			case tt.errSub != "" && (err == nil || !strings.Contains(err.Error(), tt.errSub)):
				t.Fatalf("Run() = %v, want an error containing %q", err, tt.errSub)
			}
			if st.Signal != tt.signal || st.Status != tt.status {
				t.Errorf("Run() signal, status = %s, %s, want %s, %s", st.Signal, st.Status, tt.signal, tt.status)
			}
			if tt.payload != "" {
				if got := payloadText(st.Payload); got != tt.payload {
					t.Errorf("payload = %q, want %q", got, tt.payload)
				}
			}
			if tt.check != nil {
				tt.check(t, st)
			}
			h.checkRebuilt(t, st)
		})
	}
}

// TestManifestHaltResume halts on a custom signal and resumes: --note
// appends a USER_NOTE first, --signal takes the halted block's transition,
// and a plain resume runs the halted block again.
func TestManifestHaltResume(t *testing.T) {
	src := `{"version":"1","entry":"N","workers":{"W":{"provider":"mock","provider_params":{"script":"s.json"}}},
	 "nodes":{"N":{"entry_block":"Ask","blocks":{"Ask":{"worker":"W","transitions":[
	   {"on_signal":"SIGNAL:SUCCESS","action":"END"},{"on_signal":"SIGNAL:APPROVED","action":"JUMP:Done"},
	   {"on_signal":"SIGNAL:FAIL_DEFAULT","action":"HALT_AND_FLAG"}]},
	   "Done":{"worker":"W","transitions":[{"on_signal":"SIGNAL:SUCCESS","action":"END"},{"on_signal":"SIGNAL:FAIL_DEFAULT","action":"FAIL:no"}]}}}}}`
	tests := []struct {
		name    string
		opt     vm.ResumeOptions
		calls   string // the blocks run by the resume
		payload string
	}{
		{"signal and note", vm.ResumeOptions{Signal: "SIGNAL:APPROVED", Note: "lgtm"}, "Done",
			"AI_RESPONSE:which API?\nUSER_NOTE:lgtm\nAI_RESPONSE:done\n"},
		{"plain resume re-runs the halted block", vm.ResumeOptions{}, "Ask",
			"AI_RESPONSE:which API?\nAI_RESPONSE:ok now\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog := mfSource(t, src)
			h := newMfHarness(t, "")
			mfWrite(t, h.dirs.Workspace, map[string]string{"s.json": `[{"match":"block: Ask\n","reply":"which API?\nSIGNAL:NEEDS_CLARIFICATION"},
			  {"match":"block: Ask\n","reply":"ok now"},{"match":"block: Done\n","reply":"done"}]`})
			st, err := h.run(prog, nil)
			if !errors.Is(err, vm.ErrHalted) || st.Status != vm.StatusHalted || !st.IsHalted || st.HaltedBlock != "Ask" {
				t.Fatalf("Run() = %v, status %s, isHalted %v at %q, want halted at Ask", err, st.Status, st.IsHalted, st.HaltedBlock)
			}
			var calls []string
			spy := runnerFunc(func(ctx context.Context, req *step.Request) step.Result {
				calls = append(calls, req.Step)
				return h.reg.Run(ctx, req)
			})
			m, err := vm.New(prog, h.config(spy))
			if err != nil {
				t.Fatal(err)
			}
			st, err = m.Resume(context.Background(), st, tt.opt)
			if err != nil || st.Status != vm.StatusCompleted || st.IsHalted {
				t.Fatalf("Resume() = %v, status %s, isHalted %v, want completed", err, st.Status, st.IsHalted)
			}
			if got := strings.Join(calls, ","); got != tt.calls {
				t.Errorf("Resume() ran %q, want %q", got, tt.calls)
			}
			if got := payloadText(st.Payload); got != tt.payload {
				t.Errorf("payload = %q, want %q", got, tt.payload)
			}
		})
	}
}

// runnerFunc adapts a function to step.Runner.
type runnerFunc func(ctx context.Context, req *step.Request) step.Result

func (f runnerFunc) Run(ctx context.Context, req *step.Request) step.Result { return f(ctx, req) }

// TestManifestNoTransition runs a program whose table lacks the signal the
// block produces: the check forbids it, so the table is cut by hand.
func TestManifestNoTransition(t *testing.T) {
	prog := mfSource(t, `{"version":"1","entry":"N","workers":{"C":{"command":["x"]}},
	 "nodes":{"N":{"entry_block":"A","blocks":{"A":{"worker":"C","transitions":[
	   {"on_signal":"SIGNAL:SUCCESS","action":"END"},{"on_signal":"SIGNAL:FAIL_DEFAULT","action":"END"}]}}}}}`)
	for i := range prog.Tables {
		prog.Tables[i].HasDefault, prog.Tables[i].Default = false, 0
	}
	f := &fake{script: map[string][]step.Result{"A": {fail(3)}}}
	r := run(t, prog, f, nil)
	if codeOf(r.err) != "E_NO_TRANSITION" || r.st.Status != vm.StatusFailed {
		t.Fatalf("Run() = %v (%s), status %s, want E_NO_TRANSITION, failed", r.err, codeOf(r.err), r.st.Status)
	}
}

// TestManifestValidationYAML checks validation_schema on a YAML provider
// step: a bad reply is SIGNAL:VALIDATION_FAIL (on.validation_fail), a good
// one becomes the cleaned output.
func TestManifestValidationYAML(t *testing.T) {
	tests := []struct {
		name   string
		reply  string
		want   string // the final step
		output string
	}{
		{"invalid goes to on.validation_fail", "no JSON here", "Fix", ""},
		{"valid is cleaned", "Here you go:\n```json\n{\"explanation\": \"e\", \"code\": \"c\"}\n```", "Done", `{"code":"c","explanation":"e"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "flow.yaml")
			mfWrite(t, dir, map[string]string{"flow.yaml": `version: "1.0"
name: v
steps:
  - name: Gen
    provider: mock
    prompt: "write it"
    validation_schema: CodeAndExplanation
    on: {success: {goto: Done}, failure: {error: "gen failed"}, validation_fail: {goto: Fix}}
  - name: Fix
    command: ["true"]
    on: {success: {end: true}, failure: {end: true}}
  - name: Done
    command: ["true"]
    on: {success: {end: true}, failure: {end: true}}
`})
			prog := mfCompile(t, file)
			f := &fake{script: map[string][]step.Result{"Gen": {{Signal: vm.SigSuccess, Output: tt.reply, Attempts: 1}}}}
			r := run(t, prog, f, nil)
			if r.err != nil {
				t.Fatalf("Run() = %v", r.err)
			}
			if got := f.calls[len(f.calls)-1]; got != tt.want {
				t.Errorf("last step = %s, want %s (calls %v)", got, tt.want, f.calls)
			}
			gen := r.st.Steps["Gen"]
			if tt.output != "" && gen.Output != tt.output {
				t.Errorf("Gen output = %q, want %q", gen.Output, tt.output)
			}
			if tt.output == "" && (gen.Signal != "SIGNAL:VALIDATION_FAIL" || gen.Error == nil || gen.Error.Code != "E_VALIDATION") {
				t.Errorf("Gen = %s %+v, want SIGNAL:VALIDATION_FAIL with E_VALIDATION", gen.Signal, gen.Error)
			}
		})
	}
}
