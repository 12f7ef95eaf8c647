package workers

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"smith/source"
	"smith/workers/step"
)

// plantNestedRepo makes dir (inside a run's worktree) a repository of its
// own, as an agent CLI writing in its worktree may: its configuration names
// a clean filter, a textconv, an fsmonitor and hooks that each leave a
// marker, and its tracked file is left stat-dirty (same size, new mtime) so
// that any git status inside it would run the clean filter.
func plantNestedRepo(t *testing.T, dir, marks string) {
	t.Helper()
	bin := t.TempDir()
	script := func(name string) string {
		p := filepath.Join(bin, name)
		body := "#!/bin/sh\n: > '" + filepath.Join(marks, name) + "'\ncat\n"
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	run("init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, ".gitattributes"), []byte("* filter=nest diff=nest\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "n.txt"), []byte("nested\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("add", "-A")
	run("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "nested")
	for _, kv := range [][2]string{
		{"filter.nest.clean", script("nested-filter-clean")},
		{"filter.nest.smudge", script("nested-filter-smudge")},
		{"filter.nest.required", "true"},
		{"diff.nest.textconv", script("nested-textconv")},
		{"core.fsmonitor", script("nested-fsmonitor")},
	} {
		run("config", kv[0], kv[1])
	}
	hooks := filepath.Join(dir, ".git", "hooks")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, h := range plantedHooks {
		if err := os.Symlink(script("nested-hook-"+h), filepath.Join(hooks, h)); err != nil {
			t.Fatal(err)
		}
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "n.txt"), later, later); err != nil {
		t.Fatal(err)
	}
}

// nestedGit runs git in the nested repository dir that plantNestedRepo
// made, as a step would, with its planted commands switched off (so that
// what the markers show is Smith's doing), and returns its stdout.
func nestedGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
		"-c", "filter.nest.clean=", "-c", "filter.nest.smudge=", "-c", "filter.nest.required=false",
		"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v in %s: %v", args, dir, err)
	}
	return strings.TrimSpace(string(out))
}

