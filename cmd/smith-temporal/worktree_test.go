package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"smith/cmd/smith-temporal/engine"
)

// gitWorkspace copies the repository directory src to dst and commits it
// there as a git repository on branch main.
func gitWorkspace(t testing.TB, src, dst string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is not installed (CI must have it)")
		}
		t.Skip("git is not installed")
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	if src != "" {
		if out, err := exec.Command("cp", "-r", src+"/.", dst).CombinedOutput(); err != nil {
			t.Fatalf("copy %s: %v %s", src, err, out)
		}
	}
	gitIn(t, dst, "init", "-q", "-b", "main")
	gitIn(t, dst, "add", "-A")
	gitIn(t, dst, "-c", "user.name=test", "-c", "user.email=test@example.com", "commit", "-q", "--allow-empty", "-m", "start")
}

// gitIn runs git in dir and returns its output.
func gitIn(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

var (
	goEnvOnce sync.Once
	goEnvVals []string
)

// goEnv is the Go toolchain's caches and path, for a run whose
// environment is otherwise only PATH and HOME.
func goEnv(t testing.TB) []string {
	goEnvOnce.Do(func() {
		out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
		if err != nil {
			return
		}
		v := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(v) == 3 {
			goEnvVals = []string{"GOCACHE=" + v[0], "GOMODCACHE=" + v[1], "GOPATH=" + v[2], "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local"}
		}
	})
	if goEnvVals == nil {
		t.Fatal("go env failed")
	}
	return goEnvVals
}

// pinnedYAML: an isolated run of three steps; Slow records each start in
// its worktree and sleeps long enough to be killed in the first time.
var pinnedYAML = testWorkflow("pinned.yaml")

// TestWorktreeRunStaysOnItsHost: two workers with different BASEs (two
// hosts); a run with isolation: git-worktree creates its worktree on one
// of them and every later step, git operation and file read of the run
// goes to that host's queue. Its worker is killed with SIGKILL during
// Slow: nothing runs on the other host; a worker started again on the
// same BASE takes the run up, Slow runs again in the same worktree, the
// run completes, and its branch holds the commits of the steps that changed files.
func TestWorktreeRunStaysOnItsHost(t *testing.T) {
	f := newFleet(t)
	bases := []string{filepath.Join(filepath.Dir(f.base), "hostA"), filepath.Join(filepath.Dir(f.base), "hostB")}
	workers := map[string]*exec.Cmd{}
	for _, b := range bases {
		gitWorkspace(t, "", filepath.Join(b, "workspace"))
		workers[b] = f.workerAt(b)
	}
	file := write(t, filepath.Join(f.base, "pinned.yaml"), pinnedYAML)
	if r := f.cli("run", file, "--run-id", "pin1", "--detach"); r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	// The host is the one whose BASE holds the run's worktree.
	var home, away string
	waitFor(t, 60*time.Second, "Slow to start in a worktree", func() bool {
		for i, b := range bases {
			if lines(t, filepath.Join(b, ".orchestrator", "worktrees", "pin1", "starts.log")) == 1 {
				home, away = b, bases[1-i]
				return true
			}
		}
		return false
	})
	defer func() {
		if t.Failed() {
			t.Logf("status: %s", f.cli("status", "pin1").stdout)
		}
	}()
	if r := f.cli("status", "pin1"); !strings.Contains(r.stdout, "on host queue "+defaultHostQueue(f.queue, home)) {
		t.Errorf("status does not name the host queue:\n%s", r.stdout)
	}
	w := workers[home]
	w.Process.Signal(syscall.SIGKILL)
	w.Process.Wait()
	// Past the heartbeat timeout the step is retried, on its host's
	// queue, where no worker is: the run waits (the other host has no
	// worktree and must not take it).
	time.Sleep(12 * time.Second)
	if st := runStatus(f, "pin1"); st != "running" {
		t.Fatalf("with its host's worker gone, the run is %q, want running (waiting for it)", st)
	}
	f.workerAt(home)
	waitFor(t, 120*time.Second, "the run to complete on its host", func() bool {
		return runStatus(f, "pin1") == "completed"
	})
	r := f.cli("status", "pin1", "--json")
	st := parseState(t, r.stdout)
	if got := st.Steps["Check"].Output; got != "one\ntwo" {
		t.Errorf("Check read %q from the worktree, want one, two", got)
	}
	wt := filepath.Join(home, ".orchestrator", "worktrees", "pin1")
	if n := lines(t, filepath.Join(wt, "starts.log")); n != 2 {
		t.Errorf("Slow started %d times in the worktree, want 2 (killed once, run again)", n)
	}
	log := gitIn(t, filepath.Join(home, "workspace"), "log", "--format=%s", "smith/pin1")
	for _, s := range []string{"smith: Write (run pin1", "smith: Slow (run pin1"} { // Check changes nothing: no commit
		if !strings.Contains(log, s) {
			t.Errorf("the run's branch lacks %q:\n%s", s, log)
		}
	}
	if out, err := exec.Command("git", "-C", filepath.Join(away, "workspace"), "branch", "--list", "smith/*").Output(); err != nil || len(strings.TrimSpace(string(out))) != 0 {
		t.Errorf("the other host has a run branch: %q %v", out, err)
	}
	if _, err := os.Stat(filepath.Join(away, ".orchestrator", "worktrees", "pin1")); err == nil {
		t.Errorf("the other host has the run's worktree")
	}
	// On that host, smithvm merges the run's branch as for its own runs.
	cmd := exec.Command(smithvm(t), "merge", "pin1", "--base", home)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("smithvm merge pin1 on the run's host: %v\n%s", err, out)
	} else if b, err := os.ReadFile(filepath.Join(home, "workspace", "two.txt")); err != nil || string(b) != "two\n" {
		t.Errorf("after the merge two.txt = %q, %v", b, err)
	}
	// Every activity after the pin went to the host's queue.
	queue := defaultHostQueue(f.queue, home)
	n := 0
	for _, ev := range history(t, f.client(), "pin1") {
		a := ev.GetActivityTaskScheduledEventAttributes()
		if a == nil {
			continue
		}
		switch name := a.GetActivityType().GetName(); name {
		case engine.EnvActivity, engine.PinActivity:
			if q := a.GetTaskQueue().GetName(); q != f.queue {
				t.Errorf("%s went to %q, want the shared queue %q", name, q, f.queue)
			}
		default:
			n++
			if q := a.GetTaskQueue().GetName(); q != queue {
				t.Errorf("%s went to %q, want the host's queue %q", name, q, queue)
			}
		}
	}
	if n < 5 {
		t.Errorf("%d activities on the host's queue, want the worktree, the steps and their commits", n)
	}
}

