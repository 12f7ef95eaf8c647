package e2e

// End-to-end tests of workflows.json manifests (CONTRACT sections 5, 7, 8,
// 9; issue 4): the binaries TestMain built (built.smithvm, built.smithc)
// run manifests with mock scripts in their own BASE under t.TempDir().

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// An mfBase is one BASE for a manifest test.
type mfBase struct {
	t    *testing.T
	base string
	ws   string
}

func newMfBase(t *testing.T) *mfBase {
	t.Helper()
	base := t.TempDir()
	ws := filepath.Join(base, "workspace")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	return &mfBase{t: t, base: base, ws: ws}
}

// write writes files (path relative to BASE -> content).
func (b *mfBase) write(files map[string]string) {
	b.t.Helper()
	for rel, content := range files {
		abs := filepath.Join(b.base, rel)
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			b.t.Fatal(err)
		}
		if err := os.WriteFile(abs, []byte(content), 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
}

// An mfResult is how one smithvm process ended.
type mfResult struct {
	code           int
	stdout, stderr string
}

// run runs a binary with args in BASE (smithvm gets --base BASE).
func (b *mfBase) run(bin string, args ...string) mfResult {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	if bin == built.smithvm {
		args = append(args, "--base", b.base)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = b.base
	cmd.Env = baseEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		b.t.Fatalf("%s: %v", bin, err)
	}
	return mfResult{code: code, stdout: out.String(), stderr: errb.String()}
}

// vm runs smithvm and fails the test unless it exits with code.
func (b *mfBase) vm(code int, args ...string) mfResult {
	b.t.Helper()
	r := b.run(built.smithvm, args...)
	if r.code != code {
		b.t.Fatalf("smithvm %s: exit %d, want %d\nstderr:\n%s", strings.Join(args, " "), r.code, code, r.stderr)
	}
	return r
}

// mfState is the part of state.json these tests read.
type mfState struct {
	Status       string `json:"status"`
	IsHalted     bool   `json:"isHalted"`
	CurrentStep  string `json:"current_step"`
	WorktreePath string `json:"worktree_path"`
	ChangePlan   []string
	Stats        struct {
		TotalTokensUsed   int `json:"totalTokensUsed"`
		TotalLinesWritten int `json:"totalLinesWritten"`
	} `json:"stats"`
	Payload []struct {
		ID, Type, Content string
	} `json:"payload"`
	ReturnStack []json.RawMessage `json:"return_stack"`
	Steps       map[string]struct {
		Status string `json:"status"`
		Signal string `json:"signal"`
		Output string `json:"output"`
		Error  *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	} `json:"steps"`
}

// state reads RUN_ROOT/state.json of run id.
func (b *mfBase) state(id string) mfState {
	b.t.Helper()
	data, err := os.ReadFile(filepath.Join(b.base, ".orchestrator", "runs", id, "state.json"))
	if err != nil {
		b.t.Fatal(err)
	}
	var st mfState
	if err := json.Unmarshal(data, &st); err != nil {
		b.t.Fatalf("state.json of %s: %v", id, err)
	}
	var plan struct {
		ChangePlan []string `json:"change_plan"`
	}
	if err := json.Unmarshal(data, &plan); err != nil {
		b.t.Fatal(err)
	}
	st.ChangePlan = plan.ChangePlan
	return st
}

// types lists the payload as "TYPE:content" lines.
func (st mfState) types() string {
	var b strings.Builder
	for _, s := range st.Payload {
		b.WriteString(s.Type + ":" + s.Content + "\n")
	}
	return b.String()
}

// mfAsk is a manifest whose AI block Ask halts on a custom signal, goes to
// Done on SIGNAL:APPROVED and ends on SIGNAL:SUCCESS.
var mfAsk = workflow("mf_ask.json")

// mfGit runs git in dir.
func mfGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestManifestE2EWorktree: with config.isolation git-worktree and a git
// WORKSPACE, the run works in BASE/.orchestrator/worktrees/<id> on branch
// smith/<id>: files are written there and commands run there; resume
// reuses it; every step that changed files is committed on the branch;
// smithvm clean refuses the unmerged branch and removes it with --force.
func TestManifestE2EWorktree(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed (.ci/run installs it)")
	}
	b := newMfBase(t)
	b.write(map[string]string{
		"flow.json":               workflow("manifest_worktree.json"),
		"workspace/README.md":     "demo\n",
		"workspace/mock/gen.json": `[{"reply": "{\"filePath\": \"hello.go\", \"fileContent\": \"package main\\n\"}"}]`,
	})
	mfGit(t, b.ws, "init", "-q")
	mfGit(t, b.ws, "add", ".")
	mfGit(t, b.ws, "commit", "-q", "-m", "init")
	b.vm(4, "run", "flow.json", "--run-id", "w1")
	wt := filepath.Join(b.base, ".orchestrator", "worktrees", "w1")
	st := b.state("w1")
	if st.WorktreePath != wt {
		t.Errorf("worktree_path = %q, want %q", st.WorktreePath, wt)
	}
	if _, err := os.Stat(filepath.Join(wt, "hello.go")); err != nil {
		t.Errorf("hello.go was not written in the worktree: %v", err)
	}
	if _, err := os.Stat(filepath.Join(b.ws, "hello.go")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("hello.go was written in WORKSPACE too (stat: %v)", err)
	}
	if got := st.Steps["Test"].Signal; got != "SIGNAL:SUCCESS" {
		t.Errorf("Test signal = %s, want SIGNAL:SUCCESS (test -f hello.go in the worktree)", got)
	}
	if got := mfGit(t, wt, "rev-parse", "--abbrev-ref", "HEAD"); got != "smith/w1" {
		t.Errorf("worktree branch = %q, want smith/w1", got)
	}
	b.vm(0, "resume", "w1", "--signal", "SIGNAL:APPROVED")
	if st := b.state("w1"); st.WorktreePath != wt || st.Status != "completed" {
		t.Errorf("after resume: worktree_path %q, status %s, want %q, completed", st.WorktreePath, st.Status, wt)
	}
	if got := mfGit(t, b.ws, "log", "--format=%s", "-1", "smith/w1"); got != "smith: Write (run w1, attempt 1)" {
		t.Errorf("last commit on smith/w1 = %q, want FileSystemWriter's step commit", got)
	}
	if r := b.vm(2, "clean", "w1"); !strings.Contains(r.stderr, "E_UNMERGED") {
		t.Errorf("clean of unmerged work: want E_UNMERGED\n%s", r.stderr)
	}
	b.vm(0, "clean", "w1", "--force")
	if _, err := os.Stat(wt); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("worktree still exists after clean (stat: %v)", err)
	}
	if branches := mfGit(t, b.ws, "branch", "--list", "smith/w1"); branches != "" {
		t.Errorf("branch smith/w1 still exists after clean: %q", branches)
	}
}

