package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"smith/isa"
	"smith/lang"
	"smith/source"
	"smith/workers/confine"
	"smith/workers/step"
)

// internalHelperVar makes the test binary, run with
// -test.run=^TestInternalHelperProcess$ -- MODE ARGS..., act as a tool.
const internalHelperVar = "SMITH_INTERNAL_HELPER"

// TestInternalHelperProcess is the child process of the process-worker
// tests, not a test. Modes:
//
//	pwd              print the working directory, exit 0
//	log N CODE       print N numbered lines alternately to stdout and stderr, exit CODE
//	print TEXT CODE  print TEXT to stdout, exit CODE
//	sleep D          sleep D, exit 0
func TestInternalHelperProcess(t *testing.T) {
	if os.Getenv(internalHelperVar) != "1" {
		return
	}
	args := os.Args
	for len(args) > 0 && args[0] != "--" {
		args = args[1:]
	}
	arg := func(i int) string {
		if i+1 < len(args) {
			return args[i+1]
		}
		return ""
	}
	num := func(i int) int {
		n, _ := strconv.Atoi(arg(i))
		return n
	}
	switch arg(0) {
	case "pwd":
		wd, err := os.Getwd()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(97)
		}
		fmt.Print(wd)
		os.Exit(0)
	case "log":
		for i := range num(1) {
			if i%2 == 0 {
				fmt.Fprintf(os.Stdout, "stdout line %d\n", i)
			} else {
				fmt.Fprintf(os.Stderr, "stderr line %d\n", i)
			}
		}
		os.Exit(num(2))
	case "print":
		fmt.Print(arg(1))
		os.Exit(num(2))
	case "recorded":
		// whether this process's group is recorded in a record file
		// RUN_ROOT/procs-* (RUN_ROOT is arg 1) while it runs: the record is
		// written just after the start, so a loaded machine may run the
		// child first; it looks for 5 s.
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			files, _ := filepath.Glob(filepath.Join(arg(1), "procs-*"))
			for _, file := range files {
				b, _ := os.ReadFile(file)
				if f := strings.Fields(string(b)); len(f) > 0 && f[0] == strconv.Itoa(syscall.Getpgrp()) {
					fmt.Print("recorded")
					os.Exit(0)
				}
			}
		}
		fmt.Print("not recorded")
		os.Exit(0)
	case "sleep":
		d, _ := time.ParseDuration(arg(1))
		time.Sleep(d)
		os.Exit(0)
	}
	fmt.Fprintf(os.Stderr, "unknown internal helper mode %q\n", arg(0))
	os.Exit(98)
}

// toolArgv is the argv that runs the test binary as a tool in mode.
func toolArgv(t *testing.T, exe string, mode ...string) []string {
	t.Helper()
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			t.Fatal(err)
		}
	}
	return append([]string{exe, "-test.run=^TestInternalHelperProcess$", "--"}, mode...)
}

// An iwProject is a project for the internal worker tests: BASE with its
// WORKSPACE, the RUN_ROOT of run r1 and a worktree of r1.
type iwProject struct {
	t        *testing.T
	dirs     confine.Dir
	runRoot  string
	worktree string
}