// TestCommitRecordsANestedRepositorysLaterCommit: a step leaves a
// repository of its own in a subfolder (with hooks, a filter and an
// fsmonitor planted), the first commit records it at its commit; a later
// step commits in it. That step's commit records the nested repository's
// new HEAD (a loose ref, a packed one, a detached HEAD), read from its files
// without running anything there. A HEAD that cannot be read without
// leaving the folder or following a link (an unborn branch, a .git that is
// a link, a .git file naming a folder elsewhere, a ref that is a link)
// leaves the recorded commit as it was, and the step's commit goes
// through. No planted command runs.
func TestCommitRecordsANestedRepositorysLaterCommit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		later func(t *testing.T, sub string) // after the nested repository's second commit
		moved bool                           // the run's branch must record the nested HEAD
	}{
		{"loose ref", func(*testing.T, string) {}, true},
		{"packed ref", func(t *testing.T, sub string) {
			nestedGit(t, sub, "pack-refs", "--all", "--prune")
			if _, err := os.Lstat(filepath.Join(sub, ".git", "refs", "heads", "main")); err == nil {
				t.Fatal("git pack-refs left refs/heads/main loose")
			}
		}, true},
		{"detached", func(t *testing.T, sub string) {
			nestedGit(t, sub, "checkout", "-q", "--detach")
			nestedGit(t, sub, "commit", "-q", "--allow-empty", "-m", "detached")
		}, true},
		{"unborn branch", func(t *testing.T, sub string) {
			writeFiles(t, sub, ".git/HEAD", "ref: refs/heads/none\n")
		}, false},
		{"corrupt HEAD", func(t *testing.T, sub string) {
			writeFiles(t, sub, ".git/HEAD", "ref: refs/../../../../outside\n")
		}, false},
		{".git is a link", func(t *testing.T, sub string) {
			elsewhere := filepath.Join(t.TempDir(), "elsewhere.git")
			if err := os.Rename(filepath.Join(sub, ".git"), elsewhere); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(elsewhere, filepath.Join(sub, ".git")); err != nil {
				t.Fatal(err)
			}
		}, false},
		{".git file", func(t *testing.T, sub string) {
			elsewhere := filepath.Join(t.TempDir(), "elsewhere.git")
			if err := os.Rename(filepath.Join(sub, ".git"), elsewhere); err != nil {
				t.Fatal(err)
			}
			writeFiles(t, sub, ".git", "gitdir: "+elsewhere+"\n")
		}, false},
		{"ref is a link", func(t *testing.T, sub string) {
			ref := filepath.Join(sub, ".git", "refs", "heads", "main")
			elsewhere := filepath.Join(t.TempDir(), "main")
			if err := os.Rename(ref, elsewhere); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(elsewhere, ref); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, marks := hostileRepo(t)
			ctx := context.Background()
			lookup := func(name string) (string, bool) {
				switch name {
				case "PATH":
					return os.Getenv("PATH"), true
				case "HOME":
					return t.TempDir(), true
				}
				return "", false
			}
			l := Local{Env: lookup}
			wt, err := CreateWorktree(ctx, d, "r1", lookup)
			if err != nil {
				t.Fatalf("CreateWorktree = %v", err)
			}
			g, err := openRepo(ctx, wt, lookup)
			if err != nil {
				t.Fatal(err)
			}
			recorded := func() string {
				t.Helper()
				r := g.out(ctx, "ls-tree", "HEAD", "--", "sub")
				meta, _, _ := strings.Cut(r.out, "\t")
				if f := strings.Fields(meta); len(f) == 3 && f[0] == "160000" {
					return f[2]
				}
				t.Fatalf("the run's branch holds sub as %q, want a gitlink", r.out)
				return ""
			}
			sub := filepath.Join(wt, "sub")
			plantNestedRepo(t, sub, marks)
			first := nestedGit(t, sub, "rev-parse", "HEAD")
			if h, err := l.CommitStep(ctx, step.Commit{Worktree: wt, Msg: "smith: A (run r1, attempt 1)"}); err != nil || h == "" {
				t.Fatalf("CommitStep(A) = %q, %v, want a commit", h, err)
			}
			if got := recorded(); got != first {
				t.Fatalf("step A recorded sub at %s, want %s", got, first)
			}
			// Step B commits in the nested repository, and leaves its
			// tracked file stat-dirty again.
			writeFiles(t, sub, "n2.txt", "second\n")
			nestedGit(t, sub, "add", "-A")
			nestedGit(t, sub, "commit", "-q", "-m", "second")
			later := time.Now().Add(3 * time.Hour)
			if err := os.Chtimes(filepath.Join(sub, "n.txt"), later, later); err != nil {
				t.Fatal(err)
			}
			tc.later(t, sub)
			head := first
			if tc.moved {
				head = nestedGit(t, sub, "rev-parse", "HEAD")
			} else {
				writeFiles(t, wt, "b.txt", "step B\n") // so that B has a commit at all
			}
			if head == first && tc.moved {
				t.Fatal("the nested repository did not move")
			}
			if h, err := l.CommitStep(ctx, step.Commit{Worktree: wt, Msg: "smith: B (run r1, attempt 1)"}); err != nil || h == "" {
				t.Fatalf("CommitStep(B) = %q, %v, want a commit", h, err)
			}
			if got := recorded(); got != head {
				t.Errorf("step B recorded sub at %s, want %s", got, head)
			}
			if got := markers(t, marks); len(got) != 0 {
				t.Errorf("commands the repositories name ran: %v, want none", got)
			}
		})
	}
}

