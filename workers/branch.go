package workers

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"smith/source"
	"smith/workers/confine"
	"smith/workers/step"
	"smith/workers/text"
)

// A run's branch (CONTRACT 12.4): every step that changed files in the
// run's worktree is committed on smith/<run_id>; the run's starting commit
// is kept in the ref refs/smith-base/<run_id> so that diff can compare
// against it however the repository moves on; merge brings the branch into
// the repository's checked-out branch, and clean refuses to delete a branch
// with commits that are not merged.

// BaseRef is the ref that holds a run's starting commit.
func BaseRef(runID string) string { return "refs/smith-base/" + runID }

// CommitStep commits every change in the worktree c.Worktree (added,
// changed and removed files) but those under c.Exclude on its branch with
// c.Msg, and returns the new commit's hash; "" when nothing changed. A
// change that holds the value of one of c.Secrets (or of a preset's key
// variable) is E_SECRET_IN_CHANGE: the index is reset, so nothing is
// committed and the branch is as it was.
func (l Local) CommitStep(ctx context.Context, c step.Commit) (string, error) {
	g, err := openWorktree(ctx, c.Worktree, l.Env)
	if err != nil {
		return "", err
	}
	// A commit lands on the run's (or the thread's) branch or nowhere:
	// never on a branch a half-made worktree or a stray checkout left.
	if want := "refs/heads/" + c.Branch; c.Branch != "" && headBranch(ctx, g) != want {
		return "", fmt.Errorf("the worktree %s is not on the branch %s (HEAD is %q): nothing committed", c.Worktree, c.Branch, headBranch(ctx, g))
	}
	// A step that committed by itself (an agent allowed to run git):
	// its commits are taken back into the index, so that the secret scan
	// sees all the step changed and the branch gets the step's one commit.
	if c.Head != "" && revParse(ctx, g, "HEAD") != c.Head {
		if r := g.git(ctx, "reset", "-q", "--soft", c.Head); r.err != nil {
			return "", fmt.Errorf("git reset --soft %s: %v: %s", c.Head, r.err, strings.TrimSpace(r.out))
		}
	}
	nested, err := nestedRepos(ctx, g)
	if err != nil {
		return "", err
	}
	if err := writtenInEmptySubmodule(g.workTree, nested); err != nil {
		return "", err
	}
	excludes := make([]string, len(nested))
	for i, n := range nested {
		excludes[i] = ":(exclude,literal)" + n.path
	}
	add := []string{"add", "-A"}
	if sparse(ctx, g) {
		// A step's change outside the sparse cone (the worktree keeps the
		// user's) is committed like any other: without --sparse git add
		// fails on it. The files the cone leaves out are not deletions.
		add = append(add, "--sparse")
	}
	if r := g.git(ctx, append(append(add, "--", "."), excludes...)...); r.err != nil {
		return "", fmt.Errorf("git add: %v: %s", r.err, strings.TrimSpace(r.out))
	}
	if err := recordNestedHeads(ctx, g, nested); err != nil {
		return "", err
	}
	// The excluded paths go back to what the branch has (new files out of
	// the index, tracked ones as they were). Not exclude pathspecs of the
	// add: git refuses those that a .gitignore also ignores. A folder
	// named .orchestrator, at any depth (as the .gitignore line Smith
	// suggests matches), is never committed either: merged into the
	// repository it would be Smith's own run folder there, with run
	// states and logs a step made up.
	args := []string{"reset", "-q", "--", ownFolders}
	for _, p := range c.Exclude {
		args = append(args, ":(literal)"+p)
	}
	if r := g.git(ctx, args...); r.err != nil {
		return "", fmt.Errorf("git reset of the excluded paths: %v: %s", r.err, strings.TrimSpace(r.out))
	}
	if g.ok(ctx, "diff", "--cached", "--quiet", "--no-ext-diff", "--no-textconv") {
		return "", nil // nothing staged
	}
	hit, err := scanStaged(ctx, g, secretValues(c.Secrets, l.Env))
	if err == nil && hit != nil {
		err = secretError(hit)
	}
	if err != nil {
		if r := g.git(ctx, "reset", "-q"); r.err != nil {
			return "", fmt.Errorf("%w (and git reset failed: %v: %s)", err, r.err, strings.TrimSpace(r.out))
		}
		return "", err
	}
	if r := g.git(ctx, "commit", "-q", "--no-verify", "--no-edit", "-m", c.Msg); r.err != nil {
		return "", fmt.Errorf("git commit: %v: %s", r.err, strings.TrimSpace(r.out))
	}
	r := g.git(ctx, "rev-parse", "HEAD")
	if r.err != nil {
		return "", fmt.Errorf("git rev-parse: %v", r.err)
	}
	return strings.TrimSpace(r.out), nil
}

