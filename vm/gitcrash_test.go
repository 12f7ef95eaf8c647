package vm_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"smith/compiler"
	"smith/vm"
	"smith/workers"
	"smith/workers/confine"
)

// A crash at any instant of an isolated run's git (CONTRACT 12.4), the
// VM's part: the checkpoint of a chosen change fails (the kill), the state
// is rebuilt from the changes saved before it, the git repository is left
// as the kill left it (or as a kill in the middle of a git command would),
// and the resumed run must end with the branch an uninterrupted run has.

// gitCrashYAML: each step adds one file of a random name (mktemp), so a
// step that runs again on top of its own half-done change leaves two.
const gitCrashYAML = `version: "1.0"
name: gitcrash
isolation: git-worktree
steps:
  - name: One
    command: [mktemp, -p, ., one.XXXXXX]
    on: {success: {goto: Par}, failure: {error: "One failed"}}
  - name: Par
    parallel:
      branches:
        a: [{name: A, command: [mktemp, -p, ., a.XXXXXX], on: {always: {goto: _branch_end}}}]
        b: [{name: B, command: [mktemp, -p, ., b.XXXXXX], on: {always: {goto: _branch_end}}}]
    on: {success: {goto: Two}, failure: {error: "Par failed"}}
  - name: Two
    command: [mktemp, -p, ., two.XXXXXX]
    on: {success: {goto: _end}, failure: {error: "Two failed"}}
`

// gitCrashProj is a BASE whose WORKSPACE is a git repository with one
// commit, and the compiled workflow.
type gitCrashProj struct {
	dirs    confine.Dir
	runRoot string
	reg     *workers.Registry
}

func newGitCrashProj(t *testing.T) *gitCrashProj {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	base := t.TempDir()
	dirs, err := confine.New(base)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dirs.Workspace, 0o755); err != nil {
		t.Fatal(err)
	}
	hostGit(t, dirs.Workspace, "init", "-q", "-b", "main")
	hostGit(t, dirs.Workspace, "-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-q", "--allow-empty", "-m", "start")
	runRoot := filepath.Join(base, ".orchestrator", "runs", "r1")
	if err := os.MkdirAll(runRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	return &gitCrashProj{dirs: dirs, runRoot: runRoot, reg: workers.NewRegistry(os.LookupEnv)}
}

