package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// parallelWorkflow is a parallel for_each and a parallel step whose steps
// sleep the time written in workspace/delays/<name> (so a test decides the
// order the threads finish in) and print what they were given.
var parallelWorkflow = workflow("parallel.yaml")

// parallelCounters are the count files of parallelWorkflow's steps.
func parallelCounters() []string {
	var out []string
	for _, it := range []string{"a", "b", "c", "d", "e", "f"} {
		out = append(out, "work-"+it+".cnt", "tag-"+it+".cnt")
	}
	return append(out, "lint.cnt", "scan.cnt", "audit.cnt", "report.cnt")
}

// writeDelays writes a random delay (at most maxMs) for every step of
// parallelWorkflow.
func writeDelays(p *proj, rng *rand.Rand, maxMs int) {
	names := []string{"lint", "scan", "audit"}
	for _, it := range []string{"a", "b", "c", "d", "e", "f"} {
		names = append(names, "work-"+it, "tag-"+it)
	}
	for _, n := range names {
		p.write("workspace/delays/"+n, fmt.Sprintf("%.3f\n", float64(rng.IntN(maxMs))/1000))
	}
}

// comparableState is state.json without what depends on time or on the
// test's directories.
func comparableState(t *testing.T, p *proj, id string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(p.read(filepath.Join(".orchestrator/runs", id, "state.json"))), &v); err != nil {
		t.Fatalf("state of %s: %v", id, err)
	}
	var strip func(any)
	strip = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range []string{"duration", "started_at", "ended_at", "started", "elapsed", "workflow_path", "program_hash", "seq", "event_seq", "journal_seq"} {
				delete(x, k)
			}
			for _, c := range x {
				strip(c)
			}
		case []any:
			for _, c := range x {
				strip(c)
			}
		}
	}
	strip(v)
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// TestParallelSameStateUnderRandomDelays runs the same parallel workflow
// many times with random per-step delays from a seeded RNG, so its threads
// finish in different orders, and asserts identical state.json files
// (timing fields aside) and the results by index and branch name.
func TestParallelSameStateUnderRandomDelays(t *testing.T) {
	t.Parallel()
	const seed = 20261124
	rng := rand.New(rand.NewPCG(seed, 3))
	t.Logf("delays from seed %d", seed)
	var first string
	for i := 0; i < 6; i++ {
		p := newProj(t)
		writeDelays(p, rng, 60)
		wf := p.write("par.yaml", parallelWorkflow)
		r := p.vm("run", wf, "--run-id", "det", "--max-parallel", "4")
		want(t, r, 0)
		for _, l := range r.lines() {
			if strings.HasPrefix(l, "INFO: Step 'Work'") && !strings.Contains(l, "'Work' [") {
				t.Errorf("a thread's console line does not name its thread: %q", l)
			}
		}
		got := comparableState(t, p, "det")
		if i == 0 {
			first = got
			st := p.state("det")
			if out := st.Steps["Report"].Output; out != "tag-work-f-5 audit-scan work-f-5" {
				t.Errorf("Report output = %q", out)
			}
			for j, it := range st.Steps["Each"].Iterations {
				if want := fmt.Sprintf("tag-work-%c-%d", 'a'+j, j); it.Index != j || it.Output != want {
					t.Errorf("iteration %d: index %d output %q, want %q", j, it.Index, it.Output, want)
				}
			}
			if n := strings.Count(p.read(".orchestrator/runs/det/iterations/Each.jsonl"), "\n"); n != 6 {
				t.Errorf("iterations/Each.jsonl has %d records, want 6", n)
			}
			continue
		}
		if got != first {
			t.Fatalf("run %d: state.json differs from run 0:\n%s", i, diffLine(got, first))
		}
	}
}

// diffLine names the first line where got and want differ.
func diffLine(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return fmt.Sprintf("line %d: got %q, want %q", i+1, a, b)
		}
	}
	return ""
}