func newIWProject(t *testing.T) iwProject {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dirs, err := confine.New(base)
	if err != nil {
		t.Fatal(err)
	}
	p := iwProject{
		t:        t,
		dirs:     dirs,
		runRoot:  filepath.Join(base, ".orchestrator", "runs", "r1"),
		worktree: filepath.Join(base, ".orchestrator", "worktrees", "r1"),
	}
	for _, d := range []string{dirs.Workspace, p.runRoot, p.worktree} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// request returns a request for worker in block "Blk" of run r1, with the
// worktree as worktree_path and the helper mode in the environment.
func (p iwProject) request(worker string, payload ...step.Segment) *step.Request {
	return &step.Request{
		RunID:        "r1",
		Step:         "Blk",
		Kind:         isa.KindInternal,
		Worker:       worker,
		Payload:      payload,
		WorktreePath: p.worktree,
		Dirs:         p.dirs,
		RunRoot:      p.runRoot,
		Env:          []step.EnvVar{{Name: internalHelperVar, Value: "1"}},
	}
}

// runInternal runs the internal worker of req.
func runIW(t *testing.T, req *step.Request) step.Result {
	t.Helper()
	fn, ok := Workers()[req.Worker]
	if !ok {
		t.Fatalf("Workers()[%q] = false, want the worker", req.Worker)
	}
	return fn(context.Background(), Env{}, req)
}

// segmentsText prints segments as "TYPE: content" lines.
func segmentsText(segs []step.Segment) string {
	var b strings.Builder
	for _, s := range segs {
		fmt.Fprintf(&b, "%s: %s\n", s.Type, s.Content)
	}
	return b.String()
}

// codeOf returns the code of a Result's error, or "".
func codeOf(err error) source.Code {
	var c source.Coded
	if errors.As(err, &c) {
		return c.ErrCode()
	}
	return ""
}

func TestInternalNames(t *testing.T) {
	t.Parallel()
	// lang.InternalWorkers is the one catalog: every entry has an
	// implementation here, and every implementation an entry there.
	names := lang.InternalNames()
	if len(internalImpls) != len(names) {
		t.Errorf("%d internal worker implementations for %d names in lang.InternalWorkers", len(internalImpls), len(names))
	}
	for n := range internalImpls {
		if lang.LookupInternal(n) == nil {
			t.Errorf("internal worker %q is implemented but not in lang.InternalWorkers", n)
		}
	}
	for _, n := range names {
		if fn, ok := Workers()[n]; !ok || fn == nil {
			t.Errorf("Workers()[%q] = %v, %v, want a worker", n, fn != nil, ok)
		}
	}
	for _, n := range []string{"TestRunner", "Internal:testrunner", "Internal:Nope", ""} {
		if _, ok := Workers()[n]; ok {
			t.Errorf("Workers()[%q] = true, want false", n)
		}
	}
}

func TestSegmentIDs(t *testing.T) {
	t.Parallel()
	p := newIWProject(t)
	req := p.request(lang.InternalUpdateChangePlan, step.Segment{Type: "X"}, step.Segment{Type: step.SegNewFiles, Content: `["/abs", "../../../out"]`})
	res := runIW(t, req)
	var ids []string
	for _, s := range res.Segments {
		ids = append(ids, s.ID)
		if s.Timestamp != "" {
			t.Errorf("segment %s has timestamp %q, want empty for the VM", s.ID, s.Timestamp)
		}
	}
	if want := []string{"r1/Blk/3", "r1/Blk/4"}; !slices.Equal(ids, want) {
		t.Errorf("segment ids = %v, want %v", ids, want)
	}
}

// TestTestRunnerCwdIsWorktree: the worker must spawn the test command in the
// worktree directory. The command is a relative path that exists only in
// the worktree, and the child prints its working directory.
func TestTestRunnerCwdIsWorktree(t *testing.T) {
	t.Parallel()
	p := newIWProject(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(exe, filepath.Join(p.worktree, "smith-tool")); err != nil {
		t.Fatal(err)
	}
	req := p.request(lang.InternalTestRunner)
	req.Config.TestCommand = toolArgv(t, "./smith-tool", "pwd")
	res := runIW(t, req)
	if res.Signal != lang.SigSuccess || res.Output != p.worktree {
		t.Fatalf("TestRunner = %s, output %q, segments %q, want %s, %q", res.Signal, res.Output, segmentsText(res.Segments), lang.SigSuccess, p.worktree)
	}
	if got, want := segmentsText(res.Segments), "TEST_RESULT: {\"outcome\":\"PASS\"}\n"; got != want {
		t.Errorf("TestRunner segments = %q, want %q", got, want)
	}
}

// TestToolGroupsRecorded: the process group of a TestRunner, RunLinter or
// RunBuilder run is recorded in RUN_ROOT/procs-* while it runs, as a
// command step's is, so a resume after a crash kills what it left.
func TestToolGroupsRecorded(t *testing.T) {
	t.Parallel()
	for _, worker := range []string{lang.InternalTestRunner, lang.InternalRunLinter, lang.InternalRunBuilder} {
		t.Run(worker, func(t *testing.T) {
			t.Parallel()
			p := newIWProject(t)
			req := p.request(worker)
			argv := toolArgv(t, "", "recorded", p.runRoot)
			req.Config.TestCommand, req.Config.LintCommand, req.Config.BuildCommand = argv, argv, argv
			if res := runIW(t, req); res.Output != "recorded" {
				t.Errorf("%s: the tool's group in RUN_ROOT/procs: %q (signal %s), want recorded", worker, res.Output, res.Signal)
			}
		})
	}
}

func TestTestRunnerDefaultsToWorkspace(t *testing.T) {
	t.Parallel()
	p := newIWProject(t)
	req := p.request(lang.InternalTestRunner)
	req.WorktreePath = ""
	req.Config.TestCommand = toolArgv(t, "", "pwd")
	res := runIW(t, req)
	if res.Signal != lang.SigSuccess || res.Output != p.dirs.Workspace {
		t.Errorf("TestRunner without worktree_path = %s, output %q, want %s, %q", res.Signal, res.Output, lang.SigSuccess, p.dirs.Workspace)
	}
}

// testResult decodes a TEST_RESULT segment.
type testResult struct {
	Outcome  string `json:"outcome"`
	ExitCode *int   `json:"exit_code"`
	Log      string `json:"log"`
}

func TestTestRunnerFailureHasCompleteLog(t *testing.T) {
	t.Parallel()
	p := newIWProject(t)
	const lines = 3000
	req := p.request(lang.InternalTestRunner)
	req.Config.TestCommand = toolArgv(t, "", "log", strconv.Itoa(lines), "3")
	res := runIW(t, req)
	if res.Signal != lang.SigFailure || res.ExitCode != 3 || len(res.Segments) != 1 || res.Segments[0].Type != step.SegTestResult {
		t.Fatalf("TestRunner = %s, exit %d, segments %d, want %s, 3, one TEST_RESULT", res.Signal, res.ExitCode, len(res.Segments), lang.SigFailure)
	}
	var tr testResult
	if err := json.Unmarshal([]byte(res.Segments[0].Content), &tr); err != nil {
		t.Fatalf("TEST_RESULT content %q: %v", res.Segments[0].Content, err)
	}
	if tr.Outcome != "FAIL" || tr.ExitCode == nil || *tr.ExitCode != 3 {
		t.Errorf("TEST_RESULT = outcome %q, exit_code %v, want FAIL, 3", tr.Outcome, tr.ExitCode)
	}
	for i := range lines {
		stream := "stdout"
		if i%2 == 1 {
			stream = "stderr"
		}
		if line := fmt.Sprintf("%s line %d\n", stream, i); !strings.Contains(tr.Log, line) {
			t.Fatalf("TEST_RESULT log lacks %q (log has %d bytes)", line, len(tr.Log))
		}
	}
	if got, want := strings.Count(tr.Log, "\n"), lines; got != want {
		t.Errorf("TEST_RESULT log has %d lines, want %d", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(p.runRoot, "logs", "Blk-stderr.log")); err != nil || !strings.Contains(string(b), "stderr line 1\n") {
		t.Errorf("stderr log = %q, %v, want the stderr lines", b, err)
	}
}

func TestTestRunnerCannotStart(t *testing.T) {
	t.Parallel()
	p := newIWProject(t)
	notExec := filepath.Join(p.worktree, "not-executable")
	if err := os.WriteFile(notExec, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		argv []string
		want string
		exit int
	}{
		{"not found", []string{"smith-no-such-test-tool", "run"}, "config.test_command: command 'smith-no-such-test-tool' not found", step.ExitNotFound},
		{"not executable", []string{"./not-executable"}, "config.test_command: command './not-executable' cannot be started", step.ExitNotFound},
		{"missing path", []string{"./missing/tool"}, "config.test_command: command './missing/tool' not found", step.ExitNotFound},
		{"empty", nil, "config.test_command is not set", step.ExitNotRun},
		{"empty name", []string{""}, "config.test_command is not set", step.ExitNotRun},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := p.request(lang.InternalTestRunner)
			req.Config.TestCommand = tt.argv
			res := runIW(t, req)
			if res.Signal != lang.SigFailure || res.ExitCode != tt.exit || codeOf(res.Err) != source.EExec {
				t.Errorf("TestRunner(%q) = %s, exit %d, err %v, want %s, %d, E_EXEC", tt.argv, res.Signal, res.ExitCode, res.Err, lang.SigFailure, tt.exit)
			}
			if len(res.Segments) != 1 || res.Segments[0].Type != step.SegError || !strings.HasPrefix(res.Segments[0].Content, tt.want) {
				t.Errorf("TestRunner(%q) segments = %q, want one ERROR starting %q", tt.argv, segmentsText(res.Segments), tt.want)
			}
		})
	}
}

func TestTestRunnerTimeout(t *testing.T) {
	t.Parallel()
	p := newIWProject(t)
	req := p.request(lang.InternalTestRunner)
	req.Config.TestCommand = toolArgv(t, "", "sleep", "60s")
	req.Timeout = 200 * time.Millisecond
	res := runIW(t, req)
	if res.Signal != lang.SigTimeout || codeOf(res.Err) != source.ETimeout {
		t.Fatalf("TestRunner = %s, err %v, want %s, E_TIMEOUT", res.Signal, res.Err, lang.SigTimeout)
	}
	if len(res.Segments) != 1 || !strings.Contains(res.Segments[0].Content, `"outcome":"FAIL"`) {
		t.Errorf("TestRunner segments = %q, want a failed TEST_RESULT", segmentsText(res.Segments))
	}
}

func TestTestRunnerWorktreeOutsideBase(t *testing.T) {
	t.Parallel()
	p := newIWProject(t)
	req := p.request(lang.InternalTestRunner)
	req.WorktreePath = t.TempDir()
	req.Config.TestCommand = toolArgv(t, "", "pwd")
	res := runIW(t, req)
	if res.Signal != lang.SigFailure || codeOf(res.Err) != source.EPathEscape || len(res.Segments) != 1 || res.Segments[0].Type != step.SegError {
		t.Errorf("TestRunner outside BASE = %s, err %v, segments %q, want %s, E_PATH_ESCAPE, one ERROR", res.Signal, res.Err, segmentsText(res.Segments), lang.SigFailure)
	}
}

func TestRunLinter(t *testing.T) {
	t.Parallel()
	p := newIWProject(t)
	report := "[\n  {\"file\": \"a.go\",\n   \"line\": 3, \"msg\": \"unused <x>\"}\n]\n"
	tests := []struct {
		name     string
		argv     []string
		signal   string
		segments string
	}{
		{"exit 0", toolArgv(t, "", "print", report, "0"), lang.SigSuccess, ""},
		{"JSON report parsed", toolArgv(t, "", "print", report, "1"), lang.SigFailure,
			"LINT_RESULT: [{\"file\":\"a.go\",\"line\":3,\"msg\":\"unused <x>\"}]\n"},
		{"text report kept raw", toolArgv(t, "", "print", "a.go:3: unused x", "2"), lang.SigFailure,
			"LINT_RESULT: a.go:3: unused x\n"},
		{"missing linter", []string{"smith-no-such-linter"}, lang.SigFailure,
			"ERROR: config.lint_command: command 'smith-no-such-linter' not found: it is not on PATH; install it, or give its full path in the argv\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := p.request(lang.InternalRunLinter)
			req.Config.LintCommand = tt.argv
			res := runIW(t, req)
			if got := segmentsText(res.Segments); res.Signal != tt.signal || got != tt.segments {
				t.Errorf("RunLinter = %s, segments %q, want %s, %q", res.Signal, got, tt.signal, tt.segments)
			}
		})
	}
}

