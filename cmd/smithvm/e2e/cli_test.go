package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// okWorkflow is a one-step workflow that succeeds.
const okWorkflow = `version: "1.0"
name: ok
steps:
  - name: Only
    command: ["HELPER", "echo:ok"]
    on: {success: {goto: _end}, failure: {error: "only failed"}}
`

// failWorkflow is a one-step workflow whose step fails.
const failWorkflow = `version: "1.0"
name: fail
steps:
  - name: Only
    command: ["HELPER", "exit:1"]
    on: {success: {goto: _end}, failure: {error: "only failed"}}
`

// haltManifest is a manifest whose command worker fails into HALT_AND_FLAG.
const haltManifest = `{
  "version": "1",
  "entry": "Node:Main",
  "workers": {
    "Command:Check": {"command": ["HELPER", "count:check.cnt", "exit:1"]},
    "Command:Publish": {"command": ["HELPER", "count:publish.cnt"]}
  },
  "nodes": {
    "Node:Main": {
      "entry_block": "Block:Check",
      "blocks": {
        "Block:Check": {
          "worker": "Command:Check",
          "transitions": [
            {"on_signal": "SIGNAL:SUCCESS", "action": "JUMP:Publish"},
            {"on_signal": "SIGNAL:FAIL_DEFAULT", "action": "HALT_AND_FLAG"}]},
        "Block:Publish": {
          "worker": "Command:Publish",
          "transitions": [
            {"on_signal": "SIGNAL:SUCCESS", "action": "END"},
            {"on_signal": "SIGNAL:FAIL_DEFAULT", "action": "FAIL:publish failed"}]}
      }
    }
  }
}
`

// TestExitCodes, with the scripts testdata/script/exit*.txtar
// (TestScripts), is every exit status of CONTRACT section 11 (130 is in
// TestProcess). The cases here need Go: a held lock, a run that must leave
// nothing behind, a timeout, a halt and its resume.
func TestExitCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// setup writes the files and returns smithvm's arguments (--base is
		// added).
		setup func(p *proj) []string
		env   []string
		code  int
		// stderr must contain this.
		stderr string
		// after, if set, checks more.
		after func(t *testing.T, p *proj, r result)
	}{
		{"2 missing secret", func(p *proj) []string {
			return []string{"run", p.write("sec.yaml", strings.Replace(okWorkflow, "steps:", "secrets: [SMITH_E2E_ABSENT]\nsteps:", 1))}
		}, nil, 2, "E_SECRET_MISSING", func(t *testing.T, p *proj, r result) {
			if ids := p.runs(); len(ids) != 0 {
				t.Errorf("a run that never started left %v behind", ids)
			}
		}},
		{"2 run locked", func(p *proj) []string {
			r := p.vm("run", p.write("f.yaml", failWorkflow), "--run-id", "l1")
			want(p.t, r, 1)
			f, err := os.OpenFile(filepath.Join(p.runRoot("l1"), "lock"), os.O_RDWR|os.O_CREATE, 0o644)
			if err != nil {
				p.t.Fatal(err)
			}
			p.t.Cleanup(func() { f.Close() })
			if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
				p.t.Fatal(err)
			}
			return []string{"resume", "l1"}
		}, nil, 2, "E_RUN_LOCKED", nil},
		{"124 timeout", func(p *proj) []string {
			return []string{"run", p.write("slow.yaml", strings.Replace(okWorkflow, `"echo:ok"]`, `"sleep:20"]`+"\n    timeout: 0.5", 1))}
		}, nil, 124, "ERROR: Run", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newProj(t)
			args := tt.setup(p)
			r := p.vmEnv(baseEnv(tt.env...), args...)
			want(t, r, tt.code)
			if !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("smithvm %s: stderr lacks %q:\n%s", strings.Join(args, " "), tt.stderr, clip(r.stderr))
			}
			if tt.after != nil {
				tt.after(t, p, r)
			}
		})
	}

	t.Run("4 HALT_AND_FLAG then resume --signal", func(t *testing.T) {
		t.Parallel()
		p := newProj(t)
		m := p.write("workflows.json", haltManifest)
		r := p.vm("run", m, "--run-id", "h1")
		want(t, r, 4)
		if line := "WARNING: Run h1 halted at 'Block:Check' awaiting resume."; !r.has(line) {
			t.Errorf("stderr lacks %q:\n%s", line, r.stderr)
		}
		st := p.state("h1")
		if st.Status != "halted" || !st.IsHalted {
			t.Errorf("state = status %q isHalted %v, want halted true", st.Status, st.IsHalted)
		}
		r = p.vm("resume", "h1", "--signal", "SIGNAL:SUCCESS", "--note", "checked by hand")
		want(t, r, 0)
		if a, b := p.count("check.cnt"), p.count("publish.cnt"); a != 1 || b != 1 {
			t.Errorf("Check ran %d times, Publish %d, want 1 and 1", a, b)
		}
		if st := p.state("h1"); st.Status != "completed" || st.IsHalted {
			t.Errorf("after resume: status %q isHalted %v, want completed false", st.Status, st.IsHalted)
		}
	})

	t.Run("4 resume of a halted run re-runs the block", func(t *testing.T) {
		t.Parallel()
		p := newProj(t)
		m := p.write("workflows.json", haltManifest)
		want(t, p.vm("run", m, "--run-id", "h2"), 4)
		r := p.vm("resume", "h2")
		want(t, r, 4)
		if n := p.count("check.cnt"); n != 2 {
			t.Errorf("Check ran %d times, want 2", n)
		}
	})
}