// hostGit runs plain git in dir and returns its trimmed output.
func hostGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// machine returns a machine of the workflow saving into r.
func (p *gitCrashProj) machine(t *testing.T, r *rec) *vm.Machine {
	t.Helper()
	res, ds := compiler.Compile("gitcrash.yaml", []byte(gitCrashYAML), compiler.Options{})
	if res.Prog == nil {
		t.Fatal(ds.Error())
	}
	cfg := r.config(nil)
	cfg.Dirs, cfg.RunRoot, cfg.Registry = p.dirs, p.runRoot, p.reg
	cfg.Host = workers.Local{Env: os.LookupEnv}
	m, err := vm.New(res.Prog, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// branchShape is what must equal an uninterrupted run's: the subjects of
// the commits on smith/r1 (step, attempt; joins) and the files of its
// tree by their prefix (the mktemp names differ).
func (p *gitCrashProj) branchShape(t *testing.T) string {
	t.Helper()
	ws := p.dirs.Workspace
	var b strings.Builder
	// The run's own line in order; every commit's subject sorted (the
	// order of the threads' commits in a log follows their times).
	b.WriteString(hostGit(t, ws, "log", "--first-parent", "--format=%s", "main..smith/r1"))
	all := strings.Split(hostGit(t, ws, "log", "--format=%s", "main..smith/r1"), "\n")
	slices.Sort(all)
	b.WriteString("\nall:\n" + strings.Join(all, "\n"))
	b.WriteString("\nfiles:")
	for _, f := range strings.Fields(hostGit(t, ws, "ls-tree", "-r", "--name-only", "smith/r1")) {
		b.WriteString(" " + strings.SplitN(f, ".", 2)[0])
	}
	b.WriteString("\nunits: " + hostGit(t, ws, "for-each-ref", "--format=%(refname:short)", "refs/heads/smith-unit/"))
	b.WriteString("\nmain: " + hostGit(t, ws, "log", "--format=%s", "main"))
	return b.String()
}

// seqOf returns the seq of the first saved change that records step as
// completed.
func seqOf(t *testing.T, r *rec, step string) int {
	t.Helper()
	for _, raw := range r.deltas {
		var d vm.Delta
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		for _, c := range d.Steps {
			if c.Name == step && c.Result.Status == vm.StepCompleted {
				return d.Seq
			}
		}
	}
	t.Fatalf("no change completes %s", step)
	return 0
}

// TestGitCrashResumes kills the run at the save of a step's result (its
// commit made, not saved) and at the save of the join (the merges made,
// not saved; and, planted, a merge cut off with MERGE_HEAD), resumes it,
// and compares the branch with an uninterrupted run's: the same commits
// (one per step, attempt 1, no step committed twice), the same files (none
// of a cut-off step's left on top), no unit branch left, main untouched.
func TestGitCrashResumes(t *testing.T) {
	t.Parallel()
	ref := newGitCrashProj(t)
	whole := &rec{}
	if _, err := ref.machine(t, whole).Run(context.Background()); err != nil {
		t.Fatalf("uninterrupted run: %v", err)
	}
	want := ref.branchShape(t)
	if !strings.Contains(want, "smith: One (run r1, attempt 1)") || !strings.Contains(want, "smith: B (run r1, attempt 1)") || !strings.Contains(want, "files: a b one two") {
		t.Fatalf("uninterrupted branch:\n%s", want)
	}
	for _, tt := range []struct {
		name  string
		step  string // the kill is at the save of its result
		plant func(t *testing.T, p *gitCrashProj, st *vm.State)
	}{
		{"step commit not saved", "One", nil},
		{"join not saved", "Par", nil},
		{"join merge cut off", "Par", func(t *testing.T, p *gitCrashProj, st *vm.State) {
			wt := st.WorktreePath
			hostGit(t, wt, "reset", "-q", "--hard", st.Head)
			hostGit(t, wt, "-c", "user.name=t", "-c", "user.email=t@localhost", "merge", "--no-commit", "--no-ff", "smith-unit/r1/Par/a")
		}},
		{"unit worktree half made", "Par", func(t *testing.T, p *gitCrashProj, st *vm.State) {
			u := workers.UnitWorktreePath(p.dirs, "r1", "Par", "b")
			if err := os.RemoveAll(u); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(u, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{"thread step commit not saved, its worktree emptied", "B", func(t *testing.T, p *gitCrashProj, st *vm.State) {
			u := workers.UnitWorktreePath(p.dirs, "r1", "Par", "b")
			if err := os.RemoveAll(u); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(u, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{"thread step commit not saved", "A", nil},
		{"base ref lost", "Two", func(t *testing.T, p *gitCrashProj, st *vm.State) {
			hostGit(t, p.dirs.Workspace, "update-ref", "-d", "refs/smith-base/r1")
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newGitCrashProj(t)
			crashed := &rec{killAt: seqOf(t, whole, tt.step)}
			if _, err := p.machine(t, crashed).Run(context.Background()); err == nil {
				t.Fatal("Run() with a failing checkpoint = nil error, want the kill")
			}
			st := crashed.rebuilt(t)
			if tt.plant != nil {
				tt.plant(t, p, st)
			}
			if _, err := p.machine(t, &rec{}).Resume(context.Background(), st, vm.ResumeOptions{}); err != nil {
				t.Fatalf("Resume() = %v", err)
			}
			if got := p.branchShape(t); got != want {
				t.Errorf("branch after the crash and resume:\n%s\nwant (uninterrupted):\n%s", got, want)
			}
			if _, err := os.Stat(filepath.Join(p.dirs.Base, ".orchestrator", "worktrees", "r1", ".git")); err != nil {
				t.Errorf("the run's worktree: %v", err)
			}
			if out, err := exec.Command("git", "-C", st.WorktreePath, "rev-parse", "--verify", "--quiet", "MERGE_HEAD").Output(); err == nil {
				t.Errorf("MERGE_HEAD left: %s", out)
			}
			if got := hostGit(t, p.dirs.Workspace, "rev-parse", "refs/smith-base/r1"); got != hostGit(t, p.dirs.Workspace, "rev-parse", "main") {
				t.Errorf("base ref = %s, want main's commit", got)
			}
		})
	}
}
