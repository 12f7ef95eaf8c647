package workers

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"smith/workers/confine"
	"smith/workers/step"
)

// What a crash at any instant of Smith's git leaves, and what the next
// call must make of it (CONTRACT 12.4): each test plants the state a
// SIGKILL in the middle of a git command leaves on disk.

// gitOut runs git through Smith's helper and returns its trimmed stdout
// ("" on an error).
func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	r := testGit(t, dir, os.LookupEnv, args...)
	if r.err != nil {
		return ""
	}
	return strings.TrimSpace(r.out)
}

// lockedRecord makes git's record of the worktree at path look like an
// add cut off: locked "initializing", as git worktree add leaves it until
// it ends.
func lockedRecord(t *testing.T, ws, path string) {
	t.Helper()
	recs, _ := filepath.Glob(filepath.Join(ws, ".git", "worktrees", "*", "gitdir"))
	for _, r := range recs {
		b, _ := os.ReadFile(r)
		if strings.TrimSpace(string(b)) == filepath.Join(path, ".git") {
			if err := os.WriteFile(filepath.Join(filepath.Dir(r), "locked"), []byte("initializing"), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no record of the worktree %s", path)
}

// TestRunWorktreeAfterCutOffAdd: a run's worktree folder that a crash
// during `git worktree add` left (empty; half made and locked; on another
// branch) is removed and made again on the run's branch, so no step's
// commit can land on the user's branch; a lost base ref is recreated from
// the state's base.
func TestRunWorktreeAfterCutOffAdd(t *testing.T) {
	t.Parallel()
	lookup := os.LookupEnv
	ctx := context.Background()
	for _, tt := range []struct {
		name  string
		plant func(t *testing.T, d confine.Dir, path string)
	}{
		{"empty folder", func(t *testing.T, d confine.Dir, path string) {
			if err := os.RemoveAll(path); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{"locked half-made worktree", func(t *testing.T, d confine.Dir, path string) {
			lockedRecord(t, d.Workspace, path)
			if err := os.Remove(filepath.Join(path, "README.md")); err != nil {
				t.Fatal(err)
			}
		}},
		{"folder gone, record locked", func(t *testing.T, d confine.Dir, path string) {
			lockedRecord(t, d.Workspace, path)
			if err := os.RemoveAll(path); err != nil {
				t.Fatal(err)
			}
		}},
		{"HEAD on the user's branch", func(t *testing.T, d confine.Dir, path string) {
			if r := testGit(t, path, lookup, "symbolic-ref", "HEAD", "refs/heads/main"); r.err != nil {
				t.Fatal(r.out)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, wt := runWorktree(t, lookup)
			writeFiles(t, d.Workspace, "README.md", "hello\n")
			testGit(t, d.Workspace, lookup, "add", "-A")
			testGit(t, d.Workspace, lookup, "commit", "-q", "-m", "readme")
			if err := os.RemoveAll(wt); err != nil {
				t.Fatal(err)
			}
			testGit(t, d.Workspace, lookup, "worktree", "prune")
			testGit(t, d.Workspace, lookup, "branch", "-D", "smith/r1")
			testGit(t, d.Workspace, lookup, "update-ref", "-d", BaseRef("r1"))
			start := gitOut(t, d.Workspace, "rev-parse", "HEAD")
			if _, err := CreateWorktree(ctx, d, "r1", lookup); err != nil {
				t.Fatal(err)
			}
			tt.plant(t, d, wt)
			main := gitOut(t, d.Workspace, "rev-parse", "refs/heads/main")
			testGit(t, d.Workspace, lookup, "update-ref", "-d", BaseRef("r1"))

			tree, err := OpenRunTree(ctx, d, "r1", start, lookup)
			if err != nil {
				t.Fatalf("OpenRunTree after a cut-off add = %v", err)
			}
			if got := gitOut(t, tree.Path, "symbolic-ref", "HEAD"); got != "refs/heads/smith/r1" {
				t.Errorf("the worktree's HEAD = %q, want refs/heads/smith/r1", got)
			}
			if got := gitOut(t, d.Workspace, "rev-parse", BaseRef("r1")); got != start || tree.Base != start {
				t.Errorf("base ref = %q (step.RunTree.Base %q), want %q recreated from the state", got, tree.Base, start)
			}
			if _, err := os.Stat(filepath.Join(tree.Path, "README.md")); err != nil {
				t.Errorf("the worktree is not whole: %v", err)
			}
			writeFiles(t, tree.Path, "work.txt", "done\n")
			l := Local{Env: lookup}
			if _, err := l.CommitStep(ctx, step.Commit{Worktree: tree.Path, Branch: step.WorktreeBranch("r1"), Msg: "smith: S (run r1, attempt 1)"}); err != nil {
				t.Fatalf("CommitStep = %v", err)
			}
			if got := gitOut(t, d.Workspace, "rev-parse", "refs/heads/main"); got != main {
				t.Errorf("the user's branch moved: %s, want %s", got, main)
			}
			if got := gitOut(t, d.Workspace, "log", "--format=%s", "-1", "smith/r1"); got != "smith: S (run r1, attempt 1)" {
				t.Errorf("last commit of smith/r1 = %q", got)
			}
		})
	}
}

// TestCommitStepOnlyOnItsBranch: a worktree whose HEAD is not the branch
// the commit is for commits nothing.
func TestCommitStepOnlyOnItsBranch(t *testing.T) {
	t.Parallel()
	lookup := os.LookupEnv
	d, wt := runWorktree(t, lookup)
	if r := testGit(t, wt, lookup, "symbolic-ref", "HEAD", "refs/heads/main"); r.err != nil {
		t.Fatal(r.out)
	}
	main := gitOut(t, d.Workspace, "rev-parse", "refs/heads/main")
	writeFiles(t, wt, "x.txt", "x\n")
	l := Local{Env: lookup}
	_, err := l.CommitStep(context.Background(), step.Commit{Worktree: wt, Branch: step.WorktreeBranch("r1"), Msg: "m"})
	if err == nil || !strings.Contains(err.Error(), "not on the branch smith/r1") {
		t.Errorf("CommitStep on a worktree checked out on main = %v, want a refusal", err)
	}
	if got := gitOut(t, d.Workspace, "rev-parse", "refs/heads/main"); got != main {
		t.Errorf("main moved to %s", got)
	}
}

// TestRestoreWorktree: a worktree cut off mid-step (tracked files changed,
// new files, a commit of the step not saved, a merge in progress) goes
// back to the saved commit; Smith's own folders (an inbox, artifacts/)
// and ignored files are left alone.
func TestRestoreWorktree(t *testing.T) {
	t.Parallel()
	lookup := os.LookupEnv
	ctx := context.Background()
	d, wt := runWorktree(t, lookup)
	l := Local{Env: lookup}
	excl := step.CommitExcludes([]string{"agents/a/inbox", "agents/a/processed"}, false)
	writeFiles(t, wt, "keep.txt", "saved\n", ".gitignore", "build/\n")
	saved, err := l.CommitStep(ctx, step.Commit{Worktree: wt, Branch: step.WorktreeBranch("r1"), Msg: "saved", Exclude: excl})
	if err != nil || saved == "" {
		t.Fatalf("CommitStep = %q, %v", saved, err)
	}
	// The unit branch to merge, then the step cut off.
	testGit(t, d.Workspace, lookup, "branch", "side", saved)
	writeFiles(t, wt, "keep.txt", "half\n", "junk/new.txt", "x\n")
	if _, err := l.CommitStep(ctx, step.Commit{Worktree: wt, Branch: step.WorktreeBranch("r1"), Msg: "unsaved", Exclude: excl}); err != nil {
		t.Fatal(err)
	}
	side := filepath.Join(d.Base, "side")
	testGit(t, d.Workspace, lookup, "worktree", "add", "-q", side, "side")
	writeFiles(t, side, "side.txt", "s\n")
	testGit(t, side, lookup, "add", "-A")
	testGit(t, side, lookup, "commit", "-q", "-m", "side")
	testGit(t, wt, lookup, "merge", "--no-commit", "--no-ff", "side")
	if gitOut(t, wt, "rev-parse", "--verify", "--quiet", "MERGE_HEAD") == "" {
		t.Fatal("the planted merge left no MERGE_HEAD")
	}
	writeFiles(t, wt, "more.txt", "x\n", "agents/a/inbox/0001-m.md", "msg\n", "artifacts/S/out.txt", "out\n", "build/obj", "o\n")
	// A step's commit cut off after its git add -A: Smith's own files are
	// staged too.
	testGit(t, wt, lookup, "add", "-A", "--", "agents", "artifacts")

	if err := l.RestoreWorktree(ctx, wt, step.WorktreeBranch("r1"), saved, excl); err != nil {
		t.Fatalf("RestoreWorktree = %v", err)
	}
	if got := gitOut(t, wt, "rev-parse", "refs/heads/smith/r1"); got != saved {
		t.Errorf("smith/r1 = %s, want the saved commit %s", got, saved)
	}
	if gitOut(t, wt, "rev-parse", "--verify", "--quiet", "MERGE_HEAD") != "" {
		t.Error("MERGE_HEAD is left")
	}
	if got := gitOut(t, wt, "status", "--porcelain", "--untracked-files=all"); got != "?? agents/a/inbox/0001-m.md\n?? artifacts/S/out.txt" {
		t.Errorf("status after the restore =\n%s\nwant only Smith's folders", got)
	}
	for f, want := range map[string]string{"keep.txt": "saved\n", "build/obj": "o\n", "agents/a/inbox/0001-m.md": "msg\n", "artifacts/S/out.txt": "out\n"} {
		if b, _ := os.ReadFile(filepath.Join(wt, f)); string(b) != want {
			t.Errorf("%s = %q, want %q", f, b, want)
		}
	}
	for _, f := range []string{"junk/new.txt", "more.txt", "side.txt"} {
		if _, err := os.Stat(filepath.Join(wt, f)); err == nil {
			t.Errorf("%s of the cut-off step is left", f)
		}
	}
}

// TestUnitWorktreeAfterCutOff: a thread's worktree that a crash left half
// made (an empty folder, a locked record) is made again, for a thread that
// starts and for one that continues; SweepUnits removes every unit but
// those kept, whatever state a crash left them in.
func TestUnitWorktreeAfterCutOff(t *testing.T) {
	t.Parallel()
	lookup := os.LookupEnv
	ctx := context.Background()
	d, wt := runWorktree(t, lookup)
	l := Local{Env: lookup}
	for _, fresh := range []bool{true, false} {
		u, err := l.UnitWorktree(ctx, d, wt, "r1", "Par", "0", "", true)
		if err != nil {
			t.Fatal(err)
		}
		lockedRecord(t, d.Workspace, u)
		if err := os.RemoveAll(u); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(u, 0o755); err != nil {
			t.Fatal(err)
		}
		u, err = l.UnitWorktree(ctx, d, wt, "r1", "Par", "0", "", fresh)
		if err != nil {
			t.Fatalf("UnitWorktree(fresh %v) after a cut-off add = %v", fresh, err)
		}
		if got := gitOut(t, u, "symbolic-ref", "HEAD"); got != "refs/heads/"+step.UnitBranch("r1", "Par", "0") {
			t.Errorf("fresh %v: the unit's HEAD = %q", fresh, got)
		}
	}
	for _, k := range []string{"1", "2"} {
		if _, err := l.UnitWorktree(ctx, d, wt, "r1", "Par", k, "", true); err != nil {
			t.Fatal(err)
		}
	}
	lockedRecord(t, d.Workspace, UnitWorktreePath(d, "r1", "Par", "2"))
	if err := os.RemoveAll(UnitWorktreePath(d, "r1", "Par", "2")); err != nil {
		t.Fatal(err)
	}
	l.SweepUnits(ctx, d, wt, "r1", []string{"Par/1"})
	if got := gitOut(t, d.Workspace, "for-each-ref", "--format=%(refname:short)", "refs/heads/smith-unit/"); got != "smith-unit/r1/Par/1" {
		t.Errorf("unit branches after the sweep = %q, want only smith-unit/r1/Par/1", got)
	}
	list := gitOut(t, d.Workspace, "worktree", "list", "--porcelain")
	if strings.Contains(list, "/Par/0") || strings.Contains(list, "/Par/2") || !strings.Contains(list, "/Par/1") {
		t.Errorf("worktrees after the sweep:\n%s", list)
	}
}

// TestStaleLocksCleared: a git command killed with smithvm leaves its
// locks (the worktree's index.lock, the branch's ref lock); opening the run
// again removes those of the run, so the restore and the next commit work.
func TestStaleLocksCleared(t *testing.T) {
	t.Parallel()
	lookup := os.LookupEnv
	ctx := context.Background()
	d, wt := runWorktree(t, lookup)
	admin := strings.TrimPrefix(strings.TrimSpace(readFile(t, filepath.Join(wt, ".git"))), "gitdir: ")
	writeFiles(t, admin, "index.lock", "")
	writeFiles(t, filepath.Join(d.Workspace, ".git"), "refs/heads/smith/r1.lock", "", "packed-refs.lock", "")
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(filepath.Join(d.Workspace, ".git", "packed-refs.lock"), old, old); err != nil {
		t.Fatal(err)
	}
	head := gitOut(t, wt, "rev-parse", "HEAD")
	if _, err := OpenRunTree(ctx, d, "r1", "", lookup); err != nil {
		t.Fatal(err)
	}
	l := Local{Env: lookup}
	if err := l.RestoreWorktree(ctx, wt, step.WorktreeBranch("r1"), head, nil); err != nil {
		t.Fatalf("RestoreWorktree after a kill left locks = %v", err)
	}
	writeFiles(t, wt, "x.txt", "x\n")
	if c, err := l.CommitStep(ctx, step.Commit{Worktree: wt, Branch: step.WorktreeBranch("r1"), Msg: "m"}); err != nil || c == "" {
		t.Errorf("CommitStep after a kill left locks = %q, %v", c, err)
	}
	if _, err := l.UnitWorktree(ctx, d, wt, "r1", "P", "0", "", true); err != nil {
		t.Fatal(err)
	}
	l.RemoveUnit(ctx, d, wt, "r1", "P", "0")
	if got := gitOut(t, d.Workspace, "for-each-ref", "refs/heads/smith-unit/"); got != "" {
		t.Errorf("unit branch left after a kill left packed-refs.lock: %s", got)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestHalfWrittenRecordCleared: a worktree add killed right after it made
// its record's folder (no commondir yet) fails every later add in the
// repository; making a unit worktree clears it once it is old.
func TestHalfWrittenRecordCleared(t *testing.T) {
	t.Parallel()
	lookup := os.LookupEnv
	ctx := context.Background()
	d, wt := runWorktree(t, lookup)
	l := Local{Env: lookup}
	for _, tt := range []struct {
		name  string
		files []string
	}{
		{"no commondir", []string{"locked", "initializing"}},
		{"empty commondir", []string{"locked", "initializing", "gitdir", "/nowhere/.git\n", "HEAD", "0000000000000000000000000000000000000000\n", "commondir", ""}},
	} {
		half := filepath.Join(d.Workspace, ".git", "worktrees", "2")
		writeFiles(t, half, tt.files...)
		old := time.Now().Add(-time.Minute)
		if err := os.Chtimes(half, old, old); err != nil {
			t.Fatal(err)
		}
		if _, err := l.UnitWorktree(ctx, d, wt, "r1", "Each", "2", "", true); err != nil {
			t.Fatalf("%s: UnitWorktree after a half-written record = %v", tt.name, err)
		}
		if !wholeRecord(half) {
			t.Errorf("%s: the record of the new worktree is not whole", tt.name)
		}
		l.RemoveUnit(ctx, d, wt, "r1", "Each", "2")
	}
}
