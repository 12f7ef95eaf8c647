package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// leakSecret is the secret value of the hostile tests' LEAK_KEY.
const leakSecret = "Sk-Hostile-4242"

// noSecretUnder fails when any file under dir holds the secret.
func noSecretUnder(t *testing.T, dir, secret string) {
	t.Helper()
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), secret) {
			t.Errorf("%s holds the secret", path)
		}
		return nil
	})
}

// TestSecretRoutes: a secret reaches no file of the run and no --json or
// status --json output, whichever way it enters: set_context, a json
// capture with the secret \u-escaped, for_each items, --context (issue 8,
// point 1).
func TestSecretRoutes(t *testing.T) {
	t.Parallel()
	routes := []struct {
		name, wf string
		args     []string
	}{
		{"set_context", `version: "1.0"
name: leak
secrets: [LEAK_KEY]
strict_flow: false
steps:
  - name: Set
    set_context: {copied: "${env.LEAK_KEY}", nested: {deep: "x ${env.LEAK_KEY} y"}}
`, nil},
		{"json capture of an escaped secret", `version: "1.0"
name: leak
secrets: [LEAK_KEY]
strict_flow: false
steps:
  - name: Json
    command: ["HELPER", 'echo:{"k": "Sk-Hostile-42\u00342", "Sk-Hostile-42\u00342": [1]}']
    output_capture: json
  - name: Use
    set_context: {got: "${steps.Json.json.k}"}
`, nil},
		{"for_each items", `version: "1.0"
name: leak
secrets: [LEAK_KEY]
strict_flow: false
steps:
  - name: Each
    for_each:
      items: ["${env.LEAK_KEY}", "plain"]
      steps:
        - name: Body
          command: ["HELPER", "echo:x"]
`, nil},
		{"--context value", `version: "1.0"
name: leak
secrets: [LEAK_KEY]
strict_flow: false
steps:
  - name: One
    command: ["HELPER", "echo:x"]
`, []string{"--context", "given=" + leakSecret}},
	}
	for _, rt := range routes {
		t.Run(rt.name, func(t *testing.T) {
			t.Parallel()
			p := newProj(t)
			wf := p.write("leak.yaml", rt.wf)
			env := baseEnv("LEAK_KEY=" + leakSecret)
			r := p.vmEnv(env, append([]string{"run", wf, "--run-id", "leak", "--json"}, rt.args...)...)
			want(t, r, 0)
			if strings.Contains(r.stdout, leakSecret) || strings.Contains(r.stderr, leakSecret) {
				t.Errorf("run --json printed the secret:\n%s", clip(r.stdout))
			}
			s := p.vmEnv(env, "status", "leak", "--json")
			want(t, s, 0)
			if strings.Contains(s.stdout, leakSecret) {
				t.Errorf("status --json printed the secret:\n%s", clip(s.stdout))
			}
			noSecretUnder(t, p.base, leakSecret)
		})
	}
}

// killDuringStep starts args, waits for the step to write pidFile (under
// WORKSPACE), SIGKILLs smithvm, waits for it and returns the step's pid.
func killDuringStep(t *testing.T, p *proj, pidFile string, args ...string) int {
	t.Helper()
	run := p.start(args...)
	path := filepath.Join(p.ws, pidFile)
	waitFor(t, 20*time.Second, pidFile, func() bool {
		b, err := os.ReadFile(path)
		return err == nil && len(b) > 0
	})
	pid := pidIn(t, path)
	run.cmd.Process.Signal(syscall.SIGKILL)
	if r := run.wait(t); r.code != 128+int(syscall.SIGKILL) {
		t.Fatalf("smithvm exit %d, want killed:\n%s", r.code, r.stderr)
	}
	os.Remove(path)
	return pid
}