// TestForEach covers loops over a ${...} list with _loop_break and
// _loop_continue, and the bound on inline iterations (CONTRACT 3.4).
func TestForEach(t *testing.T) {
	t.Parallel()

	t.Run("break and continue", func(t *testing.T) {
		t.Parallel()
		p := newProj(t)
		wf := p.write("loop.yaml", `version: "1.0"
name: loop
context: {items: [a, skip, b, stop, c]}
steps:
  - name: Each
    for_each:
      items: "${context.items}"
      as: it
      steps:
        - name: Gate
          command: ["HELPER", "ne:${it}:stop"]
          on: {success: {goto: Skip}, failure: {goto: _loop_break}}
        - name: Skip
          command: ["HELPER", "ne:${it}:skip"]
          on: {success: {goto: Work}, failure: {goto: _loop_continue}}
        - name: Work
          command: ["HELPER", "count:work.cnt", "echo:${it} ${loop.index}/${loop.total}"]
          on: {success: {goto: _loop_continue}, failure: {goto: _loop_break}}
    on: {success: {goto: After}, failure: {error: "loop failed"}}
  - name: After
    command: ["HELPER", "count:after.cnt"]
    on: {success: {goto: _end}, failure: {error: "after failed"}}
`)
		r := p.vm("run", wf, "--run-id", "loop")
		want(t, r, 0)
		if a, b := p.count("work.cnt"), p.count("after.cnt"); a != 2 || b != 1 {
			t.Errorf("Work ran %d times, After %d, want 2 and 1", a, b)
		}
		st := p.state("loop")
		each := st.Steps["Each"]
		if each.Status != "completed" {
			t.Errorf("steps.Each.status = %q, want completed", each.Status)
		}
		var items []string
		for i, it := range each.Iterations {
			if it.Index != i {
				t.Errorf("iterations[%d].index = %d", i, it.Index)
			}
			items = append(items, fmt.Sprint(it.Item))
		}
		if got := strings.Join(items, ","); got != "a,skip,b,stop" {
			t.Errorf("iteration items = %s, want a,skip,b,stop", got)
		}
		if len(each.Iterations) == 4 {
			if w := each.Iterations[2].Steps["Work"]; w.Output != "b 2/5" {
				t.Errorf("iterations[2].steps.Work.output = %q, want %q", w.Output, "b 2/5")
			}
			if _, ran := each.Iterations[1].Steps["Work"]; ran {
				t.Errorf("iterations[1] (skip) ran Work")
			}
		}
		jl := p.read(".orchestrator/runs/loop/iterations/Each.jsonl")
		if n := strings.Count(jl, "\n"); n != 4 {
			t.Errorf("iterations/Each.jsonl has %d lines, want 4", n)
		}
	})

	t.Run("150 iterations keep 100 inline", func(t *testing.T) {
		t.Parallel()
		p := newProj(t)
		items := make([]int, 150)
		for i := range items {
			items[i] = i
		}
		data, _ := json.Marshal(map[string]any{"items": items})
		ctxFile := p.write("ctx.json", string(data))
		wf := p.write("many.yaml", `version: "1.0"
name: many
steps:
  - name: Many
    for_each:
      items: "${context.items}"
      steps:
        - name: Note
          set_context: {last: "${item}"}
          on: {success: {goto: _loop_continue}, failure: {goto: _loop_break}}
    on: {success: {goto: _end}, failure: {error: "loop failed"}}
`)
		r := p.vm("run", wf, "--run-id", "many", "--context-file", ctxFile)
		want(t, r, 0)
		st := p.state("many")
		m := st.Steps["Many"]
		if len(m.Iterations) != 100 || m.IterationsTotal != 150 {
			t.Errorf("steps.Many: %d inline iterations, iterations_total %d, want 100 and 150", len(m.Iterations), m.IterationsTotal)
		}
		if len(m.Iterations) > 0 && m.Iterations[0].Index != 50 {
			t.Errorf("first inline iteration has index %d, want 50 (the last 100 are kept)", m.Iterations[0].Index)
		}
		if got := fmt.Sprint(st.Context["last"]); got != "149" {
			t.Errorf("context.last = %s, want 149", got)
		}
		jl := p.read(".orchestrator/runs/many/iterations/Many.jsonl")
		if n := strings.Count(jl, "\n"); n != 150 {
			t.Errorf("iterations/Many.jsonl has %d lines, want 150", n)
		}
	})
}