// sparse reports whether g's work tree has a sparse checkout (reading a
// setting runs nothing).
func sparse(ctx context.Context, g *gitRepo) bool {
	r := g.out(ctx, "config", "--bool", "--get", "core.sparseCheckout")
	return r.err == nil && strings.TrimSpace(r.out) == "true"
}

// ownFolders is the pathspec of every folder named .orchestrator (in any
// case, for a file system that folds it), Smith's
// run folder, in a worktree.
const ownFolders = ":(glob,icase)**/.orchestrator/**"

// hasBranch checks that run runID has its branch in the repository of d.
func hasBranch(ctx context.Context, d confine.Dir, runID string, lookup func(string) (string, bool)) error {
	if !IsGitRepo(ctx, d.Workspace, lookup) {
		return &step.BranchError{Code: source.EUsage, Msg: fmt.Sprintf("workspace %s is not a git repository, so run '%s' has no branch", d.Workspace, runID)}
	}
	if g, err := openWorkspace(ctx, d.Workspace, lookup); err != nil || !g.ok(ctx, "rev-parse", "--verify", "--quiet", "refs/heads/"+step.WorktreeBranch(runID)) {
		return &step.BranchError{Code: source.EUsage, Msg: fmt.Sprintf("run '%s' has no branch %s: it did not run with isolation: git-worktree (or its branch was deleted)", runID, step.WorktreeBranch(runID))}
	}
	return nil
}

// Diff returns the changes of run runID's branch against its starting
// commit: a unified diff, or with stat the summary, masked whole with mask
// (the run's secrets and the presets' variables: a removed line of the
// starting commit may hold a value no step's commit could add).
func Diff(ctx context.Context, d confine.Dir, runID string, stat bool, mask *text.Masker, lookup func(string) (string, bool)) (string, error) {
	if err := hasBranch(ctx, d, runID, lookup); err != nil {
		return "", err
	}
	g, err := openWorkspace(ctx, d.Workspace, lookup)
	if err != nil {
		return "", err
	}
	base := BaseRef(runID)
	if !g.ok(ctx, "rev-parse", "--verify", "--quiet", base) {
		// No record of the start (a branch made before Smith kept one):
		// compare with the merge base.
		r := g.git(ctx, "merge-base", "HEAD", step.WorktreeBranch(runID))
		if r.err != nil {
			return "", fmt.Errorf("git merge-base: %v: %s", r.err, strings.TrimSpace(r.out))
		}
		base = strings.TrimSpace(r.out)
	}
	args := []string{"diff", "--no-color", "--no-ext-diff", "--no-textconv"}
	if stat {
		args = append(args, "--stat")
	}
	r := g.out(ctx, append(args, base, step.WorktreeBranch(runID))...)
	if r.err != nil && strings.Contains(r.out, "promisor remote") {
		return "", fmt.Errorf("git diff: the repository is a partial clone without the objects this diff needs, and Smith's git fetches nothing: run git diff %s %s in it yourself (your git fetches them), or fetch them first: %s",
			base, step.WorktreeBranch(runID), strings.TrimSpace(r.out))
	}
	if r.err != nil {
		return "", fmt.Errorf("git diff: %v: %s", r.err, strings.TrimSpace(r.out))
	}
	return mask.String(r.out), nil
}