// TestSharedWorkspaceNotPinned: workers started with --shared-workspace
// (one BASE for the fleet) leave an isolated run on the shared queue.
func TestSharedWorkspaceNotPinned(t *testing.T) {
	f := newFleet(t)
	gitWorkspace(t, "", filepath.Join(f.base, "workspace"))
	f.workerAt(f.base, "--shared-workspace")
	f.workerAt(f.base, "--shared-workspace")
	file := write(t, filepath.Join(f.base, "iso.yaml"), testWorkflow("shared_workspace_not_pinned.yaml"))
	if r := f.cli("run", file, "--run-id", "shared1"); r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	if r := f.cli("status", "shared1"); !strings.Contains(r.stdout, "in the fleet's shared WORKSPACE") {
		t.Errorf("status:\n%s", r.stdout)
	}
	log := gitIn(t, filepath.Join(f.base, "workspace"), "log", "--format=%s", "smith/shared1")
	if !strings.Contains(log, "smith: Write (run shared1") {
		t.Errorf("the run's branch lacks Write's commit:\n%s", log)
	}
	steps := 0
	for _, ev := range history(t, f.client(), "shared1") {
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			if q := a.GetTaskQueue().GetName(); q != f.queue {
				t.Errorf("%s went to %q, want the shared queue %q", a.GetActivityType().GetName(), q, f.queue)
			}
			if a.GetActivityType().GetName() == engine.StepActivity {
				steps++
			}
		}
	}
	if steps != 2 {
		t.Errorf("%d step activities, want 2", steps)
	}
}