func TestRunBuilder(t *testing.T) {
	t.Parallel()
	p := newIWProject(t)
	tests := []struct {
		name   string
		argv   []string
		signal string
		lines  int
	}{
		{"exit 0", toolArgv(t, "", "log", "4", "0"), lang.SigSuccess, 0},
		{"failure has the raw log", toolArgv(t, "", "log", "400", "2"), lang.SigFailure, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := p.request(lang.InternalRunBuilder)
			req.Config.BuildCommand = tt.argv
			res := runIW(t, req)
			if res.Signal != tt.signal {
				t.Fatalf("RunBuilder = %s, want %s", res.Signal, tt.signal)
			}
			if tt.lines == 0 {
				if len(res.Segments) != 0 {
					t.Errorf("RunBuilder segments = %q, want none", segmentsText(res.Segments))
				}
				return
			}
			if len(res.Segments) != 1 || res.Segments[0].Type != step.SegBuildResult {
				t.Fatalf("RunBuilder segments = %q, want one BUILD_RESULT", segmentsText(res.Segments))
			}
			log := res.Segments[0].Content
			for i := range tt.lines {
				stream := "stdout"
				if i%2 == 1 {
					stream = "stderr"
				}
				if line := fmt.Sprintf("%s line %d\n", stream, i); !strings.Contains(log, line) {
					t.Fatalf("BUILD_RESULT lacks %q", line)
				}
			}
			if strings.HasPrefix(log, "{") {
				t.Errorf("BUILD_RESULT = %q..., want the raw log", log[:20])
			}
		})
	}
}
