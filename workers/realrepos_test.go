package workers

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"smith/source"
	"smith/workers/confine"
	"smith/workers/step"
)

// userGit runs git in dir as the user would (their own command line, not
// Smith's), and returns its combined output.
func userGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestMergeRefusesAnOperationInProgress: smithvm merge while the user's
// checkout is in the middle of a merge whose files are all staged (git
// status shows nothing: a `-s ours --no-commit` merge), a cherry-pick or a
// revert, is refused up front (E_USAGE, saying what to finish) and leaves
// the user's operation as it was: never `git merge --abort` on the user's
// own merge.
func TestMergeRefusesAnOperationInProgress(t *testing.T) {
	t.Parallel()
	d, wt := runWorktree(t, os.LookupEnv)
	writeFiles(t, wt, "f.txt", "run\n")
	if _, err := (Local{Env: os.LookupEnv}).CommitStep(context.Background(), step.Commit{Worktree: wt, Branch: step.WorktreeBranch("r1"), Msg: "smith: S"}); err != nil {
		t.Fatal(err)
	}
	ws := d.Workspace
	userGit(t, ws, "checkout", "-q", "-b", "x")
	writeFiles(t, ws, "x.txt", "x\n")
	userGit(t, ws, "add", "x.txt")
	userGit(t, ws, "commit", "-q", "-m", "x")
	userGit(t, ws, "checkout", "-q", "main")
	userGit(t, ws, "merge", "-q", "--no-commit", "--no-ff", "-s", "ours", "x")
	mergeHead := filepath.Join(ws, ".git", "MERGE_HEAD")
	if _, err := os.Stat(mergeHead); err != nil {
		t.Fatalf("the user's merge is not in progress: %v", err)
	}
	_, err := Merge(context.Background(), d, "r1", os.LookupEnv)
	var be *step.BranchError
	if !errors.As(err, &be) || be.Code != source.EUsage || !strings.Contains(be.Msg, "in the middle of a merge") {
		t.Fatalf("Merge during the user's merge = %v, want E_USAGE saying the repository is in the middle of a merge", err)
	}
	if _, err := os.Stat(mergeHead); err != nil {
		t.Fatalf("Merge dropped the user's merge in progress: %v", err)
	}
	if got := userGit(t, ws, "rev-list", "--count", "HEAD"); strings.TrimSpace(got) != "1" {
		t.Fatalf("HEAD moved: %s commits", got)
	}
}