// TestGitRunsNothingFromANestedRepository: a step leaves a repository of
// its own in a subfolder of its worktree (sub/.git with filters and an
// fsmonitor in its configuration). Smith's commits of that step and the
// next, the merge and the clean run nothing it names (CONTRACT 12.4).
func TestGitRunsNothingFromANestedRepository(t *testing.T) {
	d, marks := hostileRepo(t)
	ctx := context.Background()
	lookup := func(name string) (string, bool) {
		switch name {
		case "PATH":
			return os.Getenv("PATH"), true
		case "HOME":
			return t.TempDir(), true
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
	commit := func(wt, msg string) {
		t.Helper()
		if h, err := l.CommitStep(ctx, step.Commit{Worktree: wt, Msg: msg}); err != nil || h == "" {
			t.Fatalf("CommitStep(%s) = %q, %v, want a commit", msg, h, err)
		}
	}
	wt, err := CreateWorktree(ctx, d, "r1", lookup)
	if err != nil {
		t.Fatalf("CreateWorktree = %v", err)
	}
	plantNestedRepo(t, filepath.Join(wt, "sub"), marks)
	write(wt, "a.txt", "one\n")
	commit(wt, "smith: A (run r1, attempt 1)")
	g, err := openRepo(ctx, wt, lookup)
	if err != nil {
		t.Fatal(err)
	}
	if r := g.out(ctx, "ls-files", "-s", "sub"); !strings.HasPrefix(r.out, "160000 ") {
		t.Errorf("the first commit recorded sub as %q, want the nested repository's commit (a gitlink)", r.out)
	}
	later := time.Now().Add(2 * time.Hour)
	if err := os.Chtimes(filepath.Join(wt, "sub", "n.txt"), later, later); err != nil {
		t.Fatal(err)
	}
	write(wt, "a.txt", "two\n")
	commit(wt, "smith: B (run r1, attempt 1)")
	// A thread of a parallel step leaves one too; the join merges it.
	u, err := l.UnitWorktree(ctx, d, wt, "r1", "Par", "0", "", true)
	if err != nil {
		t.Fatalf("UnitWorktree = %v", err)
	}
	plantNestedRepo(t, filepath.Join(u, "usub"), marks)
	commit(u, "smith: unit")
	write(u, "u.txt", "unit\n")
	commit(u, "smith: unit again")
	if err := l.MergeUnit(ctx, wt, "r1", "Par", "0"); err != nil {
		t.Fatalf("MergeUnit = %v", err)
	}
	l.RemoveUnit(ctx, d, wt, "r1", "Par", "0")
	if _, err := Diff(ctx, d, "r1", false, nil, lookup); err != nil {
		t.Fatalf("Diff = %v", err)
	}
	if _, err := Merge(ctx, d, "r1", lookup); err != nil {
		t.Fatalf("Merge = %v", err)
	}
	if err := RemoveWorktree(d, "r1", nil, true, false, lookup); err != nil {
		t.Fatalf("RemoveWorktree = %v", err)
	}
	if got := markers(t, marks); len(got) != 0 {
		t.Errorf("commands the nested repository names ran: %v, want none", got)
	}
}

// TestCommitRefusesAReplacedGitDir: a step replaces its worktree's .git
// file (the link to the run's repository): with a repository of its own on
// a branch of the run's name (git init), a link to the repository's own
// .git, a .git file naming that folder, or one naming another run's
// worktree. Smith's commit must land nowhere: it fails, and the run's
// branch is as it was (CONTRACT 12.4: a commit never lands on any branch
// but the run's).
func TestCommitRefusesAReplacedGitDir(t *testing.T) {
	for _, replace := range []string{"git init", "symlink", "gitdir main", "gitdir other run"} {
		t.Run(replace, func(t *testing.T) {
			d, marks := hostileRepo(t)
			ctx := context.Background()
			lookup := func(name string) (string, bool) {
				if name == "PATH" {
					return os.Getenv("PATH"), true
				}
				return "", false
			}
			l := Local{Env: lookup}
			wt, err := CreateWorktree(ctx, d, "r1", lookup)
			if err != nil {
				t.Fatalf("CreateWorktree = %v", err)
			}
			other, err := CreateWorktree(ctx, d, "r2", lookup)
			if err != nil {
				t.Fatalf("CreateWorktree = %v", err)
			}
			main, err := openRepo(ctx, d.Workspace, lookup)
			if err != nil {
				t.Fatal(err)
			}
			otherRepo, err := openRepo(ctx, other, lookup)
			if err != nil {
				t.Fatal(err)
			}
			branch := step.WorktreeBranch("r1")
			before := revParse(ctx, main, "refs/heads/"+branch)
			dotGit := filepath.Join(wt, ".git")
			if err := os.Remove(dotGit); err != nil {
				t.Fatal(err)
			}
			switch replace {
			case "git init":
				cmd := exec.Command("git", "init", "-q", "-b", branch)
				cmd.Dir = wt
				cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1"}
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("git init: %v\n%s", err, out)
				}
			case "symlink":
				err = os.Symlink(filepath.Join(d.Workspace, ".git"), dotGit)
			case "gitdir main":
				err = os.WriteFile(dotGit, []byte("gitdir: "+filepath.Join(d.Workspace, ".git")+"\n"), 0o644)
			case "gitdir other run":
				err = os.WriteFile(dotGit, []byte("gitdir: "+otherRepo.gitDir+"\n"), 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(wt, "a.txt"), []byte("one\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			h, err := l.CommitStep(ctx, step.Commit{Worktree: wt, Branch: branch, Msg: "smith: A (run r1, attempt 1)"})
			if err == nil {
				t.Errorf("CommitStep in a worktree whose .git a step replaced (%s) = %q, nil; want an error", replace, h)
			}
			if after := revParse(ctx, main, "refs/heads/"+branch); after != before {
				t.Errorf("the run's branch moved from %s to %s", before, after)
			}
			if after := revParse(ctx, main, "refs/heads/"+step.WorktreeBranch("r2")); after != before {
				t.Errorf("the other run's branch moved from %s to %s", before, after)
			}
			if got := markers(t, marks); len(got) != 0 {
				t.Errorf("commands ran: %v", got)
			}
		})
	}
}

// TestCleanAReplacedGitDir: smithvm clean of a run whose worktree's .git a
// step replaced with a repository of its own (or removed) refuses without --force
// (E_UNMERGED: the worktree is not the repository's any more, its work is
// not on the run's branch) and with --force removes the folder and the
// branch, which git worktree remove alone refuses to do.
func TestCleanAReplacedGitDir(t *testing.T) {
	for _, replace := range []string{"git init", "removed"} {
		t.Run(replace, func(t *testing.T) { testCleanAReplacedGitDir(t, replace) })
	}
}

func testCleanAReplacedGitDir(t *testing.T, replace string) {
	d, marks := hostileRepo(t)
	ctx := context.Background()
	lookup := func(name string) (string, bool) {
		if name == "PATH" {
			return os.Getenv("PATH"), true
		}
		return "", false
	}
	wt, err := CreateWorktree(ctx, d, "r1", lookup)
	if err != nil {
		t.Fatalf("CreateWorktree = %v", err)
	}
	if err := os.Remove(filepath.Join(wt, ".git")); err != nil {
		t.Fatal(err)
	}
	if replace == "git init" {
		cmd := exec.Command("git", "init", "-q", "-b", "main")
		cmd.Dir = wt
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git init: %v\n%s", err, out)
		}
	}
	err = RemoveWorktree(d, "r1", nil, true, false, lookup)
	if source.CodeOf(err, "") != source.EUnmerged {
		t.Errorf("RemoveWorktree without force = %v, want E_UNMERGED", err)
	}
	if !isDir(wt) {
		t.Fatal("RemoveWorktree without force removed the worktree")
	}
	if err := RemoveWorktree(d, "r1", nil, true, true, lookup); err != nil {
		t.Fatalf("RemoveWorktree --force = %v, want nil", err)
	}
	if _, err := os.Lstat(wt); !os.IsNotExist(err) {
		t.Errorf("the worktree is still there after clean --force: %v", err)
	}
	main, err := openRepo(ctx, d.Workspace, lookup)
	if err != nil {
		t.Fatal(err)
	}
	if h := revParse(ctx, main, "refs/heads/"+step.WorktreeBranch("r1")); h != "" {
		t.Errorf("the run's branch is still there: %s", h)
	}
	if r := main.out(ctx, "worktree", "list", "--porcelain"); strings.Contains(r.out, wt) {
		t.Errorf("git still lists the worktree:\n%s", r.out)
	}
	if got := markers(t, marks); len(got) != 0 {
		t.Errorf("commands ran: %v", got)
	}
}

// TestRunIDGitCannotName: a run id smithvm takes (--run-id) that git cannot
// take in a branch name (smith/<run_id>) is E_USAGE saying why, before
// anything is made in the repository; not git's own failure halfway.
func TestRunIDGitCannotName(t *testing.T) {
	d, _ := hostileRepo(t)
	ctx := context.Background()
	lookup := func(name string) (string, bool) {
		if name == "PATH" {
			return os.Getenv("PATH"), true
		}
		return "", false
	}
	main, err := openRepo(ctx, d.Workspace, lookup)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a..b", "x.lock", ".hidden", "end.", "a.lock"} {
		_, err := CreateWorktree(ctx, d, id, lookup)
		if source.CodeOf(err, "") != source.EUsage || !strings.Contains(fmt.Sprint(err), "--run-id") {
			t.Errorf("CreateWorktree(%q) = %v, want E_USAGE naming --run-id", id, err)
		}
		if r := main.out(ctx, "for-each-ref", "--format=%(refname)"); strings.Contains(r.out, "smith") {
			t.Errorf("CreateWorktree(%q) left refs: %s", id, r.out)
		}
	}
	for _, id := range []string{"-dash", "a.b", "r_1", "x.lockx", "x.LOCK"} {
		if _, err := CreateWorktree(ctx, d, id, lookup); err != nil {
			t.Errorf("CreateWorktree(%q) = %v, want nil", id, err)
		}
	}
}
