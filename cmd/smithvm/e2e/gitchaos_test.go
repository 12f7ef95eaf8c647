package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// gitHarnessYAML is an isolated run (isolation: git-worktree) with every
// git operation Smith makes: step commits (tracked files appended to, so a
// step run again on top of its half-done change shows), a mock provider
// agent that sends and another that consumes (inboxes and artifacts/ kept
// out of the commits without a .gitignore), a parallel for_each and a
// parallel step (unit worktrees, their commits, the joins' merges). Every
// command step counts its runs outside the repository (BASE/c).
var gitHarnessYAML = workflow("git_harness.yaml")

// gitHarnessCounters are the counters of the command steps.
var gitHarnessCounters = []string{"spec", "code", "part-a", "part-b", "part-c", "partdoc-a", "partdoc-b", "partdoc-c", "lint", "scan", "audit", "report"}

// gitHarnessHooks are planted in the repository: each counts its runs in
// BASE/hooks.ran (the helper as its interpreter: no shell), which Smith's
// git must never run.
var gitHarnessHooks = []string{"pre-commit", "commit-msg", "post-commit", "post-checkout", "post-merge", "pre-merge-commit", "reference-transaction", "post-index-change"}

// gitHarnessProj is a project whose WORKSPACE is a repository with one
// commit, the planted hooks and no .gitignore.
func gitHarnessProj(t *testing.T) (*proj, string) {
	t.Helper()
	p := gitProj(t)
	// The logs the steps append to are tracked: a step run again on top
	// of its own half-done change would append twice.
	for _, f := range []string{"notes/log.txt", "parts/a.log", "parts/b.log", "parts/c.log", "review/style.log", "review/sec.log"} {
		p.write("workspace/"+f, "")
	}
	gitIn(t, p.ws, "add", "-A")
	gitIn(t, p.ws, "commit", "-q", "-m", "logs")
	for _, h := range gitHarnessHooks {
		f := p.write("workspace/.git/hooks/"+h, "#!HELPER count:BASE/hooks.ran\n")
		if err := os.Chmod(f, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// And a core.fsmonitor command, which a git that honours the
	// repository's configuration runs on every status, add and diff.
	gitIn(t, p.ws, "config", "core.fsmonitor", p.expand("HELPER count:BASE/hooks.ran"))
	p.write("c/.keep", "")
	return p, p.write("g.yaml", gitHarnessYAML)
}

// gitOutcome is what must equal between an interrupted and an
// uninterrupted isolated run: the run's results (outcome), its branch's
// tree with every blob, its commits' subjects in order (step and attempt,
// the joins), and the state of the repository: the user's branch and
// work tree untouched, no merge in progress, no unit branch or worktree
// left, no hook run.
func gitOutcome(t *testing.T, p *proj, id, start string) string {
	t.Helper()
	var b strings.Builder
	if n := p.read("hooks.ran"); n != "" {
		b.WriteString("a planted hook ran\n")
	}
	for _, l := range strings.SplitAfter(outcome(t, p, id), "\n") {
		if !strings.HasPrefix(l, "file .git/") {
			b.WriteString(l)
		}
	}
	g := func(dir string, args ...string) string { return gitQuiet(t, dir, args...) }
	branch := "smith/" + id
	b.WriteString("tree:\n" + g(p.ws, "ls-tree", "-r", branch) + "\n")
	b.WriteString("commits " + g(p.ws, "rev-list", "--count", "main.."+branch) + "\n")
	// The run's own line of commits (steps, joins) in order; the units'
	// commits as a sorted list (their order in a log depends on their
	// times).
	b.WriteString("first parents:\n" + g(p.ws, "log", "--first-parent", "--format=%s", "main.."+branch) + "\n")
	all := strings.Split(g(p.ws, "log", "--format=%s", "main.."+branch), "\n")
	slices.Sort(all)
	b.WriteString("all:\n" + strings.Join(all, "\n") + "\n")
	if got := g(p.ws, "rev-parse", "main"); got != start {
		b.WriteString("main moved to " + got + "\n")
	}
	if s := g(p.ws, "status", "--porcelain"); s != "" {
		b.WriteString("user's work tree changed:\n" + s + "\n")
	}
	if got := g(p.ws, "rev-parse", "refs/smith-base/"+id); got != start {
		b.WriteString("base ref " + got + "\n")
	}
	wt := filepath.Join(p.base, ".orchestrator", "worktrees", id)
	if _, err := os.Stat(filepath.Join(wt, ".git")); err != nil {
		b.WriteString("no run worktree\n")
	} else {
		if g(wt, "symbolic-ref", "HEAD") != "refs/heads/"+branch {
			b.WriteString("run worktree not on its branch\n")
		}
		if _, err := os.Stat(filepath.Join(p.ws, ".git", "worktrees", id, "MERGE_HEAD")); err == nil {
			b.WriteString("MERGE_HEAD left\n")
		}
		for _, l := range strings.Split(g(wt, "status", "--porcelain", "--untracked-files=all"), "\n") {
			// Smith's own folders are untracked (no .gitignore).
			if f := strings.TrimSpace(l); f != "" && !strings.HasPrefix(f, "?? artifacts/") && !strings.HasPrefix(f, "?? agents/") {
				b.WriteString("run worktree not clean: " + l + "\n")
			}
		}
	}
	if u := g(p.ws, "for-each-ref", "--format=%(refname)", "refs/heads/smith-unit/"); u != "" {
		b.WriteString("unit branches left: " + u + "\n")
	}
	for _, l := range strings.Split(g(p.ws, "worktree", "list", "--porcelain"), "\n") {
		if strings.HasPrefix(l, "worktree ") && strings.Contains(l, "unit-worktrees") {
			b.WriteString("unit worktree left: " + l + "\n")
		}
	}
	return b.String()
}

// gitQuiet runs git in dir with no hook and no fsmonitor (the harness's
// own look must not run the planted ones) and returns its trimmed stdout.
func gitQuiet(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return gitIn(t, dir, append([]string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"}, args...)...)
}

// TestGitCrashHarness SIGKILLs smithvm at random instants of an isolated
// run (several kills a trial: in git worktree add, a step's commit, a unit
// worktree being made or removed, a join's merge, the base ref, a step
// half done), resumes until the run is done, and compares every trial with
// an uninterrupted run (gitOutcome): the same branch tree, commits and
// attempt labels, the user's branch untouched, no MERGE_HEAD, no unit
// branch left, no hook run; no step whose completion was durable runs
// again (a step runs again only after a kill found it running). Short form: 4 trials;
// SMITH_CHAOS_TRIALS=N runs N (SMITH_LONG=1 or -long: 200), two at a time.
func TestGitCrashHarness(t *testing.T) {
	t.Parallel()
	trials := 4
	if isLong() {
		trials = 200
	}
	if n, err := strconv.Atoi(os.Getenv("SMITH_CHAOS_TRIALS")); err == nil && n > 0 {
		trials = n
	}
	ref, wf := gitHarnessProj(t)
	start := gitQuiet(t, ref.ws, "rev-parse", "main")
	want(t, ref.vm("run", wf, "--run-id", "h"), 0)
	wantOut := gitOutcome(t, ref, "h", start)
	if !strings.Contains(wantOut, "smith: Spec (run h, attempt 1)") || !strings.Contains(wantOut, "smith: join Review") {
		t.Fatalf("the uninterrupted run's branch lacks its commits:\n%s", wantOut)
	}
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("SMITH_CHAOS_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d", seed)
	var (
		mu                                     sync.Mutex
		kills, reruns, stillborn, exact, trial int
	)
	next := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if trial >= trials {
			return 0, false
		}
		trial++
		return trial - 1, true
	}
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Go(func() {
			for {
				n, ok := next()
				if !ok {
					return
				}
				k, r, sb, same := gitTrial(t, n, rand.New(rand.NewPCG(seed, uint64(n))), wantOut)
				mu.Lock()
				kills, reruns, stillborn = kills+k, reruns+r, stillborn+sb
				if same {
					exact++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Logf("%d trials, %d kills (%d before anything was saved), %d steps re-run, %d exact matches", trial, kills, stillborn, reruns, exact)
	if kills == 0 {
		t.Errorf("no kill landed: the harness tested nothing")
	}
}

// gitTrial runs trial n: kills at rng's instants until the run completes,
// then compares. It returns the kills, the extra step runs, the kills
// before anything was saved, and whether the outcome equals wantOut.
func gitTrial(t *testing.T, n int, rng *rand.Rand, wantOut string) (killed, extra, stillborn int, same bool) {
	p, wf := gitHarnessProj(t)
	start := gitQuiet(t, p.ws, "rev-parse", "main")
	id := "h"
	args := []string{"run", wf, "--run-id", id}
	prev := ""
	cut := map[string]int{} // counter: times the kills found its step running
	for round := 0; round < 60; round++ {
		run := p.start(args...)
		// A third of the kills land in the first milliseconds of a
		// process (the worktree being made or checked); the others
		// anywhere, later as the rounds go on so that every run ends.
		var d time.Duration
		if rng.IntN(3) == 0 {
			d = time.Duration(rng.IntN(40)) * time.Millisecond
		} else {
			d = time.Duration(rng.IntN(150+40*round)) * time.Millisecond
		}
		time.Sleep(d)
		run.cmd.Process.Signal(syscall.SIGKILL)
		r := run.wait(t)
		if r.code == 0 {
			break
		}
		if r.code != 128+int(syscall.SIGKILL) {
			t.Errorf("trial %d round %d: exit %d:\n%s\nprevious:\n%s", n, round, r.code, r.stderr, prev)
			return
		}
		prev += fmt.Sprintf("--- round %d killed after %v:\n%s", round, d, r.stderr)
		killed++
		if _, err := os.Stat(p.runRoot(id)); err != nil {
			continue // killed before the run existed: run again
		}
		s := p.vm("status", id, "--json")
		switch {
		case s.code == 0:
			args = []string{"resume", id}
			cutOff(t, s.stdout, cut)
		case strings.Contains(s.stderr, "run has no state"):
			stillborn++
			args = []string{"run", wf, "--run-id", id}
		default:
			t.Errorf("trial %d round %d: the state does not load after a kill: exit %d\n%s", n, round, s.code, s.stderr)
			return
		}
	}
	var fin result
	if _, err := os.Stat(p.runRoot(id)); err != nil || p.vm("status", id).code != 0 {
		fin = p.vm("run", wf, "--run-id", id)
	} else {
		fin = p.vm("resume", id)
	}
	if fin.code != 0 {
		t.Errorf("trial %d (%d kills): the last resume: exit %d\n%s\n%s", n, killed, fin.code, fin.stderr, debugLines(prev))
		return
	}
	got := gitOutcome(t, p, id, start)
	same = got == wantOut
	if !same {
		t.Errorf("trial %d (%d kills): differs from the uninterrupted run:\n%s\n%s", n, killed, firstDiffLine(got, wantOut), debugLines(prev))
	}
	// A step runs again only when a kill found it running (its result
	// not durable yet): one kill may cut off several steps at once (the
	// threads of a parallel step), so the count is per step.
	for _, c := range gitHarnessCounters {
		runs := strings.Count(p.read("c/"+c+".cnt"), "\n")
		if runs < 1 {
			t.Errorf("trial %d: step %s never ran", n, c)
		}
		extra += max(runs-1, 0)
		if runs-1 > cut[c] {
			t.Errorf("trial %d: step %s ran %d times, and the kills cut it off %d times: a step whose completion was durable ran again\n%s", n, c, runs, cut[c], debugLines(prev))
		}
	}
	for _, pid := range orphans(p.base) {
		if !gone(pid, 3*time.Second) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("trial %d: process %d of the run outlived it", n, pid)
		}
	}
	if l := leftovers(p.base); len(l) > 0 {
		t.Errorf("trial %d: temporary files left: %v", n, l)
	}
	return
}

// cutOff counts, in cut, the steps that the state (status --json) after a
// kill (or a graceful stop) shows running (or interrupted), by counter name: a step of the run ("spec"), of a
// branch ("lint"), or of an iteration with its item ("part-a").
func cutOff(t *testing.T, status string, cut map[string]int) {
	t.Helper()
	type steps map[string]struct {
		Status string `json:"status"`
	}
	var st struct {
		Steps   steps `json:"steps"`
		Threads map[string]struct {
			Steps steps `json:"steps"`
		} `json:"threads"`
	}
	if err := json.Unmarshal([]byte(status), &st); err != nil {
		t.Errorf("status --json: %v", err)
		return
	}
	add := func(ss steps, suffix string) {
		for name, r := range ss {
			if r.Status == "running" || r.Status == "interrupted" {
				cut[strings.ToLower(name)+suffix]++
			}
		}
	}
	add(st.Steps, "")
	for key, th := range st.Threads {
		suffix := ""
		if i, err := strconv.Atoi(key); err == nil && i >= 0 && i < 3 {
			suffix = "-" + string(rune('a'+i)) // the items of Each
		}
		add(th.Steps, suffix)
	}
}

// debugLines keeps, of the rounds' stderr, what says where each round was
// killed.
func debugLines(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "---") || strings.Contains(l, "DEBUG") || strings.Contains(l, "resumed") || strings.Contains(l, "starting") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