// TestCrashInMaxVisitsStep: a crash while a max_visits step runs does not
// use up a visit, so the resumed run ends as an uninterrupted one (issue 8,
// point 2).
func TestCrashInMaxVisitsStep(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, file, text string }{
		{"yaml", "mv.yaml", `version: "1.0"
name: mv
steps:
  - name: A
    max_visits: 1
    command: ["HELPER", "pid:a.pid", "wait:go"]
    on: {success: {goto: _end}, failure: {error: "A failed"}}
`},
		{"manifest", "mv.json", `{
  "version": "1",
  "entry": "Main",
  "workers": {"Command:A": {"command": ["HELPER", "pid:a.pid", "wait:go"]}},
  "nodes": {"Main": {"entry_block": "A", "blocks": {
    "A": {"worker": "Command:A", "max_visits": 1, "transitions": [
      {"on_signal": "SIGNAL:SUCCESS", "action": "END"},
      {"on_signal": "SIGNAL:MAX_VISITS", "action": "HALT_AND_FLAG"},
      {"on_signal": "SIGNAL:FAIL_DEFAULT", "action": "FAIL:A failed"}]}}}}
}
`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := newProj(t)
			wf := p.write(c.file, c.text)
			killDuringStep(t, p, "a.pid", "run", wf, "--run-id", "mv")
			p.write("workspace/go", "")
			r := p.vm("resume", "mv")
			want(t, r, 0)
			if st := p.state("mv"); st.Status != "completed" {
				t.Errorf("status %q after resume, want completed", st.Status)
			}
		})
	}
}

// TestKillInFirstMilliseconds: a SIGKILL in the first milliseconds of run
// leaves the run id usable: resume finishes it, or (when nothing was saved)
// run --run-id starts it again (issue 8, point 3).
func TestKillInFirstMilliseconds(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	wf := p.write("early.yaml", `version: "1.0"
name: early
steps:
  - name: A
    command: ["HELPER", "echo:a"]
    on: {success: {goto: _end}, failure: {error: "A failed"}}
`)
	stillborn := 0
	for i := 0; i < 12; i++ {
		id := fmt.Sprintf("early%d", i)
		run := p.start("run", wf, "--run-id", id)
		time.Sleep(time.Duration(i*3) * time.Millisecond)
		run.cmd.Process.Signal(syscall.SIGKILL)
		run.wait(t)
		if _, err := os.Stat(p.runRoot(id)); err != nil {
			continue // killed before the run existed
		}
		r := p.vm("resume", id)
		if r.code != 0 {
			if !strings.Contains(r.stderr, "E_STATE_CORRUPT") || !strings.Contains(r.stderr, "--run-id "+id) {
				t.Errorf("%s: resume exit %d without the way out:\n%s", id, r.code, r.stderr)
			}
			stillborn++
			want(t, p.vm("run", wf, "--run-id", id), 0)
		}
		if st := p.state(id); st.Status != "completed" {
			t.Errorf("%s: status %q, want completed", id, st.Status)
		}
	}
	t.Logf("%d of 12 kills left a run without state", stillborn)
}

// TestOutputFileConfinedToWorkspace: output_file cannot leave WORKSPACE,
// not even into BASE (another run's state.json), literally or through a
// reference; "", "." and a path ending in "/" name no file and are check
// errors (issue 8, point 5).
func TestOutputFileConfinedToWorkspace(t *testing.T) {
	t.Parallel()
	step := func(out string) string {
		return `version: "1.0"
name: out
context: {p: "../../../.orchestrator/runs/victim/state.json"}
steps:
  - name: W
    command: ["HELPER", "echo:overwritten"]
    output_file: ` + out + `
    on: {success: {goto: _end}, failure: {error: "W failed"}}
`
	}
	for _, tt := range []struct {
		name, out string
		exit      int
		code      string
	}{
		{"into .orchestrator", `"../../../.orchestrator/runs/victim/state.json"`, 3, "E_PATH_ESCAPE"},
		{"into BASE", `"../../../x.txt"`, 3, "E_PATH_ESCAPE"},
		{"through a reference", `"${context.p}"`, 3, "E_PATH_ESCAPE"},
		{"empty", `""`, 2, "E_SCHEMA"},
		{"dot", `"."`, 2, "E_SCHEMA"},
		{"trailing slash", `"out/"`, 2, "E_SCHEMA"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newProj(t)
			victim := p.write(".orchestrator/runs/victim/state.json", `{"run_id": "victim"}`)
			wf := p.write("out.yaml", step(tt.out))
			r := p.vm("run", wf, "--run-id", "o")
			want(t, r, tt.exit)
			if !strings.Contains(r.stderr, tt.code) {
				t.Errorf("stderr lacks %s:\n%s", tt.code, r.stderr)
			}
			if b, _ := os.ReadFile(victim); string(b) != `{"run_id": "victim"}` {
				t.Errorf("another run's state.json was overwritten: %q", b)
			}
			if p.exists("x.txt") {
				t.Errorf("BASE/x.txt was written")
			}
			if fi, err := os.Stat(filepath.Join(p.ws, "artifacts", "W")); err == nil && !fi.IsDir() {
				t.Errorf("the artifact folder became a file")
			}
		})
	}
}