// TestKillAnywhereParallel SIGKILLs smithvm at pseudo-random instants while
// parallel steps run and resumes until the run completes: the final state
// is the uninterrupted one, every step ran, and a step ran again only when
// a kill cut it off before its result was durable (each kill can cut off at
// most one step per running thread).
func TestKillAnywhereParallel(t *testing.T) {
	t.Parallel()
	const maxPar = 3
	clean := newProj(t)
	rng := rand.New(rand.NewPCG(1124, 4))
	writeDelays(clean, rng, 1)
	want(t, clean.vm("run", clean.write("par.yaml", parallelWorkflow), "--run-id", "k", "--max-parallel", "3"), 0)
	wantState := comparableState(t, clean, "k")

	p := newProj(t)
	for _, n := range []string{"lint", "scan", "audit"} {
		p.write("workspace/delays/"+n, "0.03\n")
	}
	for _, it := range []string{"a", "b", "c", "d", "e", "f"} {
		p.write("workspace/delays/work-"+it, "0.04\n")
		p.write("workspace/delays/tag-"+it, "0.02\n")
	}
	wf := p.write("par.yaml", parallelWorkflow)
	journal := filepath.Join(p.runRoot("k"), "journal.jsonl")
	args := []string{"run", wf, "--run-id", "k", "--max-parallel", "3"}
	kills := 0
	for round := 0; round < 25; round++ {
		run := p.start(args...)
		if round == 0 {
			waitFor(t, 20*time.Second, "the run's journal", func() bool {
				fi, err := os.Stat(journal)
				return err == nil && fi.Size() > 0
			})
		}
		time.Sleep(time.Duration(10+rng.IntN(60)) * time.Millisecond)
		run.cmd.Process.Signal(syscall.SIGKILL)
		r := run.wait(t)
		if r.code == 0 {
			break
		}
		if r.code != 128+int(syscall.SIGKILL) {
			t.Fatalf("round %d: smithvm exit %d, want 0 or killed:\n%s", round, r.code, r.stderr)
		}
		kills++
		args = []string{"resume", "k", "--max-parallel", "3"}
	}
	want(t, p.vm("resume", "k"), 0)
	if got := comparableState(t, p, "k"); got != wantState {
		t.Fatalf("after %d kills the state differs from an uninterrupted run:\n%s", kills, diffLine(got, wantState))
	}
	reruns := 0
	for _, c := range parallelCounters() {
		n := p.count(c)
		if n == 0 {
			t.Errorf("%s: the step never ran", c)
		}
		reruns += max(n-1, 0)
	}
	if reruns > kills*maxPar {
		t.Errorf("%d extra runs after %d kills with %d threads: a step whose result was durable ran again", reruns, kills, maxPar)
	}
	t.Logf("%d kills, %d extra runs", kills, reruns)
}

// TestMaxParallel: --max-parallel 1 runs the iterations of a parallel loop
// one at a time (each holds a lock file while it runs and fails if another
// holds it); the default lets them overlap.
func TestMaxParallel(t *testing.T) {
	t.Parallel()
	src := workflow("max_parallel.yaml")
	p := newProj(t)
	wf := p.write("cap.yaml", src)
	r := p.vm("run", wf, "--run-id", "one", "--max-parallel", "1")
	want(t, r, 0)
	if its := p.state("one").Steps["Each"].Iterations; len(its) != 4 {
		t.Errorf("--max-parallel 1: %d iterations, want 4", len(its))
	}
	// Not asserted (it depends on timing): with 4 at once they overlap.
	r = p.vm("run", wf, "--run-id", "four", "--max-parallel", "4")
	t.Logf("--max-parallel 4: exit %d (1: iterations overlapped)", r.code)
}

// runIn runs smithvm args... in dir (no --base) and waits for it.
func runIn(t *testing.T, dir string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, built.smithvm, args...)
	cmd.Dir, cmd.Env = dir, baseEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return result{code: exitCode(t, err), stdout: out.String(), stderr: errb.String()}
}