// TestCommitStepOutsideTheSparseCone: in a worktree with a sparse checkout
// (cone mode, as git worktree add copies the user's), a step that writes
// outside the cone (a new folder, a file the cone left out) gets its
// change committed like any other, not a failed step with git's advice;
// the files the cone leaves out and the step did not touch stay on the
// branch.
func TestCommitStepOutsideTheSparseCone(t *testing.T) {
	t.Parallel()
	d, _ := runWorktree(t, os.LookupEnv)
	ws := d.Workspace
	writeFiles(t, ws, "in/i.txt", "i\n", "out/o.txt", "o\n", "out/keep.txt", "keep\n")
	userGit(t, ws, "add", "-A")
	userGit(t, ws, "commit", "-q", "-m", "tree")
	wt, err := CreateWorktree(context.Background(), d, "r2", os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	userGit(t, wt, "sparse-checkout", "set", "--cone", "in")
	if _, err := os.Stat(filepath.Join(wt, "out")); err == nil {
		t.Fatal("the sparse checkout left out/ in the worktree")
	}
	writeFiles(t, wt, "in/i.txt", "i2\n", "out/o.txt", "step\n", "out2/n.txt", "n\n", "top.txt", "t\n")
	h, err := Local{Env: os.LookupEnv}.CommitStep(context.Background(), step.Commit{Worktree: wt, Branch: step.WorktreeBranch("r2"), Msg: "smith: S"})
	if err != nil || h == "" {
		t.Fatalf("CommitStep outside the sparse cone = %q, %v, want a commit", h, err)
	}
	for path, want := range map[string]string{"in/i.txt": "i2\n", "out/o.txt": "step\n", "out2/n.txt": "n\n", "top.txt": "t\n", "out/keep.txt": "keep\n"} {
		if got := userGit(t, ws, "show", h+":"+path); got != want {
			t.Errorf("%s on the branch = %q, want %q", path, got, want)
		}
	}
}

// TestCommitStepInAnEmptySubmodule: a repository with a submodule (the
// user's checkout has it initialised or not) gives a run's worktree an
// empty folder for it: Smith checks out no submodule. A step that writes
// there fails the step naming the files (E_EXEC), with nothing committed
// and the files left, instead of a commit that silently leaves them out
// and a clean that deletes them without a word.
func TestCommitStepInAnEmptySubmodule(t *testing.T) {
	t.Parallel()
	d, _ := runWorktree(t, os.LookupEnv)
	ws := d.Workspace
	head := strings.TrimSpace(userGit(t, ws, "rev-parse", "HEAD"))
	writeFiles(t, ws, ".gitmodules", "[submodule \"sub\"]\n\tpath = sub\n\turl = ../sub\n")
	userGit(t, ws, "update-index", "--add", "--cacheinfo", "160000,"+head+",sub")
	userGit(t, ws, "add", ".gitmodules")
	userGit(t, ws, "commit", "-q", "-m", "submodule")
	wt, err := CreateWorktree(context.Background(), d, "r2", os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	if ents, err := os.ReadDir(filepath.Join(wt, "sub")); err != nil || len(ents) != 0 {
		t.Fatalf("the submodule's folder in the worktree = %v, %v, want an empty folder", ents, err)
	}
	base := strings.TrimSpace(userGit(t, wt, "rev-parse", "HEAD"))
	writeFiles(t, wt, "a.txt", "a\n", "sub/s.txt", "changed\n", "sub/d/new.txt", "new\n")
	h, err := Local{Env: os.LookupEnv}.CommitStep(context.Background(), step.Commit{Worktree: wt, Branch: step.WorktreeBranch("r2"), Msg: "smith: S"})
	if err == nil || !strings.Contains(err.Error(), "sub/d/new.txt, sub/s.txt") || !strings.Contains(err.Error(), "submodule") {
		t.Fatalf("CommitStep with files in an empty submodule folder = %q, %v, want an error naming them", h, err)
	}
	if got := strings.TrimSpace(userGit(t, wt, "rev-parse", "HEAD")); got != base {
		t.Errorf("the branch moved to %s: something was committed", got)
	}
	if got := userGit(t, wt, "diff", "--cached", "--name-only"); got != "" {
		t.Errorf("staged after the refusal: %q", got)
	}
	if _, err := os.Stat(filepath.Join(wt, "sub", "s.txt")); err != nil {
		t.Errorf("the step's file is gone: %v", err)
	}
}

// TestCleanLeavesNoEmptyUnitFolders: after a parallel step's joins removed
// their threads' worktrees, the folders that held them
// (BASE/.orchestrator/unit-worktrees/<run_id>/<Step>) are empty; clean
// removes them with the run's worktree, and keeps a thread worktree a
// conflicting join kept (it holds files).
func TestCleanLeavesNoEmptyUnitFolders(t *testing.T) {
	t.Parallel()
	d, _ := runWorktree(t, os.LookupEnv)
	root := filepath.Join(d.Base, ".orchestrator", "unit-worktrees")
	for _, dir := range []string{"r1/Par", "r1/Other", "r9/Par/a"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFiles(t, root, "r9/Par/a/kept.txt", "x\n")
	if err := RemoveWorktree(d, "r1", nil, true, false, os.LookupEnv); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "r1")); !os.IsNotExist(err) {
		t.Errorf("unit-worktrees/r1 left after clean: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "r9", "Par", "a", "kept.txt")); err != nil {
		t.Errorf("another run's unit folder was touched: %v", err)
	}
}

// TestWorktreeKeepsTheUsersOtherWorktrees: the user's own linked worktree
// whose folder is away (a removable drive, a folder moved before a git
// worktree repair) keeps git's record of it through a run's start, a
// thread's worktree made again and clean: Smith forgets the records of its
// own worktrees only, never prunes the repository's.
func TestWorktreeKeepsTheUsersOtherWorktrees(t *testing.T) {
	t.Parallel()
	needGit(t)
	d := gitProject(t)
	away := filepath.Join(t.TempDir(), "feature")
	userGit(t, d.Workspace, "worktree", "add", "-q", "-b", "feature", away)
	if err := os.Rename(away, away+"-moved"); err != nil {
		t.Fatal(err)
	}
	record := func() bool {
		return strings.Contains(userGit(t, d.Workspace, "worktree", "list", "--porcelain"), "branch refs/heads/feature")
	}
	if !record() {
		t.Fatal("no record of the user's worktree to begin with")
	}
	if _, err := CreateWorktree(context.Background(), d, "r1", os.LookupEnv); err != nil {
		t.Fatal(err)
	}
	if !record() {
		t.Error("a run's start pruned the record of the user's worktree")
	}
	if err := RemoveWorktree(d, "r1", nil, true, true, os.LookupEnv); err != nil {
		t.Fatal(err)
	}
	if !record() {
		t.Error("clean pruned the record of the user's worktree")
	}
	if err := os.Rename(away+"-moved", away); err != nil {
		t.Fatal(err)
	}
	if got := userGit(t, away, "rev-parse", "--abbrev-ref", "HEAD"); strings.TrimSpace(got) != "feature" {
		t.Errorf("the user's worktree is on %q, want feature", got)
	}
}

// TestWorkspaceWithASeparateGitDir: a WORKSPACE whose .git is a file naming
// a repository's own git directory (a submodule's checkout, whose git
// directory is the superproject's .git/modules/<name>, or git init
// --separate-git-dir) is the user's layout: a run gets its worktree, its
// commit, merge and clean there. A .git file in a worktree Smith made must
// still name its worktree's record back.
func TestWorkspaceWithASeparateGitDir(t *testing.T) {
	t.Parallel()
	needGit(t)
	d, err := confine.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sep := filepath.Join(t.TempDir(), "git")
	userGit(t, t.TempDir(), "init", "-q", "-b", "main", "--separate-git-dir", sep, d.Workspace)
	userGit(t, d.Workspace, "commit", "-q", "--allow-empty", "-m", "base")
	ctx := context.Background()
	wt, err := CreateWorktree(ctx, d, "r1", os.LookupEnv)
	if err != nil {
		t.Fatalf("CreateWorktree in a workspace with a separate git dir = %v", err)
	}
	writeFiles(t, wt, "f.txt", "run\n")
	if _, err := (Local{Env: os.LookupEnv}).CommitStep(ctx, step.Commit{Worktree: wt, Branch: step.WorktreeBranch("r1"), Msg: "smith: S"}); err != nil {
		t.Fatal(err)
	}
	if _, err := Merge(ctx, d, "r1", os.LookupEnv); err != nil {
		t.Fatalf("Merge = %v", err)
	}
	if got, err := os.ReadFile(filepath.Join(d.Workspace, "f.txt")); err != nil || string(got) != "run\n" {
		t.Fatalf("f.txt after the merge = %q, %v", got, err)
	}
	if err := RemoveWorktree(d, "r1", nil, true, false, os.LookupEnv); err != nil {
		t.Fatalf("RemoveWorktree = %v", err)
	}
	// A step's .git file naming a repository's own git directory, in a
	// worktree Smith made, is still not followed.
	wt2, err := CreateWorktree(ctx, d, "r2", os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wt2, ".git"), []byte("gitdir: "+sep+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := (Local{Env: os.LookupEnv}).CommitStep(ctx, step.Commit{Worktree: wt2, Branch: step.WorktreeBranch("r2"), Msg: "smith: S"}); err == nil {
		t.Fatal("CommitStep followed a .git file a step wrote to the repository's git directory")
	}
}

// TestRunWorktreeRefusesARepositoryGitCannotOpen: a WORKSPACE that is a git
// repository git refuses to open (a configuration it cannot read; a
// repository owned by another user that the user's safe.directory does not
// cover) is not "no repository": isolation fails up front with git's
// reason, instead of a run in the user's checkout itself.
func TestRunWorktreeRefusesARepositoryGitCannotOpen(t *testing.T) {
	t.Parallel()
	needGit(t)
	d := gitProject(t)
	f, err := os.OpenFile(filepath.Join(d.Workspace, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("[core\n\tbroken\n")
	f.Close()
	tree, err := Local{Env: os.LookupEnv}.RunWorktree(context.Background(), d, "r1", "")
	if err == nil || !strings.Contains(err.Error(), "config") {
		t.Fatalf("RunWorktree in a repository git cannot open = %+v, %v; want git's reason", tree, err)
	}
}

// TestWorktreeHonoursTheUsersSafeDirectory: a repository owned by another
// user (a container's mounted volume) that the user trusts with
// safe.directory in their own ~/.gitconfig (which Smith's git otherwise
// does not read) gets its run worktree as plain git would open it.
func TestWorktreeHonoursTheUsersSafeDirectory(t *testing.T) {
	t.Parallel()
	needGit(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the repository another owner")
	}
	d := gitProject(t)
	if err := filepath.WalkDir(d.Workspace, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 65534, 65534)
	}); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	writeFiles(t, home, ".gitconfig", "[safe]\n\tdirectory = "+d.Workspace+"\n")
	lookup := func(name string) (string, bool) {
		if name == "HOME" {
			return home, true
		}
		return os.LookupEnv(name)
	}
	if _, err := CreateWorktree(context.Background(), d, "r1", lookup); err != nil {
		t.Fatalf("CreateWorktree in a repository the user's safe.directory trusts = %v", err)
	}
	// Without the user's word, it is refused with git's reason.
	noHome := func(name string) (string, bool) {
		if name == "HOME" {
			return t.TempDir(), true
		}
		return os.LookupEnv(name)
	}
	if _, err := CreateWorktree(context.Background(), d, "r2", noHome); err == nil || !strings.Contains(err.Error(), "dubious ownership") {
		t.Fatalf("CreateWorktree in a repository of another owner, not trusted = %v, want git's reason", err)
	}
}

// TestDiffInAPartialClone: a partial clone (--filter=blob:none) with a
// sparse checkout lacks the blobs outside its cone, and Smith's git fetches
// nothing (protocol.allow=never): smithvm diff of a run that changed such a
// file fails saying so and what to do, not with git's transport error
// alone.
func TestDiffInAPartialClone(t *testing.T) {
	t.Parallel()
	needGit(t)
	origin := t.TempDir()
	userGit(t, origin, "init", "-q", "-b", "main")
	writeFiles(t, origin, "in/i.txt", "i\n", "out/o.txt", "o\n")
	userGit(t, origin, "add", "-A")
	userGit(t, origin, "commit", "-q", "-m", "base")
	userGit(t, origin, "config", "uploadpack.allowFilter", "true")
	d, err := confine.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	userGit(t, d.Base, "-c", "protocol.file.allow=always", "clone", "-q", "--filter=blob:none", "--sparse", "file://"+origin, d.Workspace)
	userGit(t, d.Workspace, "sparse-checkout", "set", "--cone", "in")
	ctx := context.Background()
	wt, err := CreateWorktree(ctx, d, "r1", os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, wt, "out/o.txt", "step\n")
	if _, err := (Local{Env: os.LookupEnv}).CommitStep(ctx, step.Commit{Worktree: wt, Branch: step.WorktreeBranch("r1"), Msg: "smith: S"}); err != nil {
		t.Fatal(err)
	}
	_, err = Diff(ctx, d, "r1", false, nil, os.LookupEnv)
	if err == nil || !strings.Contains(err.Error(), "partial clone") || !strings.Contains(err.Error(), "git diff refs/smith-base/r1 smith/r1") {
		t.Fatalf("Diff in a partial clone missing a blob = %v, want an error saying so and what to run", err)
	}
}