// lineWith returns the first stderr line of r that starts with prefix and
// holds code, or "".
func lineWith(r result, prefix, code string) string {
	for _, l := range r.lines() {
		if strings.HasPrefix(l, prefix) && strings.Contains(l, code) {
			return l
		}
	}
	return ""
}

// TestConsoleCodes: runtime errors print their code in the console line, as
// smithc check does; a symlink violation is E_PATH_ESCAPE like the others
// (issue 8, point 11).
func TestConsoleCodes(t *testing.T) {
	t.Parallel()
	const two = `version: "1.0"
name: codes
context: {in: "../../../etc/passwd"}
steps:
  - name: A
    command: ["HELPER", "echo:a"]
    on: {success: {goto: B}, failure: {error: "A failed"}}
  - name: B
    command: ["HELPER", "echo:b"]
    input_file: "INPUT"
    on: {success: {goto: _end}, failure: {error: "B failed"}}
`
	t.Run("step budget", func(t *testing.T) {
		t.Parallel()
		p := newProj(t)
		wf := p.write("c.yaml", strings.Replace(two, "INPUT", "in.txt", 1))
		p.write("workspace/in.txt", "x")
		r := p.vm("run", wf, "--max-steps", "1")
		want(t, r, 1)
		if lineWith(r, "ERROR: Run ", "E_STEP_BUDGET") == "" {
			t.Errorf("no console line with E_STEP_BUDGET:\n%s", r.stderr)
		}
	})
	t.Run("path escape", func(t *testing.T) {
		t.Parallel()
		p := newProj(t)
		wf := p.write("c.yaml", strings.Replace(two, "INPUT", "${context.in}", 1))
		r := p.vm("run", wf)
		want(t, r, 3)
		if lineWith(r, "ERROR: Step 'B' failed", "E_PATH_ESCAPE") == "" {
			t.Errorf("no step line with E_PATH_ESCAPE:\n%s", r.stderr)
		}
	})
	t.Run("symlink", func(t *testing.T) {
		t.Parallel()
		p := newProj(t)
		wf := p.write("c.yaml", strings.Replace(two, "INPUT", "link/in.txt", 1))
		p.write("workspace/real/in.txt", "x")
		if err := os.Symlink(filepath.Join(p.ws, "real"), filepath.Join(p.ws, "link")); err != nil {
			t.Fatal(err)
		}
		r := p.vm("run", wf)
		want(t, r, 3)
		if lineWith(r, "ERROR: Step 'B' failed", "E_PATH_ESCAPE") == "" {
			t.Errorf("no step line with E_PATH_ESCAPE:\n%s", r.stderr)
		}
	})
}

// nested returns a JSON object nested n levels deep: {"a":{"a":...1}}.
func nested(n int) string {
	return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n)
}

