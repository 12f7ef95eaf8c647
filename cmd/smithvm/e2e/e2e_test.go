package e2e

// End-to-end tests of smithvm: the acceptance tests of CONTRACT sections 1-6
// and 11 and of seed 004 ("MVP Acceptance Tests"). TestMain builds smithvm,
// smithc and a helper program (testdata/helper) once; every test runs real
// workflows with exec.Command in its own BASE under t.TempDir().

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"text/template"
	"time"
)

// bins holds the paths of the binaries TestMain builds.
type bins struct {
	smithvm, smithc, helper string
}

// built is set once by TestMain, before any test runs, and only read after.
var built bins

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "smithvm-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer os.RemoveAll(dir)
	testCache = filepath.Join(dir, "cache")
	built = bins{
		smithvm: filepath.Join(dir, "smithvm"),
		smithc:  filepath.Join(dir, "smithc"),
		helper:  filepath.Join(dir, "helper"),
	}
	// smithvm and smithc are built in the smith module (the repository's
	// root, three levels up: one package load, links in parallel), the
	// helper in this one.
	for _, b := range []struct {
		dir  string
		pkgs []string
	}{
		{"../../..", []string{"./cmd/smithvm", "./cmd/smithc"}},
		{".", []string{"./testdata/helper"}},
	} {
		cmd := exec.Command("go", append([]string{"build", "-o", dir + string(os.PathSeparator)}, b.pkgs...)...)
		cmd.Dir = b.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build %s (in %s): %v\n%s", strings.Join(b.pkgs, " "), b.dir, err, out)
			return 2
		}
	}
	defer sharedChromium.stop()
	return m.Run()
}

// cmdTimeout bounds every smithvm process a test starts.
const cmdTimeout = 3 * time.Minute

// proj is one BASE with its WORKSPACE.
type proj struct {
	t    *testing.T
	base string
	ws   string
}

func newProj(t *testing.T) *proj {
	t.Helper()
	base := t.TempDir()
	ws := filepath.Join(base, "workspace")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	return &proj{t: t, base: base, ws: ws}
}

// expand replaces the placeholders HELPER, BASE and WS in text.
func (p *proj) expand(text string) string {
	r := strings.NewReplacer("HELPER", built.helper, "BASE", p.base, "WS", p.ws)
	return r.Replace(text)
}

// gitWorkTree makes BASE look like a git work tree to smithvm (a .git
// folder), without git.
func (p *proj) gitWorkTree() {
	p.t.Helper()
	if err := os.MkdirAll(filepath.Join(p.base, ".git"), 0o755); err != nil {
		p.t.Fatal(err)
	}
}

// write writes the expanded text to rel (relative to BASE) and returns its
// absolute path.
func (p *proj) write(rel, text string) string {
	p.t.Helper()
	path := filepath.Join(p.base, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(p.expand(text)), 0o644); err != nil {
		p.t.Fatal(err)
	}
	return path
}

// read returns the contents of rel (relative to BASE); "" when missing.
func (p *proj) read(rel string) string {
	p.t.Helper()
	data, err := os.ReadFile(filepath.Join(p.base, rel))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		p.t.Fatal(err)
	}
	return string(data)
}

// count is how many lines the counter file rel (relative to WORKSPACE) has.
func (p *proj) count(rel string) int {
	p.t.Helper()
	return strings.Count(p.read(filepath.Join("workspace", rel)), "\n")
}

// runRoot is RUN_ROOT of run id.
func (p *proj) runRoot(id string) string {
	return filepath.Join(p.base, ".orchestrator", "runs", id)
}

// result is how a smithvm process ended.
type result struct {
	code   int
	stdout string
	stderr string
	// maxRSS is smithvm's peak resident set size in bytes (its rusage,
	// which on Linux counts its reaped children too), 0 when unknown.
	maxRSS int64
}

// lines are the stderr lines.
func (r result) lines() []string {
	return strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
}

// has reports whether stderr has exactly this line.
func (r result) has(line string) bool {
	for _, l := range r.lines() {
		if l == line {
			return true
		}
	}
	return false
}

// runID is the run id of the run's "started" line.
func (r result) runID() string {
	m := regexp.MustCompile(`(?m)^INFO: Run (\S+) started \(workflow '`).FindStringSubmatch(r.stderr)
	if m == nil {
		return ""
	}
	return m[1]
}

// baseEnv is the environment smithvm runs with: only what it needs.
func baseEnv(extra ...string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), testCacheEnv()}
	return append(env, extra...)
}

// testCache is the user cache directory of every smithvm a test starts, so
// that the index of recent bases never touches the real one.
var testCache string

func testCacheEnv() string { return "XDG_CACHE_HOME=" + testCache }

// command prepares smithvm args... with BASE as the working directory.
func (p *proj) command(ctx context.Context, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, built.smithvm, args...)
	cmd.Dir = p.base
	cmd.Env = env
	return cmd
}

