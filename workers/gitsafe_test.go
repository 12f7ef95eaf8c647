package workers

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"smith/workers/confine"
	"smith/workers/step"
)

// plantedHooks are the hooks a hostile repository plants; every git path
// of Smith's would run one of them if hooks ran (--no-verify skips only
// pre-commit and commit-msg).
var plantedHooks = []string{
	"pre-commit", "prepare-commit-msg", "commit-msg", "post-commit",
	"pre-merge-commit", "post-merge", "post-checkout", "reference-transaction",
	"post-index-change", "post-rewrite", "pre-auto-gc",
}

// hostileRepo makes WORKSPACE a repository whose configuration and files
// name a command for every way git runs one: each hook (in .git/hooks and
// in a core.hooksPath folder), core.fsmonitor, a clean/smudge/process
// filter named by .gitattributes, a diff driver and textconv, an external
// diff, a merge driver, pagers, an editor, a credential helper, an askpass
// program, an ssh command and a gpg program with signing on. Each command
// is a script that creates a file named after it in the returned marker
// folder.
func hostileRepo(t *testing.T) (confine.Dir, string) {
	t.Helper()
	needGit(t)
	base := t.TempDir()
	d, err := confine.New(base)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(d.Workspace, 0o755); err != nil {
		t.Fatal(err)
	}
	marks := t.TempDir()
	bin := t.TempDir()
	script := func(name string) string {
		p := filepath.Join(bin, name)
		body := "#!/bin/sh\n: > '" + filepath.Join(marks, name) + "'\ncat >/dev/null 2>&1 </dev/null\nexit 0\n"
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ws := d.Workspace
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = ws
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(ws, ".gitattributes"), []byte("* filter=evil diff=evil merge=evil\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "shared.txt"), []byte("start\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("add", "-A")
	run("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "init")

	hooksPath := filepath.Join(bin, "hooks")
	for _, dir := range []string{filepath.Join(ws, ".git", "hooks"), hooksPath} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, h := range plantedHooks {
			if err := os.Symlink(script("hook-"+h), filepath.Join(dir, h)); err != nil && !os.IsExist(err) {
				t.Fatal(err)
			}
		}
	}
	for _, kv := range [][2]string{
		{"core.hooksPath", hooksPath},
		{"core.fsmonitor", script("fsmonitor")},
		{"filter.evil.clean", script("filter-clean")},
		{"filter.evil.smudge", script("filter-smudge")},
		{"filter.evil.process", script("filter-process")},
		{"filter.evil.required", "true"},
		{"diff.evil.command", script("diff-command")},
		{"diff.evil.textconv", script("diff-textconv")},
		{"diff.external", script("diff-external")},
		{"merge.evil.driver", script("merge-driver") + " %O %A %B"},
		{"core.pager", script("core-pager")},
		{"pager.diff", script("pager-diff")},
		{"pager.log", script("pager-log")},
		{"core.editor", script("editor")},
		{"sequence.editor", script("sequence-editor")},
		{"credential.helper", script("credential-helper")},
		{"core.askPass", script("askpass")},
		{"core.sshCommand", script("ssh-command")},
		{"gpg.program", script("gpg-program")},
		{"commit.gpgSign", "true"},
		{"user.name", "Hostile"},
		{"user.email", "hostile@example.com"},
	} {
		run("config", kv[0], kv[1])
	}
	return d, marks
}

// markers lists the marker files planted commands left.
func markers(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// TestGitRunsNothingFromTheRepository: Smith's worktree, commit, unit,
// join, diff, merge and clean paths run in a repository that names a
// command for every hook, fsmonitor, filter, driver, pager, editor and
// helper; none may run (CONTRACT 12.4). The control at the end shows the
// plant works: plain git in the same repository runs them.
func TestGitRunsNothingFromTheRepository(t *testing.T) {
	d, marks := hostileRepo(t)
	ctx := context.Background()
	lookup := func(name string) (string, bool) {
		switch name {
		case "PATH":
			return os.Getenv("PATH"), true
		case "HOME":
			return t.TempDir(), true
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_EXTERNAL_DIFF", "GIT_PAGER", "GIT_EDITOR", "GIT_CONFIG_PARAMETERS":
			return "/nonexistent", true // an inherited GIT_* must not reach git
		}
		return "", false
	}
	l := Local{Env: lookup}
	write := func(dir, name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	wt, err := CreateWorktree(ctx, d, "r1", lookup)
	if err != nil {
		t.Fatalf("CreateWorktree = %v", err)
	}
	write(wt, "a.txt", "from the run\n")
	if h, err := l.CommitStep(ctx, step.Commit{Worktree: wt, Msg: "smith: A (run r1, attempt 1)"}); err != nil || h == "" {
		t.Fatalf("CommitStep = %q, %v", h, err)
	}
	// Two threads: one a fast-forward join, one a merge commit.
	u0, err := l.UnitWorktree(ctx, d, wt, "r1", "Par", "0", "", true)
	if err != nil {
		t.Fatalf("UnitWorktree 0 = %v", err)
	}
	u1, err := l.UnitWorktree(ctx, d, wt, "r1", "Par", "1", "", true)
	if err != nil {
		t.Fatalf("UnitWorktree 1 = %v", err)
	}
	write(u0, "u0.txt", "zero\n")
	write(u1, "u1.txt", "one\n")
	for _, u := range []string{u0, u1} {
		if _, err := l.CommitStep(ctx, step.Commit{Worktree: u, Msg: "smith: unit"}); err != nil {
			t.Fatalf("CommitStep(%s) = %v", u, err)
		}
	}
	for _, k := range []string{"0", "1"} {
		if err := l.MergeUnit(ctx, wt, "r1", "Par", k); err != nil {
			t.Fatalf("MergeUnit %s = %v", k, err)
		}
		l.RemoveUnit(ctx, d, wt, "r1", "Par", k)
	}
	// Two threads changing the same file: the merge driver would run.
	for _, k := range []string{"2", "3"} {
		u, err := l.UnitWorktree(ctx, d, wt, "r1", "Same", k, "", true)
		if err != nil {
			t.Fatalf("UnitWorktree %s = %v", k, err)
		}
		write(u, "shared.txt", "changed by "+k+"\n")
		if _, err := l.CommitStep(ctx, step.Commit{Worktree: u, Msg: "smith: unit " + k}); err != nil {
			t.Fatalf("CommitStep(%s) = %v", u, err)
		}
	}
	_ = l.MergeUnit(ctx, wt, "r1", "Same", "2")
	if err := l.MergeUnit(ctx, wt, "r1", "Same", "3"); err == nil {
		t.Error("MergeUnit of a second change to shared.txt (a merge driver's file) = nil, want an error")
	}
	RemoveUnits(d, "r1", lookup)
	if _, err := l.Head(ctx, wt); err != nil {
		t.Fatalf("Head = %v", err)
	}
	if files := ChangedFiles(ctx, d, "r1", lookup); len(files) == 0 {
		t.Error("ChangedFiles = none, want the run's files")
	}
	for _, stat := range []bool{false, true} {
		if out, err := Diff(ctx, d, "r1", stat, nil, lookup); err != nil || !strings.Contains(out, "a.txt") {
			t.Errorf("Diff(stat %v) = %q, %v, want a.txt", stat, out, err)
		}
	}
	// A commit on the repository's branch too, so the merge is not a
	// fast-forward.
	write(d.Workspace, "main.txt", "main\n")
	// (Smith's own git, not CommitStep: that commits in worktrees Smith
	// made alone.)
	mainRepo, err := openRepo(ctx, d.Workspace, lookup)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "--no-verify", "-m", "main work"}} {
		if r := mainRepo.git(ctx, args...); r.err != nil {
			t.Fatalf("git %v in the workspace: %v: %s", args, r.err, r.out)
		}
	}
	if _, err := Merge(ctx, d, "r1", lookup); err != nil {
		t.Fatalf("Merge = %v", err)
	}
	if err := RemoveWorktree(d, "r1", nil, true, false, lookup); err != nil {
		t.Fatalf("RemoveWorktree = %v", err)
	}
	if got := markers(t, marks); len(got) != 0 {
		t.Errorf("commands the repository names ran: %v, want none", got)
	}

	// Control: plain git runs them.
	cmd := exec.Command("git", "commit", "-q", "--allow-empty", "-m", "control")
	cmd.Dir = d.Workspace
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1"}
	_ = cmd.Run()
	if got := markers(t, marks); len(got) == 0 {
		t.Error("control: plain git commit ran no planted command; the plant is broken")
	}
}