// TestDeepValues: a context nested deeper than the bound is a load error
// (E_PARSE, exit 2) in both formats and in --context-file; a step's json
// capture nested too deep fails the step (E_LIMIT) and the run's state
// stays readable (issue 8, point 6).
func TestDeepValues(t *testing.T) {
	t.Parallel()
	const deep = 150
	t.Run("yaml context", func(t *testing.T) {
		t.Parallel()
		p := newProj(t)
		wf := p.write("d.yaml", "version: \"1.0\"\nname: d\ncontext: {c: "+nested(deep)+"}\nsteps:\n  - name: A\n    command: [\"HELPER\", \"echo:a\"]\n    on: {success: {goto: _end}, failure: {error: \"A failed\"}}\n")
		r := p.vm("run", wf)
		want(t, r, 2)
		if !strings.Contains(r.stderr, "E_PARSE") || !strings.Contains(r.stderr, "deeper than") {
			t.Errorf("stderr:\n%s", r.stderr)
		}
	})
	t.Run("manifest context", func(t *testing.T) {
		t.Parallel()
		p := newProj(t)
		wf := p.write("d.json", `{"version": "1", "entry": "Main", "context": {"c": `+nested(deep)+`},
  "workers": {"Command:A": {"command": ["HELPER", "echo:a"]}},
  "nodes": {"Main": {"entry_block": "A", "blocks": {"A": {"worker": "Command:A", "transitions": [
    {"on_signal": "SIGNAL:SUCCESS", "action": "END"}, {"on_signal": "SIGNAL:FAIL_DEFAULT", "action": "FAIL:A failed"}]}}}}}`)
		r := p.vm("run", wf)
		want(t, r, 2)
		if !strings.Contains(r.stderr, "E_PARSE") || !strings.Contains(r.stderr, "deeper than") {
			t.Errorf("stderr:\n%s", r.stderr)
		}
	})
	t.Run("--context-file", func(t *testing.T) {
		t.Parallel()
		p := newProj(t)
		wf := p.write("d.yaml", "version: \"1.0\"\nname: d\nsteps:\n  - name: A\n    command: [\"HELPER\", \"echo:a\"]\n    on: {success: {goto: _end}, failure: {error: \"A failed\"}}\n")
		cf := p.write("ctx.json", `{"c": `+nested(deep)+`}`)
		r := p.vm("run", wf, "--context-file", cf)
		want(t, r, 2)
		if !strings.Contains(r.stderr, "deeper than") {
			t.Errorf("stderr:\n%s", r.stderr)
		}
	})
	t.Run("json capture", func(t *testing.T) {
		t.Parallel()
		p := newProj(t)
		p.write("workspace/deep.json", nested(9990))
		wf := p.write("d.yaml", `version: "1.0"
name: d
steps:
  - name: J
    command: ["HELPER", "cat"]
    input_file: deep.json
    output_capture: json
    on: {success: {goto: _end}, failure: {error: "J failed"}}
`)
		r := p.vm("run", wf, "--run-id", "d")
		want(t, r, 1)
		if lineWith(r, "ERROR: Step 'J' failed", "E_LIMIT") == "" {
			t.Errorf("no E_LIMIT step line:\n%s", r.stderr)
		}
		if s := p.vm("status", "d"); s.code != 0 {
			t.Errorf("status after the deep capture: exit %d\n%s", s.code, s.stderr)
		}
		if fi, err := os.Stat(filepath.Join(p.runRoot("d"), "state.json")); err != nil || fi.Size() > 1<<20 {
			t.Errorf("state.json: %v, size %v", err, fi)
		}
	})
}

// TestNoChildOutlivesItsStep: what a step started dies with the step, even
// when the step succeeds, even double-forked into its own session; after a
// SIGKILL of smithvm, resume kills what the dead attempt left before the
// step runs again (issue 8, point 7).
func TestNoChildOutlivesItsStep(t *testing.T) {
	t.Parallel()
	t.Run("background child of a successful step", func(t *testing.T) {
		t.Parallel()
		p := newProj(t)
		wf := p.write("bg.yaml", `version: "1.0"
name: bg
steps:
  - name: A
    command: ["HELPER", "child:c.pid:30", "daemon:d.pid:30", "wait:c.pid", "wait:d.pid", "echo:done"]
    on: {success: {goto: _end}, failure: {error: "A failed"}}
`)
		want(t, p.vm("run", wf), 0)
		for _, f := range []string{"c.pid", "d.pid"} {
			pid := pidIn(t, filepath.Join(p.ws, f))
			if !gone(pid, 5*time.Second) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("%s: process %d outlived its step", f, pid)
			}
		}
	})
	t.Run("what a killed attempt left", func(t *testing.T) {
		t.Parallel()
		p := newProj(t)
		wf := p.write("k.yaml", `version: "1.0"
name: k
steps:
  - name: A
    command: ["HELPER", "child:c.pid:30", "pid:a.pid", "wait:go"]
    on: {success: {goto: _end}, failure: {error: "A failed"}}
`)
		leader := killDuringStep(t, p, "a.pid", "run", wf, "--run-id", "k")
		child := pidIn(t, filepath.Join(p.ws, "c.pid"))
		os.Remove(filepath.Join(p.ws, "c.pid"))
		p.write("workspace/go", "")
		want(t, p.vm("resume", "k"), 0)
		for _, pid := range []int{leader, child} {
			if !gone(pid, 5*time.Second) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("process %d of the killed attempt outlived the resume", pid)
			}
		}
		if b, err := os.ReadFile(filepath.Join(p.ws, "c.pid")); err == nil {
			// (The resumed attempt's child may die before it writes its pid.)
			if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid > 0 && !gone(pid, 5*time.Second) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("the resumed attempt's child %d outlived its step", pid)
			}
		}
	})
}