// TestCommands covers list, status, graph, .smbc programs, --help and watch.
func TestCommands(t *testing.T) {
	t.Parallel()

	t.Run("list status graph", func(t *testing.T) {
		t.Parallel()
		p := newProj(t)
		ok, fail := p.write("ok.yaml", okWorkflow), p.write("fail.yaml", failWorkflow)
		want(t, p.vm("run", ok, "--run-id", "first"), 0)
		time.Sleep(1100 * time.Millisecond) // started_at has one-second resolution
		want(t, p.vm("run", fail, "--run-id", "second"), 1)

		r := p.vm("list")
		want(t, r, 0)
		i1, i2 := strings.Index(r.stdout, "first"), strings.Index(r.stdout, "second")
		if i1 < 0 || i2 < 0 || i2 > i1 {
			t.Errorf("list: want both runs, newest (second) first:\n%s", r.stdout)
		}
		r = p.vm("list", "--json")
		want(t, r, 0)
		var runs []map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &runs); err != nil {
			t.Fatalf("list --json: %v\n%s", err, r.stdout)
		}
		if len(runs) != 2 || runs[0]["run_id"] != "second" || runs[0]["status"] != "failed" || runs[1]["status"] != "completed" {
			t.Errorf("list --json = %v, want second (failed) then first (completed)", runs)
		}

		r = p.vm("status", "second")
		want(t, r, 0)
		for _, s := range []string{"second", "failed", "Only"} {
			if !strings.Contains(r.stdout, s) {
				t.Errorf("status: stdout lacks %q:\n%s", s, r.stdout)
			}
		}
		r = p.vm("status", "second", "--json")
		want(t, r, 0)
		var st stateFile
		if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
			t.Fatalf("status --json: %v", err)
		}
		if st.RunID != "second" || st.Status != "failed" || st.Steps["Only"].ExitCode != 1 {
			t.Errorf("status --json = %+v", st)
		}

		r = p.vm("graph", "second")
		want(t, r, 0)
		if !strings.HasPrefix(strings.TrimSpace(r.stdout), "digraph") || !strings.Contains(r.stdout, "Only") {
			t.Errorf("graph: not a DOT digraph naming Only:\n%s", r.stdout)
		}
		dot, err := exec.LookPath("dot")
		if err != nil {
			if inCI() {
				t.Fatal("graphviz dot is not installed")
			}
			t.Log("graphviz dot is not installed: the DOT is not rendered")
			return
		}
		cmd := exec.Command(dot, "-Tsvg")
		cmd.Stdin = strings.NewReader(r.stdout)
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "<svg") {
			t.Errorf("dot -Tsvg: %v\n%s", err, out)
		}
	})

	t.Run("run a .smbc built by smithc", func(t *testing.T) {
		t.Parallel()
		p := newProj(t)
		wf := p.write("prog.yaml", `version: "1.0"
name: prog
context: {x: from-smbc}
steps:
  - name: Only
    command: ["HELPER", "count:prog.cnt", "echo:${context.x}"]
    on: {success: {goto: _end}, failure: {error: "only failed"}}
`)
		out := filepath.Join(p.base, "prog.smbc")
		if b, err := exec.Command(built.smithc, "build", wf, "-o", out).CombinedOutput(); err != nil {
			t.Fatalf("smithc build: %v\n%s", err, b)
		}
		r := p.vm("run", out, "--run-id", "smbc")
		want(t, r, 0)
		if p.count("prog.cnt") != 1 || p.state("smbc").Steps["Only"].Output != "from-smbc" {
			t.Errorf("the .smbc run: count %d, output %q", p.count("prog.cnt"), p.state("smbc").Steps["Only"].Output)
		}
	})

	t.Run("--help of every command", func(t *testing.T) {
		t.Parallel()
		p := newProj(t)
		for _, args := range [][]string{
			{"--help"}, {"help"}, {"run", "--help"}, {"resume", "--help"}, {"run-step", "--help"}, {"watch", "--help"},
			{"list", "--help"}, {"status", "--help"}, {"graph", "--help"}, {"clean", "--help"},
		} {
			cmd := p.command(t.Context(), baseEnv(), args...)
			out, err := cmd.Output()
			if code := exitCode(t, err); code != 0 || !strings.Contains(string(out), "smithvm") {
				t.Errorf("smithvm %s: exit %d, stdout %q; want 0 and a usage", strings.Join(args, " "), code, out)
			}
		}
	})

	t.Run("watch", func(t *testing.T) {
		t.Parallel()
		p := newProj(t)
		p.write("workspace/src/input.txt", "v1\n")
		wf := p.write("w.yaml", `version: "1.0"
name: w
steps:
  - name: Build
    command: ["HELPER", "count:build.cnt"]
    output_file: out.txt
    on: {success: {goto: _end}, failure: {error: "build failed"}}
`)
		w := p.start("watch", wf)
		completed := func() int { return strings.Count(w.stderr.String(), " completed.\n") }
		waitFor(t, 20*time.Second, "the first run", func() bool { return completed() == 1 })
		waitFor(t, 5*time.Second, "the watch line", func() bool { return strings.Contains(w.stderr.String(), "Watching") })
		p.write("workspace/src/input.txt", "v2, longer\n")
		waitFor(t, 20*time.Second, "a run after a change in WORKSPACE", func() bool { return completed() == 2 })
		waitFor(t, 5*time.Second, "the watch line", func() bool { return strings.Count(w.stderr.String(), "Watching") == 2 })
		p.write("workspace/artifacts/Build/other.txt", "ignored\n")
		time.Sleep(1500 * time.Millisecond)
		if n := completed(); n != 2 {
			t.Errorf("a change under WORKSPACE/artifacts started a run: %d runs, want 2", n)
		}
		if err := w.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		r := w.wait(t)
		if r.code != 0 && r.code != 130 {
			t.Errorf("watch after SIGINT: exit %d, want 0 or 130\n%s", r.code, r.stderr)
		}
		if n := p.count("build.cnt"); n != 2 {
			t.Errorf("Build ran %d times, want 2", n)
		}
	})
}

