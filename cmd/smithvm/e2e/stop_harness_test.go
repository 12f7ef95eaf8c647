package e2e

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A stopKind is one way a person stops a run gracefully: Ctrl-C (SIGINT),
// Ctrl-C twice (the second hurries the steps' grace), SIGTERM, SIGHUP (a
// closed terminal) and `smithvm stop RUN_ID` from another terminal (the
// viewer's stop takes the same path).
type stopKind string

var stopKinds = []stopKind{"int", "int2", "term", "hup", "stop"}

// signal is the signal kind sends smithvm itself (none for stop).
func (k stopKind) signal() syscall.Signal {
	switch k {
	case "term":
		return syscall.SIGTERM
	case "hup":
		return syscall.SIGHUP
	case "stop":
		return 0
	}
	return syscall.SIGINT
}

// TestGracefulStopHarness stops the isolated run of TestGitCrashHarness
// (worktrees, step commits, a parallel for_each and a parallel step with
// their unit worktrees and joins, messages) gracefully at random instants,
// with each kind of stop, resumes (stopped again at random, several
// times) until the run is done, and compares with an uninterrupted run
// (gitOutcome: the same branch tree and commits, nothing left of the
// units). After every stop: smithvm exits 130 (CONTRACT 11) having said
// the run is interrupted and how to resume it; `status` says interrupted
// with the resume command; no step process outlives smithvm; no git lock
// file, merge in progress or half-made worktree is left. No step whose
// completion was durable runs again. Long form only (SMITH_LONG=1 or
// -long): SMITH_STOP_TRIALS=N sets the trials (default 50), two at a
// time; SMITH_STOP_SEED=S replays a seed.
func TestGracefulStopHarness(t *testing.T) {
	if !isLong() {
		t.Skip("long form only: SMITH_LONG=1 (or -long)")
	}
	t.Parallel()
	trials := 50
	if n, err := strconv.Atoi(os.Getenv("SMITH_STOP_TRIALS")); err == nil && n > 0 {
		trials = n
	}
	ref, wf := gitHarnessProj(t)
	start := gitQuiet(t, ref.ws, "rev-parse", "main")
	began := time.Now()
	want(t, ref.vm("run", wf, "--run-id", "h"), 0)
	span := max(time.Since(began), 50*time.Millisecond)
	wantOut := gitOutcome(t, ref, "h", start)
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("SMITH_STOP_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d, span %v", seed, span)
	var (
		mu    sync.Mutex
		tally = map[string]int{}
		trial int
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
				got := stopTrial(t, n, rand.New(rand.NewPCG(seed, uint64(n))), span, wantOut)
				mu.Lock()
				for k, v := range got {
					tally[k] += v
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	var keys []string
	for k := range tally {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%d", k, tally[k])
	}
	t.Logf("%d trials:%s", trial, b.String())
	if tally["stopped"] == 0 {
		t.Errorf("no stop landed: the harness tested nothing")
	}
}

// stopTrial runs trial n: graceful stops of rng's kinds at rng's instants
// until the run completes, the checks after each, then the comparison. It
// returns its tally: stops by kind, stopped (the run ended interrupted),
// unstarted (caught before the run was made), early (smithvm ended by the
// signal before it could catch it, in the Go runtime's start), lingering
// (a process of the run still alive the instant smithvm was gone), missed
// (the run completed first), reruns (extra step runs), exact (the outcome
// equals wantOut).
func stopTrial(t *testing.T, n int, rng *rand.Rand, span time.Duration, wantOut string) map[string]int {
	tally := map[string]int{}
	p, wf := gitHarnessProj(t)
	start := gitQuiet(t, p.ws, "rev-parse", "main")
	id := "h"
	args := []string{"run", wf, "--run-id", id}
	var log strings.Builder
	cut := map[string]int{}
	fail := func(format string, a ...any) {
		t.Errorf("trial %d: %s\n%s", n, fmt.Sprintf(format, a...), debugLines(log.String()))
	}
	for round := 0; round < 30; round++ {
		kind := stopKinds[rng.IntN(len(stopKinds))]
		var d time.Duration
		if rng.IntN(4) == 0 {
			d = time.Duration(rng.IntN(40)) * time.Millisecond
		} else {
			d = time.Duration(rng.Int64N(int64(span)))
		}
		run := p.start(args...)
		time.Sleep(d)
		tally["stop "+string(kind)]++
		var stopRes *result
		if sig := kind.signal(); sig != 0 {
			run.cmd.Process.Signal(sig)
			if kind == "int2" {
				time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
				run.cmd.Process.Signal(sig)
			}
		} else {
			s := p.vm("stop", id)
			stopRes = &s
		}
		r := run.wait(t)
		fmt.Fprintf(&log, "--- round %d: %s after %v: exit %d\n%s", round, kind, d, r.code, r.stderr)
		if stopRes != nil {
			fmt.Fprintf(&log, "stop: exit %d\n%s", stopRes.code, stopRes.stderr)
			// Before the run exists, stop finds no run (exit 2); before
			// its driver holds it, or after the run ended, it says it is
			// not running (exit 0).
			if stopRes.code != 0 && !strings.Contains(stopRes.stderr, "E_STATE_NOT_FOUND") {
				fail("round %d: smithvm stop: exit %d\n%s", round, stopRes.code, stopRes.stderr)
				return tally
			}
		}
		if r.code == 0 {
			tally["missed"]++
			break
		}
		for _, pid := range orphans(p.base) {
			tally["lingering"]++ // alive the instant smithvm was gone
			if !gone(pid, time.Second) {
				syscall.Kill(pid, syscall.SIGKILL)
				fail("round %d (%s): process %d (%s) outlived smithvm", round, kind, pid, cmdline(pid))
			}
		}
		if l := gitDebris(t, p, id); l != "" {
			fail("round %d (%s): left in the repository:\n%s", round, kind, l)
		}
		if kind != "stop" && r.code == 128+int(kind.signal()) && !strings.Contains(r.stderr, "interrupted") {
			// The signal came before smithvm caught it: its default
			// action ended the process, as a SIGKILL would.
			tally["early"]++
		} else if r.code == 130 && strings.Contains(r.stderr, "Run "+id+" interrupted before it started") {
			tally["unstarted"]++ // caught while loading: no run made
		} else if r.code != 130 {
			fail("round %d (%s): exit %d, want 130 (interrupted):\n%s", round, kind, r.code, r.stderr)
			return tally
		} else {
			tally["stopped"]++
			if !strings.Contains(r.stderr, "Run "+id+" interrupted") || !strings.Contains(r.stderr, "Resume with '") {
				fail("round %d (%s): the stopped run did not say it was interrupted and how to resume:\n%s", round, kind, r.stderr)
			}
			s := p.vm("status", id)
			if s.code != 0 || !strings.Contains(s.stdout, "status:       interrupted") || !strings.Contains(s.stdout, "resume "+id) {
				fail("round %d (%s): status after the stop: exit %d\n%s%s", round, kind, s.code, s.stdout, s.stderr)
			}
		}
		if _, err := os.Stat(p.runRoot(id)); err != nil {
			args = []string{"run", wf, "--run-id", id}
			continue
		}
		s := p.vm("status", id, "--json")
		switch {
		case s.code == 0:
			args = []string{"resume", id}
			cutOff(t, s.stdout, cut)
		case strings.Contains(s.stderr, "run has no state"):
			args = []string{"run", wf, "--run-id", id}
		default:
			fail("round %d: the state does not load after a stop: exit %d\n%s", round, s.code, s.stderr)
			return tally
		}
	}
	var fin result
	if _, err := os.Stat(p.runRoot(id)); err != nil || p.vm("status", id).code != 0 {
		fin = p.vm("run", wf, "--run-id", id)
	} else {
		fin = p.vm("resume", id)
	}
	if fin.code != 0 {
		fail("the last resume: exit %d\n%s", fin.code, fin.stderr)
		return tally
	}
	got := gitOutcome(t, p, id, start)
	if got == wantOut {
		tally["exact"]++
	} else {
		fail("differs from the uninterrupted run:\n%s", firstDiffLine(got, wantOut))
	}
	for _, c := range gitHarnessCounters {
		runs := strings.Count(p.read("c/"+c+".cnt"), "\n")
		if runs < 1 {
			fail("step %s never ran", c)
		}
		tally["reruns"] += max(runs-1, 0)
		if runs-1 > cut[c] {
			fail("step %s ran %d times, and the stops cut it off %d times: a step whose completion was durable ran again", c, runs, cut[c])
		}
	}
	if l := leftovers(p.base); len(l) > 0 {
		fail("temporary files left: %v", l)
	}
	return tally
}

// gitDebris lists what a stop must not leave in the repository of run id:
// a git lock file, a merge in progress, a worktree git lists but that is
// missing or prunable, a unit worktree folder that is not a worktree.
func gitDebris(t *testing.T, p *proj, id string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(filepath.Join(p.ws, ".git"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(d.Name(), ".lock") || d.Name() == "MERGE_HEAD") {
			fmt.Fprintf(&b, "%s\n", path)
		}
		return nil
	})
	for _, l := range strings.Split(gitQuiet(t, p.ws, "worktree", "list", "--porcelain"), "\n") {
		if f, ok := strings.CutPrefix(l, "worktree "); ok {
			if _, err := os.Stat(filepath.Join(f, ".git")); err != nil {
				fmt.Fprintf(&b, "worktree %s: %v\n", f, err)
			}
		} else if strings.HasPrefix(l, "prunable") {
			fmt.Fprintf(&b, "%s\n", l)
		}
	}
	units, _ := filepath.Glob(filepath.Join(p.base, ".orchestrator", "unit-worktrees", id, "*", "*"))
	for _, u := range units {
		if _, err := os.Stat(filepath.Join(u, ".git")); err != nil {
			fmt.Fprintf(&b, "unit worktree %s: %v\n", u, err)
		}
	}
	return b.String()
}

// cmdline is pid's command line, for a message.
func cmdline(pid int) string {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.ReplaceAll(strings.TrimSpace(string(data)), "\x00", " ")
}

// TestSignalWhileLoading: a SIGTERM (or Ctrl-C) while smithvm run is still
// loading the workflow (here: reading it from a FIFO nobody has written
// yet) is caught: the run ends interrupted before it started, exit 130,
// nothing saved, not smithvm killed by the signal (exit 143).
func TestSignalWhileLoading(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	fifo := filepath.Join(p.base, "w.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	run := p.start("run", fifo, "--run-id", "early")
	// Opening the FIFO for writing succeeds once smithvm has it open.
	var w *os.File
	waitFor(t, 20*time.Second, "smithvm to open the workflow", func() bool {
		f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		w = f
		return err == nil
	})
	run.cmd.Process.Signal(syscall.SIGTERM)
	// Let smithvm take the signal before the workflow arrives.
	waitFor(t, 20*time.Second, "the signal to be taken", func() bool {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", run.cmd.Process.Pid))
		return err != nil || !strings.Contains(string(data), "ShdPnd:\t0000000000004000") && !strings.Contains(string(data), "SigPnd:\t0000000000004000")
	})
	time.Sleep(100 * time.Millisecond)
	w.WriteString("version: \"1.0\"\nname: early\nstrict_flow: false\nsteps:\n  - {name: A, command: [\"true\"]}\n")
	w.Close()
	r := run.wait(t)
	if r.code != 130 || !strings.Contains(r.stderr, "Run early interrupted before it started") {
		t.Fatalf("SIGTERM while loading: exit %d, want 130 (interrupted before it started):\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(p.runRoot("early")); err == nil {
		t.Errorf("a run interrupted before it started left its folder")
	}
}