// TestNoLeftoverTemps: the temporary files a kill in the middle of a write
// leaves (confine's ".NAME.tmp-XXXX" in WORKSPACE and its artifacts,
// RUN_ROOT/tmp) are gone after a successful resume; a user's own file of a
// similar name stays (issue 8, point 10).
func TestNoLeftoverTemps(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	wf := p.write("t.yaml", `version: "1.0"
name: t
steps:
  - name: A
    command: ["HELPER", "once:failed-once", "exit:1"]
    output_file: a.txt
    on: {success: {goto: _end}, failure: {error: "A failed"}}
`)
	want(t, p.vm("run", wf, "--run-id", "t"), 1)
	left := []string{
		"workspace/.x.go.tmp-ABCDEFGHIJKLMNOPQRSTUVWXYZ",
		"workspace/sub/.y.tmp-ABCDEFGHIJKLMNOPQRSTUV2345",
		"workspace/artifacts/A/.a.txt.tmp-ABCDEFGHIJKLMNOPQRSTUV2345",
		".orchestrator/runs/t/tmp/A-payload-123.json",
		".orchestrator/runs/t/.change_plan.json.tmp-123",
	}
	for _, f := range left {
		p.write(f, "partial")
	}
	p.write("workspace/.mine.tmp-keep", "user file")
	want(t, p.vm("resume", "t"), 0)
	for _, f := range left {
		if p.exists(f) {
			t.Errorf("%s left after the resume", f)
		}
	}
	if !p.exists("workspace/.mine.tmp-keep") {
		t.Errorf("a user's file was removed")
	}
}

// TestCapturesCapped: lines and json captures are capped in state.json like
// output; the whole value is kept in a file under RUN_ROOT/logs and
// ${steps.S.lines} / ${steps.S.json} still read it (issue 8, point 8).
func TestCapturesCapped(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	var b strings.Builder
	b.WriteString(`{"items": [`)
	for i := 0; i < 20000; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"item %d"`, i)
	}
	b.WriteString(`], "last": "the end"}`)
	p.write("workspace/big.json", b.String())
	wf := p.write("c.yaml", `version: "1.0"
name: c
steps:
  - name: L
    command: ["HELPER", "bytes:2000000"]
    output_capture: lines
    on: {success: {goto: J}, failure: {error: "L failed"}}
  - name: J
    command: ["HELPER", "cat"]
    input_file: big.json
    output_capture: json
    on: {success: {goto: Use}, failure: {error: "J failed"}}
  - name: Use
    command: ["HELPER", "echo:${steps.L.lines[19999]}|${steps.J.json.last}|${steps.J.json.items[19999]}"]
    on: {success: {goto: _end}, failure: {error: "Use failed"}}
`)
	want(t, p.vm("run", wf, "--run-id", "c"), 0)
	st := p.state("c")
	if got, want := st.Steps["Use"].Output, strings.Repeat("x", 99)+"|the end|item 19999"; got != want {
		t.Errorf("Use printed %.200q, want %.200q", got, want)
	}
	fi, err := os.Stat(filepath.Join(p.runRoot("c"), "state.json"))
	if err != nil || fi.Size() > 200<<10 {
		t.Errorf("state.json is %d bytes (%v), want the captures capped", fi.Size(), err)
	}
	if !st.Steps["L"].Truncated || !st.Steps["J"].Truncated {
		t.Errorf("capped captures not marked truncated")
	}
}

// TestDamagedState: every damage of a run's state is E_STATE_CORRUPT, exit
// 2, saying what is wrong and what to do, and nothing rewrites a state it
// could not read (issue 8, point 9).
func TestDamagedState(t *testing.T) {
	t.Parallel()
	const wfText = `version: "1.0"
name: dmg
steps:
  - name: A
    command: ["HELPER", "echo:a"]
    on: {success: {goto: B}, failure: {error: "A failed"}}
  - name: B
    command: ["HELPER", "exit:1"]
    on: {success: {goto: _end}, failure: {error: "B failed"}}