// vm runs smithvm args... --base BASE and waits for it.
func (p *proj) vm(args ...string) result {
	p.t.Helper()
	return p.vmEnv(baseEnv(), args...)
}

// vmEnv is vm with the environment env.
func (p *proj) vmEnv(env []string, args ...string) result {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := p.command(ctx, env, append(args, "--base", p.base)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{code: exitCode(p.t, err), stdout: out.String(), stderr: errb.String()}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.maxRSS = ru.Maxrss << 10 // kilobytes on Linux
	}
	return r
}

// vmMeasured is vm, with maxRSS smithvm's own peak: it starts smithvm
// through the helper (helper maxrss), a small process, because a process
// this test binary starts inherits the test binary's peak in its rusage
// (Linux keeps the high-water mark of the memory an execve replaces, and
// Go starts children by vfork), which a full run of the suite makes far
// larger than smithvm's.
func (p *proj) vmMeasured(args ...string) result {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	out := filepath.Join(p.t.TempDir(), "maxrss")
	argv := append([]string{"maxrss", out, built.smithvm}, append(args, "--base", p.base)...)
	cmd := exec.CommandContext(ctx, built.helper, argv...)
	cmd.Dir, cmd.Env = p.base, baseEnv()
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	r := result{code: exitCode(p.t, err), stdout: o.String(), stderr: e.String()}
	if b, err := os.ReadFile(out); err == nil {
		if kb, err := strconv.ParseInt(string(b), 10, 64); err == nil {
			r.maxRSS = kb << 10
		}
	}
	return r
}

// exitCode is the exit status in err from exec.Cmd.Run or Wait.
func exitCode(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("smithvm: %v", err)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}

// started is a smithvm process running in the background.
type started struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	// exited is closed when the process has ended and res is set.
	exited chan struct{}
	res    result
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu  chan struct{}
	buf bytes.Buffer
}

func newSyncBuffer() *syncBuffer {
	b := &syncBuffer{mu: make(chan struct{}, 1)}
	return b
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu <- struct{}{}
	defer func() { <-b.mu }()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu <- struct{}{}
	defer func() { <-b.mu }()
	return b.buf.String()
}

// start starts smithvm args... --base BASE in the background.
func (p *proj) start(args ...string) *started {
	p.t.Helper()
	return p.startEnv(baseEnv(), args...)
}

// startEnv is start with the environment env.
func (p *proj) startEnv(env []string, args ...string) *started {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	cmd := p.command(ctx, env, append(args, "--base", p.base)...)
	var out bytes.Buffer
	s := &started{cmd: cmd, stderr: newSyncBuffer(), exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &out, s.stderr
	if err := cmd.Start(); err != nil {
		cancel()
		p.t.Fatal(err)
	}
	go func() {
		defer cancel()
		err := cmd.Wait()
		code := -1
		var ee *exec.ExitError
		switch {
		case err == nil:
			code = 0
		case errors.As(err, &ee):
			code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
		}
		s.res = result{code: code, stdout: out.String(), stderr: s.stderr.String()}
		close(s.exited)
	}()
	p.t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			cmd.Process.Kill()
			<-s.exited
		}
	})
	return s
}

// wait waits for the background process to end.
func (s *started) wait(t *testing.T) result {
	t.Helper()
	select {
	case <-s.exited:
		return s.res
	case <-time.After(cmdTimeout + 5*time.Second):
		t.Fatal("smithvm did not exit")
	}
	return result{}
}

// waitFor polls until cond holds, failing the test after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pidIn reads the pid that the helper wrote to file, waiting for it.
func pidIn(t *testing.T, file string) int {
	t.Helper()
	var pid int
	waitFor(t, 20*time.Second, file, func() bool {
		data, err := os.ReadFile(file)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil
	})
	return pid
}