// Merge merges run runID's branch into the branch checked out in the
// repository: a fast-forward where possible, else a merge commit. On a
// conflict it leaves the repository as it was and returns E_MERGE_CONFLICT
// naming the files.
func Merge(ctx context.Context, d confine.Dir, runID string, lookup func(string) (string, bool)) (string, error) {
	if err := hasBranch(ctx, d, runID, lookup); err != nil {
		return "", err
	}
	g, err := openWorkspace(ctx, d.Workspace, lookup)
	if err != nil {
		return "", err
	}
	if op, finish := inProgress(g); op != "" {
		return "", &step.BranchError{Code: source.EUsage, Msg: fmt.Sprintf("the repository is in the middle of %s: %s, then merge again", op, finish)}
	}
	if r := g.git(ctx, "status", "--porcelain", "--untracked-files=no"); r.err == nil && strings.TrimSpace(r.out) != "" {
		return "", &step.BranchError{Code: source.EUsage, Msg: "the repository has uncommitted changes to tracked files: commit or stash them, then merge again"}
	}
	if headBranch(ctx, g) == "" {
		return "", &step.BranchError{Code: source.EUsage, Msg: "the repository has no branch checked out (HEAD is detached): check out the branch to merge into, then merge again"}
	}
	branch := step.WorktreeBranch(runID)
	if files := untrackedInTheWay(ctx, g, d.Workspace, branch); len(files) > 0 {
		return "", &step.BranchError{Code: source.EUsage, Msg: fmt.Sprintf("untracked files in the repository would be overwritten by the merge (%s): move them away, then merge again", listSome(files, 5))}
	}
	out, files, err := merge(ctx, g, branch, "smith: merge run "+runID)
	if err != nil || files == nil {
		return out, err
	}
	return "", &step.BranchError{Code: source.EMergeConflict, Files: files,
		Msg: fmt.Sprintf("merging %s conflicts in %s; the repository is as it was (resolve by hand: git merge %s)", branch, strings.Join(files, ", "), branch)}
}

// inProgress names the operation the user's checkout g is in the middle
// of (a merge, a cherry-pick, a revert, a rebase or git am: git's own
// record of it is in the checkout's git directory) and what finishes it;
// "" when none. Merging then would either fail (and Smith's clean-up of
// its own failed merge must not abort the user's) or mix the run's commits
// into the user's half-done work.
func inProgress(g *gitRepo) (op, finish string) {
	has := func(name string) bool {
		_, err := os.Lstat(filepath.Join(g.gitDir, name))
		return err == nil
	}
	switch {
	case has("MERGE_HEAD"):
		return "a merge", "finish it (git commit) or abort it (git merge --abort)"
	case has("CHERRY_PICK_HEAD"):
		return "a cherry-pick", "finish it (git cherry-pick --continue) or abort it (git cherry-pick --abort)"
	case has("REVERT_HEAD"):
		return "a revert", "finish it (git revert --continue) or abort it (git revert --abort)"
	case has("rebase-apply/applying"):
		return "git am", "finish it (git am --continue) or abort it (git am --abort)"
	case has("rebase-merge"), has("rebase-apply"):
		return "a rebase", "finish it (git rebase --continue) or abort it (git rebase --abort)"
	}
	return "", ""
}