`
	cases := []struct {
		name   string
		damage func(p *proj, wf string)
		status bool // status fails too
	}{
		{"failed step deleted from the workflow", func(p *proj, wf string) {
			p.write("dmg.yaml", strings.Replace(wfText[:strings.Index(wfText, "  - name: B")], "goto: B", "goto: _end", 1))
		}, false},
		{"empty object state, empty journal", func(p *proj, wf string) {
			p.write(".orchestrator/runs/d/state.json", "{}")
			p.write(".orchestrator/runs/d/journal.jsonl", "")
		}, true},
		{"state.json is a directory", func(p *proj, wf string) {
			os.Remove(filepath.Join(p.runRoot("d"), "state.json"))
			os.MkdirAll(filepath.Join(p.runRoot("d"), "state.json"), 0o755)
		}, true},
		{"journal is a directory", func(p *proj, wf string) {
			os.Remove(filepath.Join(p.runRoot("d"), "journal.jsonl"))
			os.MkdirAll(filepath.Join(p.runRoot("d"), "journal.jsonl"), 0o755)
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := newProj(t)
			wf := p.write("dmg.yaml", wfText)
			want(t, p.vm("run", wf, "--run-id", "d"), 1)
			c.damage(p, wf)
			before, _ := os.ReadFile(filepath.Join(p.runRoot("d"), "state.json"))
			check := func(r result, what string) {
				t.Helper()
				if r.code != 2 || !strings.Contains(r.stderr, "E_STATE_CORRUPT") || !strings.Contains(r.stderr, "smithvm run") {
					t.Errorf("%s: exit %d, want 2 with E_STATE_CORRUPT and what to do:\n%s", what, r.code, r.stderr)
				}
			}
			check(p.vm("resume", "d"), "resume")
			if c.status {
				check(p.vm("status", "d"), "status")
			}
			after, _ := os.ReadFile(filepath.Join(p.runRoot("d"), "state.json"))
			if string(after) != string(before) {
				t.Errorf("state.json was rewritten:\n%.300s\nwas\n%.300s", after, before)
			}
		})
	}
}

// TestSecondInterrupt: a step whose process ignores SIGTERM gets the grace
// period after one Ctrl-C; a second Ctrl-C kills it at once, and smithvm
// exits 130 with the state saved (issue 8, point 11).
func TestSecondInterrupt(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	wf := p.write("i.yaml", `version: "1.0"
name: i
steps:
  - name: Stubborn
    command: ["HELPER", "ignoreterm", "pid:s.pid", "sleep:60"]
    on: {success: {goto: _end}, failure: {error: "failed"}}
`)
	run := p.start("run", wf, "--run-id", "i")
	pid := pidIn(t, filepath.Join(p.ws, "s.pid"))
	run.cmd.Process.Signal(os.Interrupt)
	waitFor(t, 10*time.Second, "the first interrupt to reach the step", func() bool {
		return strings.Contains(run.stderr.String(), "Step 'Stubborn' starting")
	})
	time.Sleep(200 * time.Millisecond)
	run.cmd.Process.Signal(os.Interrupt)
	select {
	case <-run.exited:
	case <-time.After(4 * time.Second):
		t.Fatalf("smithvm still runs 4 s after the second Ctrl-C (the 10 s grace was not cut short)")
	}
	if r := run.wait(t); r.code != 130 {
		t.Errorf("exit %d, want 130:\n%s", r.code, r.stderr)
	}
	if alive(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the step's process outlived smithvm")
	}
}

// TestCaptureFilesDoNotPileUp: a loop whose body has a large capture keeps
// one capture file for it, not one per iteration.
func TestCaptureFilesDoNotPileUp(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	wf := p.write("c.yaml", `version: "1.0"
name: c
steps:
  - name: Each
    for_each:
      items: [a, b, c, d]
      steps:
        - name: Big
          command: ["HELPER", "bytes:20000", "echo:${item}"]
          output_capture: lines
          on: {success: {goto: _loop_continue}, failure: {goto: _loop_break}}
    on: {success: {goto: Use}, failure: {error: "loop failed"}}
  - name: Use
    command: ["HELPER", "echo:${steps.Big.lines[200]}"]
    on: {success: {goto: _end}, failure: {error: "Use failed"}}
`)
	want(t, p.vm("run", wf, "--run-id", "c"), 0)
	if got := p.state("c").Steps["Use"].Output; got != "d" {
		t.Errorf("Use printed %q, want the last iteration's last line d", got)
	}
	files, _ := filepath.Glob(filepath.Join(p.runRoot("c"), "logs", "Big-*-capture.json"))
	if len(files) != 1 {
		t.Errorf("capture files of Big: %v, want one", files)
	}
}