// alive reports whether pid is a live process (a zombie counts as dead).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(data)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// gone waits until pid is dead; it reports false if it still lives after
// limit.
func gone(pid int, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// stateFile is the part of state.json the tests read.
type stateFile struct {
	RunID        string               `json:"run_id"`
	WorkflowName string               `json:"workflow_name"`
	WorkflowPath string               `json:"workflow_path"`
	Status       string               `json:"status"`
	CurrentStep  string               `json:"current_step"`
	IsHalted     bool                 `json:"isHalted"`
	Context      map[string]any       `json:"context"`
	Steps        map[string]stepState `json:"steps"`
}

type stepState struct {
	Status          string         `json:"status"`
	ExitCode        int            `json:"exit_code"`
	Output          string         `json:"output"`
	Lines           []string       `json:"lines"`
	Attempts        int            `json:"attempts"`
	Truncated       bool           `json:"truncated"`
	SpillStdoutPath string         `json:"spill_stdout_path"`
	LinesTruncated  bool           `json:"lines_truncated"`
	Signal          string         `json:"signal"`
	Iterations      []iteration    `json:"iterations"`
	IterationsTotal int            `json:"iterations_total"`
	Error           *stepErrorJSON `json:"error"`
}

type stepErrorJSON struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type iteration struct {
	Index  int                  `json:"index"`
	Item   any                  `json:"item"`
	Status string               `json:"status"`
	Output string               `json:"output"`
	Steps  map[string]stepState `json:"steps"`
}

// state reads RUN_ROOT/state.json of run id.
func (p *proj) state(id string) stateFile {
	p.t.Helper()
	data, err := os.ReadFile(filepath.Join(p.runRoot(id), "state.json"))
	if err != nil {
		p.t.Fatalf("state.json of run %s: %v", id, err)
	}
	var st stateFile
	if err := json.Unmarshal(data, &st); err != nil {
		p.t.Fatalf("state.json of run %s: %v", id, err)
	}
	return st
}

// event is one line of events.jsonl.
type event struct {
	Timestamp  string   `json:"timestamp"`
	RunID      string   `json:"run_id"`
	Seq        *int     `json:"event_seq"`
	Level      string   `json:"level"`
	Step       string   `json:"step"`
	AttemptID  int      `json:"attempt_id"`
	AttemptUID string   `json:"attempt_uid"`
	Event      string   `json:"event"`
	Duration   *float64 `json:"duration"`
	ExitCode   *int     `json:"exit_code"`
}

// events reads RUN_ROOT/logs/events.jsonl of run id.
func (p *proj) events(id string) []event {
	p.t.Helper()
	f, err := os.Open(filepath.Join(p.runRoot(id), "logs", "events.jsonl"))
	if err != nil {
		p.t.Fatalf("events.jsonl: %v", err)
	}
	defer f.Close()
	var evs []event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			p.t.Fatalf("events.jsonl line %q: %v", sc.Text(), err)
		}
		evs = append(evs, ev)
	}
	if err := sc.Err(); err != nil {
		p.t.Fatal(err)
	}
	return evs
}

// checkEvents fails the test unless the events are well formed
// (eventProblems).
func checkEvents(t *testing.T, evs []event) {
	t.Helper()
	for _, p := range eventProblems(evs) {
		t.Error(p)
	}
}

// eventProblems lists where event_seq does not strictly increase over the
// whole events.jsonl, an event of a step has no attempt_id (the try's
// number) or a step_started event of a worker step has no attempt_uid of
// its own.
func eventProblems(evs []event) []string {
	var out []string
	prev := 0
	ids := map[string]bool{}
	for i, ev := range evs {
		if ev.Seq == nil || *ev.Seq <= prev {
			out = append(out, fmt.Sprintf("events.jsonl line %d: event_seq %v after %d, want strictly increasing", i+1, ev.Seq, prev))
		}
		if ev.Seq != nil {
			prev = *ev.Seq
		}
		if ev.Step != "" && !strings.HasPrefix(ev.Event, "run_") && ev.AttemptID < 1 {
			out = append(out, fmt.Sprintf("events.jsonl line %d: %s of %s has attempt_id %d, want the try's number", i+1, ev.Event, ev.Step, ev.AttemptID))
		}
		if ev.Event == "step_started" && ev.AttemptUID != "" {
			if ids[ev.AttemptUID] {
				out = append(out, fmt.Sprintf("events.jsonl line %d: step_started %s has attempt_uid %q, want a new one", i+1, ev.Step, ev.AttemptUID))
			}
			ids[ev.AttemptUID] = true
		}
	}
	return out
}

// exists reports whether rel (relative to BASE) exists (not following a
// final symlink).
func (p *proj) exists(rel string) bool {
	_, err := os.Lstat(filepath.Join(p.base, rel))
	return err == nil
}

// want fails the test unless the run ended with code.
func want(t *testing.T, r result, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("smithvm exit status = %d, want %d\nstderr:\n%s\nstdout:\n%s", r.code, code, clip(r.stderr), clip(r.stdout))
	}
}

// inCI reports whether the tests run in CI (CI=true), where a missing tool is
// a failure, not a skip.
func inCI() bool { return os.Getenv("CI") == "true" }

// clip shortens long output for a failure message.
func clip(s string) string {
	const max = 3000
	if len(s) <= max {
		return s
	}
	return s[:max/2] + "\n[...]\n" + s[len(s)-max/2:]
}

// workflow returns testdata/workflows/NAME: the workflow of a test that
// must stay Go (it kills, times or drives a process); a case that only runs
// and checks is a script (testdata/script).
func workflow(name string) string {
	b, err := os.ReadFile(filepath.Join("testdata", "workflows", name))
	if err != nil {
		panic(err)
	}
	return string(b)
}

// fillWorkflow is testdata/workflows/NAME executed as a text/template on
// data: a workflow a test fills in (per preset, or generated to a size).
func fillWorkflow(t *testing.T, name string, data any) string {
	t.Helper()
	tmpl, err := template.New(filepath.Base(name)).Parse(workflow(name))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, data); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