// untrackedInTheWay returns the files that branch has and HEAD has not,
// or has otherwise, which exist untracked (and not ignored) in the work
// tree top: git would refuse to merge over them.
func untrackedInTheWay(ctx context.Context, g *gitRepo, top, branch string) []string {
	r := g.out(ctx, "diff", "--no-ext-diff", "--no-textconv", "--name-only", "-z", "--no-renames", "--diff-filter=d", "HEAD", branch)
	if r.err != nil {
		return nil // the merge says what is wrong
	}
	var present []string
	for p := range strings.SplitSeq(r.out, "\x00") {
		if _, err := os.Lstat(filepath.Join(top, filepath.FromSlash(p))); p != "" && err == nil {
			present = append(present, p)
		}
	}
	if len(present) == 0 {
		return nil
	}
	// Of those, the untracked ones that are not ignored (git merges over
	// an ignored file).
	args := []string{"ls-files", "-z", "--others", "--exclude-standard", "--"}
	for _, p := range present {
		args = append(args, ":(literal)"+p)
	}
	r = g.out(ctx, args...)
	if r.err != nil {
		return nil
	}
	return splitNonEmpty(strings.ReplaceAll(r.out, "\x00", "\n"))
}

// Unmerged reports whether run runID's branch has commits that the
// repository's checked-out branch does not contain. A missing branch has
// none.
func Unmerged(ctx context.Context, d confine.Dir, runID string, lookup func(string) (string, bool)) (bool, error) {
	branch := step.WorktreeBranch(runID)
	g, err := openWorkspace(ctx, d.Workspace, lookup)
	if err != nil {
		return false, err
	}
	if !g.ok(ctx, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch) {
		return false, nil
	}
	r := g.git(ctx, "rev-list", "--count", "HEAD.."+branch)
	if r.err != nil {
		return false, fmt.Errorf("git rev-list: %v: %s", r.err, strings.TrimSpace(r.out))
	}
	return strings.TrimSpace(r.out) != "0", nil
}

// merge merges branch into the branch checked out in g, as Smith, with
// message msg, and returns git's output. On a conflict it aborts the merge,
// leaving g as it was, and returns the conflicted files, sorted.
func merge(ctx context.Context, g *gitRepo, branch, msg string) (out string, conflicts []string, err error) {
	// The options git would take from the repository's configuration
	// (merge.ff, merge.autoStash, merge.log, branch.<name>.mergeOptions
	// such as --ff-only, --no-ff, --squash or --no-commit) are all given
	// here: a fast-forward where possible, else a merge commit.
	r := g.git(ctx, "merge", "--ff", "--commit", "--no-squash", "--no-autostash", "--no-log", "--no-signoff",
		"--no-rerere-autoupdate", "--no-edit", "--no-stat", "--no-verify", "-m", msg, branch)
	if r.err == nil {
		return strings.TrimSpace(r.out), nil, nil
	}
	files := splitNonEmpty(g.out(ctx, "diff", "--no-ext-diff", "--no-textconv", "--name-only", "--diff-filter=U").out)
	if len(files) == 0 {
		if g.ok(ctx, "rev-parse", "--verify", "--quiet", "MERGE_HEAD") {
			_ = g.git(ctx, "merge", "--abort")
		}
		return "", nil, fmt.Errorf("git merge %s: %v: %s", branch, r.err, strings.TrimSpace(r.out))
	}
	if a := g.git(ctx, "merge", "--abort"); a.err != nil {
		return "", nil, fmt.Errorf("git merge --abort after a conflict in %s: %v: %s", strings.Join(files, ", "), a.err, strings.TrimSpace(a.out))
	}
	sort.Strings(files)
	return "", files, nil
}