// TestWorkspaceFlag: --workspace DIR makes DIR the WORKSPACE (and BASE when
// --base is not given) for run, run-step and resume, and a resumed run
// keeps the WORKSPACE it recorded.
func TestWorkspaceFlag(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	repo := filepath.Join(p.base, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	wf := p.write("ws.yaml", workflow("workspace_flag.yaml"))
	// run: steps run in DIR, the run lives under DIR/.orchestrator.
	other := t.TempDir()
	p.write("repo/go.txt", "go\n")
	r := runIn(t, other, "run", wf, "--workspace", repo, "--run-id", "w1")
	want(t, r, 0)
	if got := p.read("repo/made.txt"); got != "here" {
		t.Errorf("repo/made.txt = %q: the step did not run in --workspace", got)
	}
	if _, err := os.Stat(filepath.Join(repo, ".orchestrator", "runs", "w1", "state.json")); err != nil {
		t.Errorf("the run is not under DIR/.orchestrator: %v", err)
	}
	if _, err := os.Stat(filepath.Join(other, "workspace")); err == nil {
		t.Errorf("a default WORKSPACE was created in the current directory")
	}
	// run-step.
	os.Remove(filepath.Join(repo, "made.txt"))
	want(t, runIn(t, other, "run-step", wf, "Make", "--workspace", repo), 0)
	if got := p.read("repo/made.txt"); got != "here" {
		t.Errorf("run-step did not run in --workspace: made.txt = %q", got)
	}
	// resume uses the WORKSPACE the run recorded (--base DIR, no --workspace).
	os.Remove(filepath.Join(repo, "go.txt"))
	run := func() *exec.Cmd {
		cmd := exec.Command(built.smithvm, "run", wf, "--workspace", repo, "--run-id", "w2")
		cmd.Dir, cmd.Env = other, baseEnv()
		return cmd
	}()
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it while Check waits for go.txt: once its step_started event is
	// written, the run's state is on disk (an event follows its checkpoint).
	events := filepath.Join(repo, ".orchestrator", "runs", "w2", "logs", "events.jsonl")
	waitFor(t, cmdTimeout, "the Check step", func() bool {
		b, _ := os.ReadFile(events)
		for _, line := range strings.Split(string(b), "\n") {
			var ev event
			if json.Unmarshal([]byte(line), &ev) == nil && ev.Event == "step_started" && ev.Step == "Check" {
				return true
			}
		}
		return false
	})
	run.Process.Signal(syscall.SIGKILL)
	run.Wait()
	p.write("repo/go.txt", "go\n")
	r = runIn(t, other, "resume", "w2", "--base", repo)
	want(t, r, 0)
	if st := p.state2(filepath.Join(repo, ".orchestrator", "runs", "w2")); st.Steps["Check"].Output != "checked" {
		t.Errorf("resumed Check output %q", st.Steps["Check"].Output)
	}
	// watch takes it too (it runs through the same code as run).
	if r := runIn(t, other, "watch", "--help"); !strings.Contains(r.stdout+r.stderr, "--workspace") {
		t.Errorf("watch --help does not offer --workspace:\n%s%s", r.stdout, r.stderr)
	}
	// A --workspace outside --base works (CONTRACT 2): the state under
	// BASE, the steps in DIR, and resume, from anywhere, uses the WORKSPACE
	// the run recorded.
	state := t.TempDir()
	os.Remove(filepath.Join(repo, "made.txt"))
	os.Remove(filepath.Join(repo, "go.txt"))
	run = exec.Command(built.smithvm, "run", wf, "--workspace", repo, "--base", state, "--run-id", "w3")
	run.Dir, run.Env = other, baseEnv()
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	events = filepath.Join(state, ".orchestrator", "runs", "w3", "logs", "events.jsonl")
	waitFor(t, cmdTimeout, "the Check step", func() bool {
		b, _ := os.ReadFile(events)
		return strings.Contains(string(b), `"step":"Check","attempt_id":1,"attempt_uid"`)
	})
	run.Process.Signal(syscall.SIGKILL)
	run.Wait()
	if got := p.read("repo/made.txt"); got != "here" {
		t.Errorf("--workspace outside --base: repo/made.txt = %q, want the step to run in DIR", got)
	}
	if _, err := os.Stat(filepath.Join(state, "workspace")); err == nil {
		t.Errorf("--workspace outside --base: a default WORKSPACE was created under BASE")
	}
	p.write("repo/go.txt", "go\n")
	r = runIn(t, t.TempDir(), "resume", "w3", "--base", state)
	want(t, r, 0)
	if st := p.state2(filepath.Join(state, ".orchestrator", "runs", "w3")); st.Steps["Check"].Output != "checked" {
		t.Errorf("resumed Check (WORKSPACE outside BASE) output %q", st.Steps["Check"].Output)
	}
}

// state2 reads the state.json in runRoot.
func (p *proj) state2(runRoot string) stateFile {
	p.t.Helper()
	data, err := os.ReadFile(filepath.Join(runRoot, "state.json"))
	if err != nil {
		p.t.Fatal(err)
	}
	var st stateFile
	if err := json.Unmarshal(data, &st); err != nil {
		p.t.Fatal(err)
	}
	return st
}

// TestParallelWorktrees: in an isolated run each iteration and branch works
// in its own worktree on smith-unit/<run>/<Step>/<key>; the join merges
// them into the run's branch in index (or name) order and removes them;
// branches that change one file differently fail the step with
// E_MERGE_CONFLICT naming it, and their branches are kept (CONTRACT 12.4).
func TestParallelWorktrees(t *testing.T) {
	t.Parallel()
	p := gitProj(t)
	wf := p.write("iso.yaml", workflow("parallel_worktrees.yaml"))
	p.write("workspace/delays/a", "0.06\n")
	p.write("workspace/delays/c", "0.01\n")
	gitIn(t, p.ws, "add", "-A")
	gitIn(t, p.ws, "commit", "-q", "-m", "delays")
	r := p.vm("run", wf, "--run-id", "ok", "--context", "x=same", "--context", "y=same")
	want(t, r, 0)
	// The first unit of each join fast-forwards; the others are merged
	// after it in order.
	log := gitIn(t, p.ws, "log", "--format=%s", "--first-parent", "smith/ok")
	joins := []string{"smith: join Both [y] (run ok)", "smith: WX (run ok, attempt 1)",
		"smith: join Each [2] (run ok)", "smith: join Each [1] (run ok)", "smith: Write (run ok, attempt 1)"}
	if !strings.Contains(log, strings.Join(joins, "\n")) {
		t.Errorf("the run's branch does not join in index/name order:\n%s", log)
	}
	for _, f := range []string{"out/a.txt", "out/b.txt", "out/c.txt", "shared.txt"} {
		gitIn(t, p.ws, "cat-file", "-e", "smith/ok:"+f)
	}
	if units := gitIn(t, p.ws, "branch", "--list", "smith-unit/*"); units != "" {
		t.Errorf("unit branches left after a clean join:\n%s", units)
	}

	r = p.vm("run", wf, "--run-id", "clash", "--context", "x=one", "--context", "y=two")
	want(t, r, 1)
	if e := p.state("clash").Steps["Both"].Error; e == nil || e.Code != "E_MERGE_CONFLICT" || !strings.Contains(e.Message, "shared.txt") ||
		!strings.Contains(r.stderr, "conflicts in shared.txt") {
		t.Errorf("a conflicting join is not E_MERGE_CONFLICT naming the file: %+v\n%s", e, r.stderr)
	}
	units := gitIn(t, p.ws, "branch", "--list", "smith-unit/clash/Both/*")
	if !strings.Contains(units, "smith-unit/clash/Both/x") || !strings.Contains(units, "smith-unit/clash/Both/y") {
		t.Errorf("the branches of a conflicting join are not kept:\n%s", units)
	}
	if st := gitIn(t, p.ws, "-C", filepath.Join(p.base, ".orchestrator", "worktrees", "clash"), "status", "--porcelain"); st != "" {
		t.Errorf("the run's worktree is not clean after the conflict:\n%s", st)
	}
	want(t, p.vm("clean", "clash", "--force"), 0)
	if units := gitIn(t, p.ws, "branch", "--list", "smith-unit/clash/*"); units != "" {
		t.Errorf("clean --force left the kept unit branches:\n%s", units)
	}
}

// TestParallelResumeInFlight: iteration 0 finishes while iteration 1 waits;
// smithvm is killed; status lists both threads (the one cut off reads
// interrupted); resume runs only iteration
// 1 again and joins both.
func TestParallelResumeInFlight(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	wf := p.write("inflight.yaml", workflow("parallel_resume_in_flight.yaml"))
	p.write("workspace/go-a", "")
	run := p.start("run", wf, "--run-id", "f", "--max-parallel", "2")
	// A thread's end is journalled at once: status (snapshot + journal) shows it.
	waitFor(t, 20*time.Second, "iteration 0 to end and iteration 1 to start", func() bool {
		return p.count("b.cnt") == 1 && strings.Contains(p.vm("status", "f").stdout, "[0]  completed")
	})
	run.cmd.Process.Signal(syscall.SIGKILL)
	run.wait(t)
	st := p.vm("status", "f")
	if !strings.Contains(st.stdout, "threads of Each") || !strings.Contains(st.stdout, "[0]  completed") || !strings.Contains(st.stdout, "[1]  interrupted") {
		t.Errorf("status of a run killed inside a parallel step:\n%s", st.stdout)
	}
	p.write("workspace/go-b", "")
	r := p.vm("resume", "f")
	want(t, r, 0)
	if p.count("a.cnt") != 1 || p.count("b.cnt") != 2 {
		t.Errorf("iteration a ran %d times (want 1: it had ended), b %d times (want 2: it was in flight)", p.count("a.cnt"), p.count("b.cnt"))
	}
	its := p.state("f").Steps["Each"].Iterations
	if len(its) != 2 || its[0].Output != "done-a" || its[1].Output != "done-b" {
		t.Errorf("iterations after resume: %+v", its)
	}
}
