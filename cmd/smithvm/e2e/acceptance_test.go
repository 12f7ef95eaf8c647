package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The TestAcceptance* tests are the twelve "MVP Acceptance Tests" of seed 004,
// as CONTRACT sections 2-6 make them precise, one top-level test per case.

// TestAcceptanceHappyPathArtifacts checks acceptance case 01: the happy path creates all artifacts.
func TestAcceptanceHappyPathArtifacts(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	p.write("workspace/data.txt", "one\ntwo\nthree\n")
	wf := p.write("wf/happy.yaml", `version: "1.0"
name: happy
context: {feature: greeting}
steps:
  - name: Design
    provider: mock
    prompt: "Design the ${context.feature} feature."
    output_file: design.md
    on: {success: {goto: Copy}, failure: {error: "design failed"}}
  - name: Copy
    command: ["HELPER", "echo:copied"]
    input_file: data.txt
    output_file: copy.txt
    on: {success: {goto: Count}, failure: {error: "copy failed"}}
  - name: Count
    command: ["wc", "-l"]
    input_file: data.txt
    output_file: count.txt
    on: {success: {goto: Report}, failure: {error: "count failed"}}
  - name: Report
    command: ["printf", "%s|%s\n", "${steps.Design.output}", "${steps.Count.output}"]
    output_file: sub/report.txt
    on: {success: {goto: _end}, failure: {error: "report failed"}}
`)
	r := p.vm("run", wf)
	want(t, r, 0)
	id := r.runID()
	if !r.has("INFO: Run " + id + " completed.") {
		t.Errorf("stderr lacks %q:\n%s", "INFO: Run "+id+" completed.", r.stderr)
	}
	for _, tt := range []struct{ name, file, want string }{
		{"provider output", "workspace/artifacts/Design/design.md", "Design the greeting feature."},
		{"command output", "workspace/artifacts/Copy/copy.txt", "copied\n"},
		{"stdin from input_file", "workspace/artifacts/Count/count.txt", "3\n"},
		{"nested output_file", "workspace/artifacts/Report/sub/report.txt", "Design the greeting feature.|3\n"},
	} {
		if got := p.read(tt.file); strings.TrimSpace(got) != strings.TrimSpace(tt.want) {
			t.Errorf("%s: %s = %q, want %q", tt.name, tt.file, got, tt.want)
		}
	}
	st := p.state(id)
	if st.Status != "completed" || st.WorkflowName != "happy" || st.RunID != id {
		t.Errorf("state = status %q workflow %q run %q, want completed happy %s", st.Status, st.WorkflowName, st.RunID, id)
	}
	for _, s := range []string{"Design", "Copy", "Count", "Report"} {
		if got := st.Steps[s].Status; got != "completed" {
			t.Errorf("steps.%s.status = %q, want completed", s, got)
		}
	}
	if uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`); !uuid.MatchString(id) {
		t.Errorf("run id %q is not a UUID v4", id)
	}
	// The stderr log is created at a step's first byte of stderr: Copy writes none.
	if p.exists(".orchestrator/runs/" + id + "/logs/Copy-stderr.log") {
		t.Errorf("logs/Copy-stderr.log exists, but Copy wrote nothing to stderr")
	}
}

// TestAcceptanceDemoAgentOnlySteps checks acceptance case 01b: the demo with agent-only steps.
//
// The demo uses agent-only steps (agent: and no provider:): this is the
// one test of them.
func TestAcceptanceDemoAgentOnlySteps(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	demo, err := filepath.Abs("../../../examples/demo/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := p.vm("run", demo)
	want(t, r, 0)
	for _, f := range []string{"Design/design.md", "Implement/notes.md", "Write/hello.txt", "Write/world.txt", "Report/report.txt"} {
		if !p.exists("workspace/artifacts/" + f) {
			t.Errorf("artifact %s missing", f)
		}
	}
	if got := p.read("workspace/artifacts/Report/report.txt"); !strings.HasPrefix(got, "feature greeting: built\n") {
		t.Errorf("report.txt = %q, want prefix %q", got, "feature greeting: built\n")
	}
}

// TestAcceptanceTimeoutKillsGroup checks acceptance case 02: a timeout kills the process group and exits 124.
func TestAcceptanceTimeoutKillsGroup(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	wf := p.write("timeout.yaml", `version: "1.0"
name: timeout
steps:
  - name: Slow
    command: ["HELPER", "child:gc.pid:60", "pid:slow.pid", "sleep:60"]
    timeout: 1
    on: {success: {goto: _end}, failure: {error: "slow failed"}}
`)
	r := p.vm("run", wf)
	want(t, r, 124)
	st := p.state(r.runID())
	if s := st.Steps["Slow"]; s.ExitCode != 124 || s.Status != "failed" {
		t.Errorf("steps.Slow = status %q exit_code %d, want failed 124", s.Status, s.ExitCode)
	}
	for _, f := range []string{"slow.pid", "gc.pid"} {
		pid := pidIn(t, filepath.Join(p.ws, f))
		if !gone(pid, 5*time.Second) {
			t.Errorf("process %d (%s) still alive after the timeout", pid, f)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// TestAcceptanceRetrySecondAttempt checks acceptance case 03: a retry succeeds on the second attempt.
func TestAcceptanceRetrySecondAttempt(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	wf := p.write("retry.yaml", `version: "1.0"
name: retry
steps:
  - name: Flaky
    command: ["HELPER", "flaky:flaky.cnt:1", "echo:ok"]
    retry: {attempts: 3}
    on: {success: {goto: _end}, failure: {error: "flaky failed"}}
`)
	r := p.vm("run", wf)
	want(t, r, 0)
	if line := "WARNING: Step 'Flaky' attempt 1 failed with exit code 1; retrying in 2s."; !r.has(line) {
		t.Errorf("stderr lacks %q:\n%s", line, r.stderr)
	}
	id := r.runID()
	st := p.state(id)
	if s := st.Steps["Flaky"]; s.Attempts != 2 || s.Status != "completed" || s.Output != "ok" {
		t.Errorf("steps.Flaky = attempts %d status %q output %q, want 2 completed ok", s.Attempts, s.Status, s.Output)
	}
	if n := p.count("flaky.cnt"); n != 2 {
		t.Errorf("Flaky ran %d times, want 2", n)
	}
	// attempt_id is the try's number (seed 004's integer): the failed try's
	// events carry 1, the completion 2; each try has its own attempt_uid.
	var got []string
	uids := map[string]bool{}
	for _, ev := range p.events(id) {
		if ev.Step != "Flaky" {
			continue
		}
		got = append(got, fmt.Sprintf("%s:%d", ev.Event, ev.AttemptID))
		uids[ev.AttemptUID] = true
	}
	if g, w := strings.Join(got, " "), "step_started:1 step_retry:1 step_completed:2"; g != w {
		t.Errorf("events of Flaky (event:attempt_id) = %s, want %s", g, w)
	}
	if len(uids) != 2 || uids[""] {
		t.Errorf("events.jsonl has attempt_uids %v for Flaky, want 2 distinct", uids)
	}
}

// TestAcceptanceSecretsMasked checks acceptance case 04: secrets are injected and redacted everywhere.
func TestAcceptanceSecretsMasked(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-VALUE-4711"
	p := newProj(t)
	wf := p.write("secrets.yaml", `version: "1.0"
name: secrets
secrets: [MY_KEY]
steps:
  - name: Leak
    command: ["HELPER", "checkenv:MY_KEY:`+secret+`", "printenv:MY_KEY", "errenv:MY_KEY"]
    on: {success: {goto: Big}, failure: {error: "the secret was not injected"}}
  - name: Big
    command: ["HELPER", "printenv:MY_KEY", "bytes:1200000", "printenv:MY_KEY", "errenv:MY_KEY"]
    on: {success: {goto: Fail}, failure: {error: "big failed"}}
  - name: Fail
    command: ["HELPER", "exit:1"]
    on: {success: {goto: _end}, failure: {error: "fail at the end"}}
`)
	r := p.vmEnv(baseEnv("MY_KEY="+secret), "run", wf, "-v")
	want(t, r, 1)
	id := r.runID()
	if strings.Contains(r.stderr, secret) || strings.Contains(r.stdout, secret) {
		t.Errorf("the console shows the secret:\n%s", clip(r.stderr))
	}
	st := p.state(id)
	if got := st.Steps["Leak"].Output; got != "***" {
		t.Errorf("steps.Leak.output = %q, want %q", got, "***")
	}
	if got := st.Steps["Big"].Output; !strings.HasPrefix(got, "***\nxxx") {
		t.Errorf("steps.Big.output starts %q, want %q", got[:min(len(got), 10)], "***\nxxx")
	}
	spill := filepath.Join(p.runRoot(id), "logs", "Big-stdout.log")
	data, err := os.ReadFile(spill)
	if err != nil {
		t.Fatalf("spill file: %v", err)
	}
	if !bytes.HasPrefix(data, []byte("***\n")) || !bytes.HasSuffix(data, []byte("\n***\n")) {
		t.Errorf("spill file does not start and end with the masked secret")
	}
	for _, f := range []string{"Leak-stderr.log", "Big-stderr.log"} {
		if got, want := p.read(filepath.Join(".orchestrator/runs", id, "logs", f)), "--- attempt 1 ---\n***\n"; got != want {
			t.Errorf("logs/%s = %q, want %q", f, got, want)
		}
	}
	filepath.WalkDir(filepath.Join(p.base, ".orchestrator"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("%s contains the secret", path)
		}
		return nil
	})
}

// TestAcceptanceSecretInErrorMasked checks acceptance case 04b: a secret in an error message is substituted and masked.
func TestAcceptanceSecretInErrorMasked(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-VALUE-4712"
	p := newProj(t)
	wf := p.write("secrets.yaml", `version: "1.0"
name: secrets
secrets: [MY_KEY]
steps:
  - name: Fail
    command: ["HELPER", "exit:1"]
    on: {success: {goto: _end}, failure: {error: "key ${env.MY_KEY} rejected"}}
`)
	r := p.vmEnv(baseEnv("MY_KEY="+secret), "run", wf)
	want(t, r, 1)
	id := r.runID()
	if line := "ERROR: Run " + id + " failed: key *** rejected (at " + wf + ":7:42)."; !r.has(line) || strings.Contains(r.stderr, secret) {
		t.Errorf("stderr lacks %q:\n%s", line, r.stderr)
	}
	// CONTRACT 3.3: error: MSG prints ERROR: MSG.
	if line := "ERROR: key *** rejected"; !r.has(line) {
		t.Errorf("stderr lacks %q:\n%s", line, r.stderr)
	}
	if evs := p.read(filepath.Join(".orchestrator/runs", id, "logs", "events.jsonl")); !strings.Contains(evs, "key *** rejected") || strings.Contains(evs, secret) {
		t.Errorf("events.jsonl lacks the masked error message %q", "key *** rejected")
	}
}

// TestAcceptanceAbsoluteInputRefused checks acceptance case 05a: an absolute input_file is refused before anything runs.
func TestAcceptanceAbsoluteInputRefused(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	wf := p.write("abs.yaml", `version: "1.0"
name: abs
steps:
  - name: First
    command: ["HELPER", "count:first.cnt"]
    on: {success: {goto: Read}, failure: {error: "first failed"}}
  - name: Read
    command: ["cat"]
    input_file: /etc/hostname
    on: {success: {goto: _end}, failure: {error: "read failed"}}
`)
	r := p.vm("run", wf)
	want(t, r, 3)
	if !strings.Contains(r.stderr, "E_PATH_ESCAPE") {
		t.Errorf("stderr lacks E_PATH_ESCAPE:\n%s", r.stderr)
	}
	if n := p.count("first.cnt"); n != 0 || len(p.runs()) != 0 {
		t.Errorf("a step ran (%d) or a run was created (%v)", n, p.runs())
	}
}

// TestAcceptanceDotDotEscapeRefused checks acceptance case 05b: a dot-dot escape is refused before anything runs.
func TestAcceptanceDotDotEscapeRefused(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	p.write("secret.txt", "outside\n")
	wf := p.write("dots.yaml", `version: "1.0"
name: dots
steps:
  - name: First
    command: ["HELPER", "count:first.cnt"]
    on: {success: {goto: Read}, failure: {error: "first failed"}}
  - name: Read
    command: ["cat"]
    input_file: ../../secret.txt
    output_file: ../../stolen.txt
    on: {success: {goto: _end}, failure: {error: "read failed"}}
`)
	r := p.vm("run", wf)
	want(t, r, 3)
	if !strings.Contains(r.stderr, "E_PATH_ESCAPE") {
		t.Errorf("stderr lacks E_PATH_ESCAPE:\n%s", r.stderr)
	}
	if n := p.count("first.cnt"); n != 0 || len(p.runs()) != 0 || p.exists("stolen.txt") {
		t.Errorf("a step ran (%d), a run was created (%v) or a file was written", n, p.runs())
	}
}

// TestAcceptanceSymlinkEscape checks acceptance case 05c: a symlink in WORKSPACE at run time.
func TestAcceptanceSymlinkEscape(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		io   string
		// preRun: the violation is found before the step's process starts.
		preRun bool
		msg    string
	}{
		{"input_file through a symlink", "input_file: link/data.txt", true, "passes through the symlink 'link'"},
		{"output_file through a symlinked artifacts dir", "output_file: out.txt", false, "passes through the symlink 'artifacts/Use'"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newProj(t)
			p.write("outside/data.txt", "outside\n")
			wf := p.write("link.yaml", `version: "1.0"
name: link
steps:
  - name: Link
    command: ["HELPER", "symlink:BASE/outside:link", "symlink:BASE/outside:artifacts/Use"]
    on: {success: {goto: Use}, failure: {error: "link failed"}}
  - name: Use
    command: ["HELPER", "count:use.cnt", "echo:written"]
    `+tt.io+`
    on: {success: {goto: _end}, failure: {error: "use failed"}}
`)
			r := p.vm("run", wf)
			want(t, r, 3)
			if e := p.state(r.runID()).Steps["Use"].Error; e == nil || e.Code != "E_PATH_ESCAPE" {
				t.Errorf("steps.Use.error = %+v, want code E_PATH_ESCAPE", e)
			}
			if !strings.Contains(r.stderr, tt.msg) {
				t.Errorf("stderr lacks %q:\n%s", tt.msg, r.stderr)
			}
			if n := p.count("use.cnt"); n != 0 && tt.preRun {
				t.Errorf("step Use ran %d times, want 0 (its input_file is refused before it starts)", n)
			}
			ents, _ := os.ReadDir(filepath.Join(p.base, "outside"))
			if len(ents) != 1 {
				t.Errorf("BASE/outside has %d entries, want 1 (nothing written through the link)", len(ents))
			}
		})
	}
}

// TestAcceptanceResumeFromFailedStep checks acceptance case 06: resume continues from the failed step.
func TestAcceptanceResumeFromFailedStep(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	const text = `version: "1.0"
name: resume
context: {x: default}
steps:
  - name: A
    command: ["HELPER", "count:a.cnt"]
    on: {success: {goto: B}, failure: {error: "A failed"}}
  - name: B
    command: ["HELPER", "count:b.cnt", "exit:BEXIT"]
    on: {success: {goto: C}, failure: {error: "B failed"}}
  - name: C
    command: ["HELPER", "count:c.cnt", "echo:x=${context.x}"]
    on: {success: {goto: _end}, failure: {error: "C failed"}}
`
	wf := p.write("resume.yaml", strings.Replace(text, "BEXIT", "1", 1))
	r := p.vm("run", wf, "--context", "x=orig")
	want(t, r, 1)
	id := r.runID()
	if st := p.state(id); st.Status != "failed" || st.CurrentStep != "B" {
		t.Errorf("after the failure: status %q current_step %q, want failed B", st.Status, st.CurrentStep)
	}
	// The run's failure names the failure: handler's source position.
	if line := "ERROR: Run " + id + " failed: B failed (at " + wf + ":10:39)."; !r.has(line) {
		t.Errorf("stderr lacks %q:\n%s", line, r.stderr)
	}
	p.write("resume.yaml", strings.Replace(text, "BEXIT", "0", 1))
	r = p.vm("resume", id)
	want(t, r, 0)
	for _, tt := range []struct {
		file string
		want int
	}{{"a.cnt", 1}, {"b.cnt", 2}, {"c.cnt", 1}} {
		if got := p.count(tt.file); got != tt.want {
			t.Errorf("%s = %d runs, want %d", tt.file, got, tt.want)
		}
	}
	if st := p.state(id); st.Status != "completed" || st.Steps["C"].Status != "completed" {
		t.Errorf("after resume: status %q, C %q, want completed", st.Status, st.Steps["C"].Status)
	}
	checkEvents(t, p.events(id))
	if got := p.state(id).Steps["C"].Output; got != "x=orig" {
		t.Errorf("after resume: steps.C.output = %q, want %q (the run's original context)", got, "x=orig")
	}
	r = p.vm("resume", id)
	want(t, r, 0)
	if got := p.count("a.cnt") + p.count("b.cnt") + p.count("c.cnt"); got != 4 {
		t.Errorf("resuming a completed run ran steps again (%d runs in all, want 4)", got)
	}
}

// TestAcceptanceStateTracking checks acceptance case 07: state tracking, console lines and events.
func TestAcceptanceStateTracking(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	p.write(".gitignore", ".orchestrator/\n")
	wf := p.write("tracking.yaml", `version: "1.0"
name: tracking
steps:
  - name: A
    command: ["HELPER", "echo:a"]
    on: {success: {goto: P}, failure: {error: "A failed"}}
  - name: P
    command: ["HELPER", "exit:2"]
    on: {success: {goto: R}, failure: {goto: R}}
  - name: R
    when: {step_ok: P}
    command: ["HELPER", "count:r.cnt"]
    on: {success: {goto: Z}, failure: {goto: Z}}
  - name: Z
    command: ["HELPER", "exit:3"]
    on: {success: {goto: _end}, failure: {error: "Z broke"}}
`)
	r := p.vm("run", wf, "--run-id", "track-1")
	want(t, r, 1)
	wantLines := []string{
		`INFO: Run track-1 started \(workflow 'tracking'\)\.`,
		`INFO: Step 'A' starting\.`,
		`INFO: Step 'A' completed successfully in ` + durationRE + `\.`,
		`INFO: Step 'P' starting\.`,
		`ERROR: Step 'P' failed with exit code 2 in ` + durationRE + `\.`,
		`INFO: Step 'R' skipped \(condition false\)\.`,
		`INFO: Step 'Z' starting\.`,
		`ERROR: Step 'Z' failed with exit code 3 in ` + durationRE + `\.`,
		`ERROR: Run track-1 failed: Z broke \(at ` + regexp.QuoteMeta(wf) + `:16:42\)\.`,
	}
	got := r.lines()
	// The contract's lines, in order; other lines may come between.
	i := 0
	for _, l := range got {
		if i < len(wantLines) && regexp.MustCompile("^"+wantLines[i]+"$").MatchString(l) {
			i++
		}
	}
	if i < len(wantLines) {
		t.Errorf("stderr lacks the line matching %q (in order):\n%s", wantLines[i], r.stderr)
	}
	if strings.Contains(r.stderr, "\r") || strings.Contains(r.stderr, "\033[") {
		t.Errorf("stderr is not a terminal but has a progress line:\n%q", r.stderr)
	}
	if p.count("r.cnt") != 0 {
		t.Errorf("the skipped step R ran")
	}
	st := p.state("track-1")
	for _, tt := range []struct{ step, status string }{{"A", "completed"}, {"P", "failed"}, {"R", "skipped"}, {"Z", "failed"}} {
		if got := st.Steps[tt.step].Status; got != tt.status {
			t.Errorf("steps.%s.status = %q, want %q", tt.step, got, tt.status)
		}
	}
	evs := p.events("track-1")
	if len(evs) == 0 {
		t.Fatal("events.jsonl is empty")
	}
	prev := 0
	attempts := map[string]string{} // step -> attempt_uid
	for i, ev := range evs {
		if ev.Seq == nil || *ev.Seq <= prev && i > 0 {
			t.Errorf("event %d: event_seq %v after %d, want strictly increasing", i, ev.Seq, prev)
		}
		if ev.Seq != nil {
			prev = *ev.Seq
		}
		if ev.Timestamp == "" || ev.RunID != "track-1" || ev.Level == "" || ev.Event == "" {
			t.Errorf("event %d = %+v, want timestamp, run_id, level and event", i, ev)
		}
		switch ev.Event {
		case "step_started":
			if ev.AttemptID != 1 || ev.AttemptUID == "" {
				t.Errorf("event %d (step_started %s) has attempt_id %d, attempt_uid %q, want 1 and an id", i, ev.Step, ev.AttemptID, ev.AttemptUID)
			}
			for s, a := range attempts {
				if a == ev.AttemptUID {
					t.Errorf("steps %s and %s share attempt_uid %q", s, ev.Step, a)
				}
			}
			attempts[ev.Step] = ev.AttemptUID
		case "step_completed", "step_failed":
			if ev.AttemptID != 1 || ev.AttemptUID != attempts[ev.Step] || ev.Duration == nil || ev.ExitCode == nil {
				t.Errorf("event %d = %+v, want attempt_id 1, attempt_uid %q, duration and exit_code", i, ev, attempts[ev.Step])
			}
		}
	}
	if len(attempts) != 3 {
		t.Errorf("events.jsonl has step_started for %d steps, want 3 (A, P, Z)", len(attempts))
	}
}

// TestAcceptanceFreshRunRerunsAll checks acceptance case 08: a fresh execution runs every step again.
func TestAcceptanceFreshRunRerunsAll(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	wf := p.write("fresh.yaml", `version: "1.0"
name: fresh
steps:
  - name: One
    command: ["HELPER", "count:one.cnt"]
    output_file: one.txt
    on: {success: {goto: Two}, failure: {error: "one failed"}}
  - name: Two
    command: ["HELPER", "count:two.cnt"]
    on: {success: {goto: _end}, failure: {error: "two failed"}}
`)
	r1 := p.vm("run", wf)
	want(t, r1, 0)
	r2 := p.vm("run", wf, "--json")
	want(t, r2, 0)
	var st stateFile
	if err := json.Unmarshal([]byte(r2.stdout), &st); err != nil || st.Status != "completed" || st.RunID != r2.runID() {
		t.Errorf("run --json: stdout is not the final state (%v):\n%s", err, r2.stdout)
	}
	if r1.runID() == r2.runID() {
		t.Errorf("two runs share the id %s", r1.runID())
	}
	if a, b := p.count("one.cnt"), p.count("two.cnt"); a != 2 || b != 2 {
		t.Errorf("steps ran %d and %d times, want 2 and 2", a, b)
	}
}

// TestAcceptanceWhenStepOK checks acceptance case 09: when.step_ok gates steps.
func TestAcceptanceWhenStepOK(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	wf := p.write("cond.yaml", `version: "1.0"
name: cond
steps:
  - name: Good
    command: ["HELPER", "echo:good"]
    on: {success: {goto: Bad}, failure: {error: "good failed"}}
  - name: Bad
    command: ["HELPER", "exit:1"]
    on: {success: {goto: AfterBad}, failure: {goto: AfterBad}}
  - name: AfterBad
    when: {step_ok: Bad}
    command: ["HELPER", "count:afterbad.cnt"]
    on: {success: {goto: AfterGood}, failure: {error: "afterbad failed"}}
  - name: AfterGood
    when: {all: [{step_ok: Good}, {not: {step_ok: Bad}}]}
    command: ["HELPER", "count:aftergood.cnt"]
    on: {success: {goto: _end}, failure: {error: "aftergood failed"}}
`)
	r := p.vm("run", wf)
	want(t, r, 0)
	if a, b := p.count("afterbad.cnt"), p.count("aftergood.cnt"); a != 0 || b != 1 {
		t.Errorf("AfterBad ran %d times, AfterGood %d, want 0 and 1", a, b)
	}
	st := p.state(r.runID())
	if st.Steps["AfterBad"].Status != "skipped" || st.Steps["AfterGood"].Status != "completed" {
		t.Errorf("AfterBad %q AfterGood %q, want skipped completed", st.Steps["AfterBad"].Status, st.Steps["AfterGood"].Status)
	}
}

// TestAcceptanceRunStep checks acceptance case 10: run-step writes artifacts and leaves prior runs alone.
func TestAcceptanceRunStep(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	wf := p.write("rs.yaml", `version: "1.0"
name: rs
context: {who: world}
steps:
  - name: First
    command: ["HELPER", "count:first.cnt"]
    on: {success: {goto: Greet}, failure: {error: "first failed"}}
  - name: Greet
    command: ["HELPER", "count:greet.cnt", "echo:hello ${context.who}"]
    output_file: greeting.txt
    on: {success: {goto: _end}, failure: {error: "greet failed"}}
`)
	r := p.vm("run", wf, "--run-id", "prior")
	want(t, r, 0)
	before, err := os.ReadFile(filepath.Join(p.runRoot("prior"), "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(p.ws, "artifacts", "Greet", "greeting.txt"))
	r = p.vm("run-step", wf, "Greet", "--context", "who=smith")
	want(t, r, 0)
	if got := p.read("workspace/artifacts/Greet/greeting.txt"); got != "hello smith\n" {
		t.Errorf("artifacts/Greet/greeting.txt = %q, want %q", got, "hello smith\n")
	}
	if a, b := p.count("first.cnt"), p.count("greet.cnt"); a != 1 || b != 2 {
		t.Errorf("First ran %d times, Greet %d, want 1 and 2", a, b)
	}
	after, err := os.ReadFile(filepath.Join(p.runRoot("prior"), "state.json"))
	if err != nil || !bytes.Equal(before, after) {
		t.Errorf("run-step changed the prior run's state.json (err %v)", err)
	}
	if ids := p.runs(); len(ids) != 2 {
		t.Errorf("runs = %v, want the prior run and one ephemeral run", ids)
	}
	r = p.vm("run-step", wf, "Gret")
	want(t, r, 2)
	if !strings.Contains(r.stderr, "did you mean 'Greet'?") {
		t.Errorf("stderr lacks a did-you-mean for an unknown step:\n%s", r.stderr)
	}
}

// TestAcceptanceArgSubstitution checks acceptance case 11: substitution in command args.
func TestAcceptanceArgSubstitution(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	wf := p.write("subst.yaml", `version: "1.0"
name: subst
context: {x: default-x}
steps:
  - name: Echo
    command: ["HELPER", "echo:x=${context.x} $$HOME ${{ keep }}"]
    output_file: echo.txt
    on: {success: {goto: _end}, failure: {error: "echo failed"}}
`)
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"workflow context", nil, "x=default-x $HOME ${{ keep }}\n"},
		{"--context override", []string{"--context", "x=over ride"}, "x=over ride $HOME ${{ keep }}\n"},
		{"--context-file", []string{"--context-file", p.write("ctx.json", `{"x": "from file"}`)}, "x=from file $HOME ${{ keep }}\n"},
		{"--context wins over --context-file", []string{"--context-file", p.write("ctx.json", `{"x": "from file"}`), "--context", "x=flag"}, "x=flag $HOME ${{ keep }}\n"},
	} {
		r := p.vm(append([]string{"run", wf}, tt.args...)...)
		want(t, r, 0)
		if got := p.read("workspace/artifacts/Echo/echo.txt"); got != tt.want {
			t.Errorf("%s: echo.txt = %q, want %q", tt.name, got, tt.want)
		}
	}
	n := len(p.runs())
	missing := p.write("missing.yaml", `version: "1.0"
name: missing
context: {x: 1}
steps:
  - name: First
    command: ["HELPER", "count:first.cnt"]
    on: {success: {goto: Use}, failure: {error: "first failed"}}
  - name: Use
    command: ["HELPER", "echo:${context.nope}"]
    on: {success: {goto: _end}, failure: {error: "use failed"}}
`)
	r := p.vm("run", missing)
	want(t, r, 2)
	if !strings.Contains(r.stderr, "E_VAR_MISSING") {
		t.Errorf("stderr lacks E_VAR_MISSING:\n%s", r.stderr)
	}
	if p.count("first.cnt") != 0 || len(p.runs()) != n {
		t.Errorf("a step ran or a run was created before the missing variable was reported")
	}
	r = p.vm("run", missing, "--context", "nope=given")
	want(t, r, 0)
}

// TestAcceptanceFileExistsInWorkspace checks acceptance case 12: file_exists resolves against WORKSPACE.
func TestAcceptanceFileExistsInWorkspace(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	p.write("flag.txt", "in BASE, not in WORKSPACE\n")
	wf := p.write("fe.yaml", `version: "1.0"
name: fe
steps:
  - name: IfWorkspace
    when: {file_exists: flag.txt}
    command: ["HELPER", "count:ws.cnt"]
    on: {success: {goto: _end}, failure: {error: "failed"}}
`)
	r := p.vm("run", wf)
	want(t, r, 0)
	if got := p.state(r.runID()).Steps["IfWorkspace"].Status; got != "skipped" || p.count("ws.cnt") != 0 {
		t.Errorf("with BASE/flag.txt only: status %q, want skipped", got)
	}
	p.write("workspace/flag.txt", "here\n")
	r = p.vm("run", wf)
	want(t, r, 0)
	if got := p.state(r.runID()).Steps["IfWorkspace"].Status; got != "completed" || p.count("ws.cnt") != 1 {
		t.Errorf("with WORKSPACE/flag.txt: status %q, want completed", got)
	}
	esc := p.write("esc.yaml", `version: "1.0"
name: esc
steps:
  - name: Peek
    when: {file_exists: ../../flag.txt}
    command: ["HELPER", "count:peek.cnt"]
    on: {success: {goto: _end}, failure: {error: "failed"}}
`)
	n := len(p.runs())
	r = p.vm("run", esc)
	want(t, r, 3)
	if !strings.Contains(r.stderr, "E_PATH_ESCAPE") || p.count("peek.cnt") != 0 || len(p.runs()) != n {
		t.Errorf("an escaping file_exists: want E_PATH_ESCAPE before anything runs:\n%s", r.stderr)
	}
}