// TestManifestE2EConflictActualChanges: with git-worktree isolation the
// conflict scan compares what each active run actually changed on its
// branch, not only the declared plans, and the run that was there first
// hears of it too: a CONFLICT segment at its next step (CONTRACT 12.4).
func TestManifestE2EConflictActualChanges(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is not installed")
		}
		t.Skip("git is not installed (.ci/run installs it)")
	}
	b := newMfBase(t)
	flow := workflow("manifest_conflict_actual_changes.json")
	b.write(map[string]string{
		"flow.json":                flow,
		"workspace/README.md":      "demo\n",
		"workspace/mock/gen.json":  `[{"reply": "{\"filePath\": \"pkg/shared.go\", \"fileContent\": \"package pkg\\n\"}"}]`,
		"workspace/mock/plan.json": `[{"reply": "[]"}]`,
	})
	mfGit(t, b.ws, "init", "-q")
	mfGit(t, b.ws, "add", ".")
	mfGit(t, b.ws, "commit", "-q", "-m", "init")
	b.vm(4, "run", "flow.json", "--run-id", "a1")
	b.vm(4, "run", "flow.json", "--run-id", "a2")
	has := func(st mfState, run string) bool {
		return slices.ContainsFunc(st.Payload, func(s struct{ ID, Type, Content string }) bool {
			return s.Type == "CONFLICT" && strings.Contains(s.Content, "pkg/shared.go") && strings.Contains(s.Content, run)
		})
	}
	if !has(b.state("a2"), "a1") {
		t.Errorf("a2 (declaring nothing) found no CONFLICT over pkg/shared.go with a1: %q", b.state("a2").types())
	}
	if has(b.state("a1"), "a2") {
		t.Errorf("a1 heard of a2 before its next step")
	}
	b.vm(0, "resume", "a1", "--signal", "SIGNAL:APPROVED")
	if !has(b.state("a1"), "a2") {
		t.Errorf("a1 was not told of the conflict with a2 at its next step: %q", b.state("a1").types())
	}
}

// TestManifestE2EExample runs examples/feature in a copy of its BASE: the
// validation-fix loop, the writer, the failing then passing tests with the
// fix loop in between, and the review halt (exit 4); resume --signal
// SIGNAL:APPROVED --note completes it.
func TestManifestE2EExample(t *testing.T) {
	base := t.TempDir()
	src := filepath.Join("..", "..", "..", "examples", "feature")
	if err := os.CopyFS(base, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	b := &mfBase{t: t, base: base, ws: filepath.Join(base, "workspace")}
	r := b.vm(4, "run", "workflows.json", "--run-id", "ex")
	for _, line := range []string{
		"INFO: Step 'Block:Feature__Fix' starting.",
		"WARNING: Run ex halted at 'Block:Feature__Review' awaiting resume.",
	} {
		if !strings.Contains(r.stderr, line) {
			t.Errorf("run stderr lacks %q:\n%s", line, r.stderr)
		}
	}
	if n := strings.Count(r.stderr, "INFO: Step 'Block:Feature__Generate' starting."); n != 2 {
		t.Errorf("Generate ran %d times, want 2 (one validation fix)", n)
	}
	hello, err := os.ReadFile(filepath.Join(b.ws, "hello.go"))
	if err != nil || !strings.Contains(string(hello), "func Hello() string") {
		t.Errorf("hello.go = %q (%v), want the fixed file", hello, err)
	}
	b.vm(0, "resume", "ex", "--signal", "SIGNAL:APPROVED", "--note", "lgtm")
	st := b.state("ex")
	if st.Status != "completed" || st.IsHalted {
		t.Errorf("status %s isHalted=%v, want completed", st.Status, st.IsHalted)
	}
	if last := st.Payload[len(st.Payload)-1]; last.Type != "USER_NOTE" || last.Content != "lgtm" {
		t.Errorf("last segment = %s:%q, want USER_NOTE:lgtm", last.Type, last.Content)
	}
	if st.Stats.TotalLinesWritten == 0 || st.Stats.TotalTokensUsed == 0 {
		t.Errorf("stats = %+v, want lines written and tokens used", st.Stats)
	}
}