func splitNonEmpty(s string) []string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// isDir reports whether path is a directory.
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// commitPattern is a commit id as the state records it. Compiled at its
// first use: its repetition makes it the costliest regexp of smithvm's
// start-up, which most runs (no worktree) never need.
var commitPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{7,64}$`) })

// ShowCommit returns one step's commit on a run's branch (CONTRACT 13:
// what the agents did): `git show` of it, the patch or with stat the
// summary, through Smith's git, which runs nothing from the repository,
// masked whole with mask as Diff's.
func ShowCommit(ctx context.Context, d confine.Dir, commit string, stat bool, mask *text.Masker, lookup func(string) (string, bool)) (string, error) {
	if !commitPattern().MatchString(commit) {
		return "", fmt.Errorf("'%s' is not a commit id", commit)
	}
	g, err := openWorkspace(ctx, d.Workspace, lookup)
	if err != nil {
		return "", err
	}
	args := []string{"show", "--no-color", "--no-ext-diff", "--no-textconv", "--format=commit %H%n%s%n"}
	if stat {
		args = append(args, "--stat")
	}
	r := g.out(ctx, append(args, commit)...)
	if r.err != nil {
		return "", fmt.Errorf("git show: %v: %s", r.err, strings.TrimSpace(r.out))
	}
	return mask.String(r.out), nil
}

// CommitLines returns the lines a commit adds (git's numstat, binary files
// not counted): what a step wrote, for stats.totalLinesWritten when the
// agents edit files themselves.
func (l Local) CommitLines(ctx context.Context, worktree, commit string) (int, error) {
	if !commitPattern().MatchString(commit) {
		return 0, fmt.Errorf("'%s' is not a commit id", commit)
	}
	g, err := openWorktree(ctx, worktree, l.Env)
	if err != nil {
		return 0, err
	}
	r := g.out(ctx, "show", "--no-color", "--no-ext-diff", "--no-textconv", "--numstat", "--format=", commit)
	if r.err != nil {
		return 0, fmt.Errorf("git show --numstat: %v: %s", r.err, strings.TrimSpace(r.out))
	}
	n := 0
	for line := range strings.SplitSeq(r.out, "\n") {
		added, _, _ := strings.Cut(line, "\t")
		if k, err := strconv.Atoi(added); err == nil {
			n += k
		}
	}
	return n, nil
}

// A nestedRepo is a repository of its own that a step left in the
// worktree and an earlier commit recorded: its path (relative to the top)
// and the commit the index records for it (a gitlink).
type nestedRepo struct{ path, id string }

// nestedRepos returns every nested repository the index records (a
// gitlink) whose folder is still there. git add looks into such a
// repository (git status inside it, under its own configuration: its
// filters and drivers, which disableDrivers never read, would run), so it
// is kept out of the add, and recordNestedHeads records its later commits
// instead; its removal is added (its folder gone, git has nothing to look
// into). git ls-files -s runs nothing.
func nestedRepos(ctx context.Context, g *gitRepo) ([]nestedRepo, error) {
	r := g.out(ctx, "ls-files", "-s", "-z")
	if r.err != nil {
		return nil, fmt.Errorf("git ls-files: %v: %s", r.err, strings.TrimSpace(r.out))
	}
	var out []nestedRepo
	for rec := range strings.SplitSeq(r.out, "\x00") {
		meta, path, ok := strings.Cut(rec, "\t")
		if !ok || !strings.HasPrefix(meta, "160000 ") {
			continue
		}
		if _, err := os.Lstat(filepath.Join(g.workTree, path)); err == nil {
			id, _, _ := strings.Cut(strings.TrimPrefix(meta, "160000 "), " ")
			out = append(out, nestedRepo{path, id})
		}
	}
	return out, nil
}

// writtenInEmptySubmodule fails when a step wrote files in the folder of
// a submodule (or nested repository) that the worktree does not have
// checked out: Smith checks out no submodule (that would run git in it),
// so git add, kept out of it, would leave the files out of the commit
// without a word and clean would delete them. A folder with a .git of its
// own (a step checked it out or made it) is the nested repository's
// business, recorded by recordNestedHeads.
func writtenInEmptySubmodule(top string, nested []nestedRepo) error {
	for _, n := range nested {
		dir := filepath.Join(top, filepath.FromSlash(n.path))
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			continue
		}
		var files []string
		filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				rel, _ := filepath.Rel(top, p)
				files = append(files, filepath.ToSlash(rel))
			}
			return nil
		})
		if len(files) > 0 {
			return fmt.Errorf("the step wrote %s in %s, a submodule (or nested repository) that the run's worktree does not have checked out (Smith checks out no submodule: that would run git in it), so its files cannot be committed on the run's branch; nothing was committed (the files are left in the worktree): change the submodule in its own repository, or keep the step out of it",
				listSome(files, 5), n.path)
		}
	}
	return nil
}

// recordNestedHeads stages the commit each nested repository's HEAD is at
// now when it moved (a later step committed in it): read from its files by
// nestedHead, set with git update-index --cacheinfo, which runs nothing
// and looks into nothing. A HEAD that cannot be read leaves the recorded
// commit as it was.
func recordNestedHeads(ctx context.Context, g *gitRepo, nested []nestedRepo) error {
	for _, n := range nested {
		id := nestedHead(g.workTree, n.path)
		if id == "" || id == n.id || len(id) != len(n.id) {
			continue
		}
		if r := g.git(ctx, "update-index", "--cacheinfo", "160000,"+id+","+n.path); r.err != nil {
			return fmt.Errorf("git update-index of the nested repository %s: %v: %s", n.path, r.err, strings.TrimSpace(r.out))
		}
	}
	return nil
}

// nestedHead returns the commit the repository at rel (a folder below the
// work tree top) has checked out, read from its own files as git would
// read them, without running git in it: rel/.git/HEAD, a commit id (a
// detached HEAD) or a symbolic ref resolved through its loose ref file or
// packed-refs. Every file is opened below top without following a link
// (confine.OpenBelow), so a .git that is a link, or a .git file naming a
// folder elsewhere (a submodule's or a worktree's), is not followed. ""
// when the HEAD cannot be read so (an unborn branch, a corrupt file, a
// ref storage other than files).
func nestedHead(top, rel string) string {
	gitDir := filepath.Join(rel, ".git")
	read := func(name string) string {
		f, err := confine.OpenBelow(top, filepath.Join(gitDir, filepath.FromSlash(name)))
		if err != nil {
			return ""
		}
		defer f.Close()
		b, _ := io.ReadAll(io.LimitReader(f, 4096))
		return strings.TrimSpace(string(b))
	}
	head := read("HEAD")
	for range 5 { // a symbolic ref may name another
		if isCommitID(head) {
			return head
		}
		ref, ok := strings.CutPrefix(head, "ref: ")
		if !ok || !validRefName(ref) {
			return ""
		}
		if head = read(ref); head == "" {
			return packedRef(top, filepath.Join(gitDir, "packed-refs"), ref)
		}
	}
	return ""
}

// packedRef returns the commit id packed-refs (at rel below top) gives ref,
// or "".
func packedRef(top, rel, ref string) string {
	f, err := confine.OpenBelow(top, rel)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<10)
	for sc.Scan() {
		id, name, ok := strings.Cut(sc.Text(), " ")
		if ok && name == ref && isCommitID(id) {
			return id
		}
	}
	return ""
}

// isCommitID reports whether s is a full object id (SHA-1 or SHA-256), as
// HEAD and refs hold them.
func isCommitID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// validRefName reports whether ref is a name under refs/ that stays in its
// folder: no component empty or starting with a dot (no "..", no .git),
// nothing git refuses in a ref name's characters.
func validRefName(ref string) bool {
	if !strings.HasPrefix(ref, "refs/") || strings.ContainsAny(ref, "\\ ~^:?*[\x7f") {
		return false
	}
	for part := range strings.SplitSeq(ref, "/") {
		if part == "" || part[0] == '.' || strings.HasSuffix(part, ".lock") {
			return false
		}
		for _, c := range part {
			if c < ' ' {
				return false
			}
		}
	}
	return true
}