// TestGitignoreHint covers the first-run .gitignore hint without a terminal
// (CONTRACT 2): only in a BASE inside a git work tree.
func TestGitignoreHint(t *testing.T) {
	t.Parallel()
	const hint = "INFO: .gitignore does not list .orchestrator/"
	tests := []struct {
		name      string
		gitignore string // "" means no .gitignore
		git       bool   // BASE is in a git work tree
		hints     int
	}{
		{"no .gitignore", "", true, 1},
		{"a .gitignore without it", "*.o\n", true, 1},
		{"listed", "*.o\n.orchestrator/\n", true, 0},
		{"outside git", "", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newProj(t)
			if tt.git {
				p.gitWorkTree()
			}
			if tt.gitignore != "" {
				p.write(".gitignore", tt.gitignore)
			}
			wf := p.write("ok.yaml", okWorkflow)
			r := p.vm("run", wf)
			want(t, r, 0)
			var infos int
			for _, l := range r.lines() {
				where := strings.HasPrefix(l, "INFO: Run folder:") || strings.HasPrefix(l, "INFO: Artifacts:") || strings.HasPrefix(l, "INFO: Next:")
				if !where && strings.HasPrefix(l, "INFO:") && strings.Contains(l, ".orchestrator/") && strings.Contains(l, ".gitignore") {
					infos++
				}
			}
			if infos != tt.hints || strings.Count(r.stderr, hint) != tt.hints {
				t.Errorf("first run: %d hint lines, want %d:\n%s", infos, tt.hints, r.stderr)
			}
			if got := p.read(".gitignore"); got != tt.gitignore {
				t.Errorf(".gitignore = %q, want it unchanged (%q)", got, tt.gitignore)
			}
			r = p.vm("run", wf)
			want(t, r, 0)
			if strings.Contains(r.stderr, hint) {
				t.Errorf("the second run repeats the hint:\n%s", r.stderr)
			}
		})
	}
}
