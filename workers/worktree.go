package workers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"smith/source"
	"smith/workers/confine"
	"smith/workers/step"
)

// WorktreePath is where the git worktree of a run lives (CONTRACT 8):
// BASE/.orchestrator/worktrees/<run_id>.
func WorktreePath(d confine.Dir, runID string) string {
	return filepath.Join(d.Base, ".orchestrator", "worktrees", runID)
}

// refComponent reports whether id (a valid run id: [A-Za-z0-9_.-]) can be
// one component of a git ref name (git check-ref-format): it must not
// start with '.', hold "..", or end with '.' or ".lock".
func refComponent(id string) bool {
	return id != "" && !strings.HasPrefix(id, ".") && !strings.Contains(id, "..") && !strings.HasSuffix(id, ".") && !strings.HasSuffix(id, ".lock")
}

// IsGitRepo reports whether dir is inside a git work tree, one that git
// refuses to open included (what it says is the error of every use), and
// true when the git on PATH is too old to ask (CheckGit).
func IsGitRepo(ctx context.Context, dir string, lookup func(string) (string, bool)) bool {
	_, err := discover(ctx, dir, lookup)
	var refused *repoRefused
	// A git too old to run (E_GIT_VERSION) cannot tell: the next use says
	// why it refuses, where "no repository" would run in place.
	return err == nil || errors.As(err, &refused) || source.CodeOf(err, "") == source.EGitVersion
}

// CreateWorktree gives a run its own git worktree of WORKSPACE on branch
// smith/<run_id>, starting at WORKSPACE's HEAD, and returns its path. An
// existing worktree of the run (a resume) is reused when it is whole.
func CreateWorktree(ctx context.Context, d confine.Dir, runID string, lookup func(string) (string, bool)) (string, error) {
	t, err := OpenRunTree(ctx, d, runID, "", lookup)
	return t.Path, err
}

// OpenRunTree makes (or, on resume, checks and repairs) run runID's
// worktree, so that a crash at any instant of an earlier call is finished
// or undone (CONTRACT 12.4). base is the starting commit the run's state
// recorded ("" for a run that has none yet). In order, each step durable
// before the next depends on it:
//
//   - the base ref refs/smith-base/<run_id>: recreated from base when
//     missing; a new run's is written first, from WORKSPACE's HEAD;
//   - the branch smith/<run_id>: made at the base when missing;
//   - the worktree: kept only when it is a whole worktree of this
//     repository (its .git names it back, git's "initializing" lock of
//     an add cut off is gone) checked out on the branch; anything else
//     at its path (an empty folder, a half-made worktree) is removed with
//     git's record of it and made again.
func OpenRunTree(ctx context.Context, d confine.Dir, runID, base string, lookup func(string) (string, bool)) (step.RunTree, error) {
	if !refComponent(runID) {
		return step.RunTree{}, &source.Error{Code: source.EUsage, Msg: fmt.Sprintf("isolation git-worktree: the run id '%s' cannot name the run's git branch %s (git takes no name that starts with '.', holds '..', or ends with '.' or '.lock'): choose another --run-id", runID, step.WorktreeBranch(runID))}
	}
	path := WorktreePath(d, runID)
	top, err := discover(ctx, d.Workspace, lookup)
	if errors.Is(err, errNoRepo) {
		return step.RunTree{}, fmt.Errorf("isolation git-worktree: workspace %s is not a git repository", d.Workspace)
	}
	if err != nil {
		return step.RunTree{}, fmt.Errorf("isolation git-worktree: %w", err)
	}
	// A workspace nested inside a larger repository would give a worktree of
	// the outer repository: refuse it rather than isolate the wrong tree.
	if !sameDir(top, d.Workspace) {
		return step.RunTree{}, fmt.Errorf("isolation git-worktree: workspace %s is inside the git repository %s, not its top; make the workspace its own repository",
			d.Workspace, top)
	}
	g, err := openWorkspace(ctx, d.Workspace, lookup)
	if err != nil {
		return step.RunTree{}, fmt.Errorf("isolation git-worktree: %w", err)
	}
	clearStaleLocks(g, d, runID)
	ref := BaseRef(runID)
	have := revParse(ctx, g, ref)
	switch {
	case have != "":
		if base == "" {
			base = have
		}
	case base != "":
		// Lost (a crash, a person): recreated from the run's state.
	default:
		if base = revParse(ctx, g, "HEAD"); base == "" {
			return step.RunTree{}, fmt.Errorf("isolation git-worktree: the repository %s has no commit to start from", d.Workspace)
		}
	}
	// made lists the refs this call creates, which a failure below
	// removes again (undoRefs): nothing half-made remains of a run whose
	// worktree could not be made.
	var made []string
	if have != base {
		if r := g.git(ctx, "update-ref", ref, base); r.err != nil {
			return step.RunTree{}, fmt.Errorf("git update-ref %s: %v: %s", ref, r.err, strings.TrimSpace(r.out))
		}
		if have == "" {
			made = append(made, ref)
		}
	}
	branch := step.WorktreeBranch(runID)
	if revParse(ctx, g, "refs/heads/"+branch) == "" {
		if r := g.git(ctx, "branch", "--no-track", branch, base); r.err != nil {
			undoRefs(ctx, g, made, base)
			return step.RunTree{}, fmt.Errorf("git branch %s: %v: %s", branch, r.err, strings.TrimSpace(r.out))
		}
		made = append(made, "refs/heads/"+branch)
	}
	if err := ensureWorktree(ctx, g, path, branch, lookup); err != nil {
		undoRefs(ctx, g, made, base)
		return step.RunTree{}, err
	}
	return step.RunTree{Path: path, Base: base, Head: revParse(ctx, g, "refs/heads/"+branch)}, nil
}

// undoRefs deletes the refs that OpenRunTree created before it failed
// (a git worktree add refused for a full disk, say), each only while it
// still points at base: git update-ref -d with the old value checks that
// and deletes in one step, so a ref that anything moved since is kept.
// A failure to delete is left for clean (the run's branch and base ref,
// as any run leaves them) rather than hiding the error being returned.
func undoRefs(ctx context.Context, g *gitRepo, refs []string, base string) {
	for _, ref := range slices.Backward(refs) {
		_ = g.git(ctx, "update-ref", "-d", ref, base)
	}
}

// clearStaleLocks removes the lock files git left in the records of run
// runID's worktrees (its own and its threads': index.lock, HEAD.lock, ...)
// and on its refs (its branch, its threads' branches, its base ref): a git
// command of Smith's dies with a smithvm killed mid-way (DieWithParent)
// and leaves its locks, which would fail every later command. Only the
// run's driver, which holds the run's lock, touches these, so a lock left
// there is stale by the time it opens the run.
func clearStaleLocks(g *gitRepo, d confine.Dir, runID string) {
	common := commonDir(g)
	removeLocks := func(dir string, deep bool) {
		filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if e.IsDir() && p != dir && !deep {
				return filepath.SkipDir
			}
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".lock") {
				_ = os.Remove(p)
			}
			return nil
		})
	}
	runWT := WorktreePath(d, runID)
	units := filepath.Join(d.Base, ".orchestrator", "unit-worktrees", runID)
	recs, _ := filepath.Glob(filepath.Join(common, "worktrees", "*", "gitdir"))
	for _, r := range recs {
		b, err := os.ReadFile(r)
		if err != nil {
			continue
		}
		wt := filepath.Dir(strings.TrimSpace(string(b)))
		if rel, err := filepath.Rel(units, wt); wt == runWT || err == nil && filepath.IsLocal(rel) {
			removeLocks(filepath.Dir(r), false)
		}
	}
	for _, f := range []string{"refs/heads/" + step.WorktreeBranch(runID) + ".lock", BaseRef(runID) + ".lock"} {
		_ = os.Remove(filepath.Join(common, filepath.FromSlash(f)))
	}
	removeLocks(filepath.Join(common, "refs", "heads", "smith-unit", runID), true)
	// packed-refs.lock is the repository's, taken by every deletion of a
	// ref (Smith's, another run's, the user's) for milliseconds: one that
	// outlives packedRefsGrace is a killed deletion's, which would fail
	// every later one (a unit branch left after its join).
	clearStale(filepath.Join(common, "packed-refs.lock"), packedRefsGrace)
}

// commonDir is the git directory g shares with its other worktrees.
func commonDir(g *gitRepo) string {
	common := g.gitDir
	if b, err := os.ReadFile(filepath.Join(common, "commondir")); err == nil {
		if c := strings.TrimSpace(string(b)); filepath.IsAbs(c) {
			common = c
		} else {
			common = filepath.Join(common, c)
		}
	}
	return common
}

// clearHalfRecords removes the records of worktrees (.git/worktrees/<id>)
// that a `git worktree add` killed before it wrote them whole left (a
// gitdir, HEAD or commondir missing or empty: git writes them in place,
// one after the other): git fails every later add on them ("failed to
// read .../commondir"), and prune keeps them (they are locked). A record is
// written within milliseconds, so one that stays half made for
// packedRefsGrace is a killed add's, whoever's.
func clearHalfRecords(g *gitRepo) {
	recs, _ := os.ReadDir(filepath.Join(commonDir(g), "worktrees"))
	for _, e := range recs {
		dir := filepath.Join(commonDir(g), "worktrees", e.Name())
		for e.IsDir() {
			if wholeRecord(dir) {
				break
			}
			fi, err := os.Stat(dir)
			if err != nil {
				break
			}
			if age := time.Since(fi.ModTime()); age < packedRefsGrace {
				time.Sleep(min(packedRefsGrace-age, 100*time.Millisecond))
				continue
			}
			_ = os.RemoveAll(dir)
			break
		}
	}
}

// wholeRecord reports whether the worktree record dir has its gitdir,
// HEAD and commondir, none empty.
func wholeRecord(dir string) bool {
	for _, f := range []string{"gitdir", "HEAD", "commondir"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			return false
		}
	}
	return true
}

// packedRefsGrace is how long a git command may hold the repository's
// packed-refs.lock before it counts as left by a killed one.
const packedRefsGrace = 2 * time.Second

// clearStale removes the lock file f once it has existed for grace: it
// waits for a live holder to release it, and removes it when none does.
func clearStale(f string, grace time.Duration) {
	for {
		fi, err := os.Lstat(f)
		if err != nil {
			return
		}
		age := time.Since(fi.ModTime())
		if age >= grace {
			_ = os.Remove(f)
			return
		}
		time.Sleep(min(grace-age, 100*time.Millisecond))
	}
}

// ensureWorktree makes path a whole worktree of g checked out on branch
// (which exists), keeping one that is already.
func ensureWorktree(ctx context.Context, g *gitRepo, path, branch string, lookup func(string) (string, bool)) error {
	if wholeWorktree(ctx, path, branch, lookup) {
		return nil
	}

	if err := dropWorktree(ctx, g, path); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create worktree directory: %w", err)
	}
	if r := g.git(ctx, "worktree", "add", path, branch); r.err != nil {
		return fmt.Errorf("git worktree add %s: %v: %s", branch, r.err, strings.TrimSpace(r.out))
	}
	return nil
}

// wholeWorktree reports whether path is a linked worktree whose .git names
// it back, that no cut-off `git worktree add` left locked, and whose HEAD
// is branch.
func wholeWorktree(ctx context.Context, path, branch string, lookup func(string) (string, bool)) bool {
	wt, err := openRepo(ctx, path, lookup)
	if err != nil || wt.gitDir == filepath.Join(path, ".git") {
		return false
	}
	if _, err := os.Lstat(filepath.Join(wt.gitDir, "locked")); err == nil {
		return false // git's "initializing" lock: the add was cut off
	}
	return headBranch(ctx, wt) == "refs/heads/"+branch
}

// dropWorktree removes whatever is at path (a worktree, a half-made one,
// an empty folder) and git's record of it, so that it can be made again.
func dropWorktree(ctx context.Context, g *gitRepo, path string) error {
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("remove the worktree %s: %w", path, err)
	}
	// An add cut off leaves its record locked ("initializing"), which
	// prune keeps: unlock it first (an error says there is none); one
	// cut off before its record was whole cannot be named by its path.
	clearHalfRecords(g)
	forgetWorktrees(g, path)
	return nil
}

// forgetWorktrees removes git's records (.git/worktrees/<id>, locked or
// not) of the worktrees at dir or below it whose folder is gone: what git
// worktree prune does, but for Smith's own worktrees alone. Prune would
// also forget the user's worktrees whose folder is away for a while (a
// removable drive, a folder moved before a git worktree repair).
func forgetWorktrees(g *gitRepo, dir string) {
	roots := []string{filepath.Clean(dir), realPath(dir)}
	recs, _ := filepath.Glob(filepath.Join(commonDir(g), "worktrees", "*", "gitdir"))
	for _, r := range recs {
		b, err := os.ReadFile(r)
		if err != nil {
			continue
		}
		wt := strings.TrimSpace(string(b))
		if !filepath.IsAbs(wt) { // worktree.useRelativePaths
			wt = filepath.Join(filepath.Dir(r), wt)
		}
		wt = filepath.Dir(wt)
		if _, err := os.Lstat(wt); err == nil {
			continue // still there: git's record is right
		}
		for _, root := range roots {
			if rel, err := filepath.Rel(root, wt); err == nil && filepath.IsLocal(rel) || wt == root {
				_ = os.RemoveAll(filepath.Dir(r))
				break
			}
		}
	}
}

// realPath is p with the links in its longest existing prefix resolved, as
// git records a worktree's path.
func realPath(p string) string {
	p = filepath.Clean(p)
	for dir, rest := p, ""; ; {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return p
		}
		dir, rest = parent, filepath.Join(filepath.Base(dir), rest)
	}
}

// revParse returns the commit rev names in g, "" when none.
func revParse(ctx context.Context, g *gitRepo, rev string) string {
	r := g.out(ctx, "rev-parse", "--verify", "--quiet", rev+"^{commit}")
	if r.err != nil {
		return ""
	}
	return strings.TrimSpace(r.out)
}

// headBranch is the ref HEAD of g names ("" when detached or unreadable).
func headBranch(ctx context.Context, g *gitRepo) string {
	r := g.out(ctx, "symbolic-ref", "-q", "HEAD")
	if r.err != nil {
		return ""
	}
	return strings.TrimSpace(r.out)
}

// RestoreWorktree puts the worktree wt back to commit on branch: HEAD on
// the branch, the branch at commit, the index and the files as commit has
// them (a merge cut off is dropped with them), and the untracked files that
// are not ignored removed, but those under exclude (Smith's own folders:
// inboxes, artifacts). A step cut off by a crash then runs again from the
// files of the last saved step, not on top of its own half-done changes
// (CONTRACT 12.4).
func (l Local) RestoreWorktree(ctx context.Context, wt, branch, commit string, exclude []string) error {
	g, err := openWorktree(ctx, wt, l.Env)
	if err != nil {
		return err
	}
	ref := "refs/heads/" + branch
	if headBranch(ctx, g) != ref {
		if r := g.git(ctx, "symbolic-ref", "HEAD", ref); r.err != nil {
			return fmt.Errorf("git symbolic-ref HEAD %s: %v: %s", ref, r.err, strings.TrimSpace(r.out))
		}
	}
	// First the index alone: a `git add -A` cut off may have staged
	// Smith's own files (an inbox, artifacts/), which a hard reset would
	// delete as files the index tracks and commit does not. The hard
	// reset then touches only commit's files.
	for _, mode := range []string{"--mixed", "--hard"} {
		if r := g.git(ctx, "reset", "-q", mode, commit); r.err != nil {
			return fmt.Errorf("git reset %s %s: %v: %s", mode, commit, r.err, strings.TrimSpace(r.out))
		}
	}
	args := []string{"clean", "-q", "-f", "-d"}
	for _, p := range exclude {
		args = append(args, "-e", "/"+strings.Trim(p, "/")+"/")
	}
	if r := g.git(ctx, args...); r.err != nil {
		return fmt.Errorf("git clean: %v: %s", r.err, strings.TrimSpace(r.out))
	}

	return nil
}

// RemoveWorktree removes a run's worktree and, with deleteBranch, its
// branch and its starting-commit ref. Unless force, it refuses (E_UNMERGED)
// to delete a branch with commits the checked-out branch does not contain,
// and to remove a worktree with uncommitted changes, new files included,
// but for those under own (Smith's own folders: inboxes, artifacts/). A
// run with neither a worktree nor a branch is an error.
func RemoveWorktree(d confine.Dir, runID string, own []string, deleteBranch, force bool, lookup func(string) (string, bool)) error {
	ctx := context.Background()
	path := WorktreePath(d, runID)
	hasWT := isDir(path)
	if !hasWT && (!deleteBranch || hasBranch(ctx, d, runID, lookup) != nil) {
		return &step.BranchError{Code: source.EUsage, Msg: fmt.Sprintf("run '%s' has no worktree at %s and no branch %s", runID, path, step.WorktreeBranch(runID))}
	}
	g, err := openWorkspace(ctx, d.Workspace, lookup)
	if err != nil {
		return err
	}
	// A worktree whose .git a step replaced (a repository of its own) or
	// removed is not the repository's any more: what is in it is on no
	// branch of the run's, and git worktree remove refuses it.
	var replaced error
	if hasWT {
		_, replaced = openWorktree(ctx, path, lookup)
	}
	if !force {
		if replaced != nil {
			return &step.BranchError{Code: source.EUnmerged, Msg: fmt.Sprintf("the worktree of run '%s' is not a worktree of the repository any more (%v); what is in it is on no branch of the run's: pass --force to delete it", runID, replaced)}
		}
		if hasWT {
			if wt, err := openRepo(ctx, path, lookup); err == nil {
				files, err := uncommitted(ctx, wt, own)
				if err != nil {
					return err
				}
				if len(files) > 0 {
					return &step.BranchError{Code: source.EUnmerged, Msg: fmt.Sprintf("the worktree of run '%s' has uncommitted changes (%s); commit them or pass --force", runID, listSome(files, 5))}
				}
			}
		}
		if deleteBranch {
			unmerged, err := Unmerged(ctx, d, runID, lookup)
			if err != nil {
				return err
			}
			if unmerged {
				return &step.BranchError{Code: source.EUnmerged, Msg: fmt.Sprintf("branch %s has commits that are not merged: 'smithvm merge %s' first, or pass --force to delete them", step.WorktreeBranch(runID), runID)}
			}
		}
	}
	if hasWT && replaced != nil {
		// Smith's own folder (BASE/.orchestrator/worktrees/<run_id>):
		// removed without following a link in it, then git forgets it.
		if err := os.RemoveAll(path); err != nil {
			return fmt.Errorf("remove the worktree %s: %w", path, err)
		}
		forgetWorktrees(g, path)
	} else if hasWT {
		if r := g.git(ctx, "worktree", "remove", "--force", path); r.err != nil {
			return fmt.Errorf("git worktree remove: %v: %s", r.err, strings.TrimSpace(r.out))
		}
	}
	if deleteBranch {
		if g.ok(ctx, "rev-parse", "--verify", "--quiet", "refs/heads/"+step.WorktreeBranch(runID)) {
			if r := g.git(ctx, "branch", "-D", step.WorktreeBranch(runID)); r.err != nil {
				return fmt.Errorf("git branch -D: %v: %s", r.err, strings.TrimSpace(r.out))
			}
		}
		_ = g.git(ctx, "update-ref", "-d", BaseRef(runID))
	}
	// The folders that held the threads' worktrees, emptied by their
	// joins; a thread worktree a conflicting join kept stays.
	removeEmptyDirs(filepath.Join(d.Base, ".orchestrator", "unit-worktrees", runID))
	return nil
}

// removeEmptyDirs removes dir and the folders below it that hold no file
// (nor link), deepest first; a link is never followed.
func removeEmptyDirs(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			removeEmptyDirs(filepath.Join(dir, e.Name()))
		}
	}
	_ = os.Remove(dir) // fails, as it should, on a folder that is not empty
}

// UncommittedTracked returns the tracked files of the repository whose
// top is d.Workspace that differ from its HEAD (none when it is not such
// a repository): an isolated run starts from HEAD without them.
func UncommittedTracked(ctx context.Context, d confine.Dir, lookup func(string) (string, bool)) []string {
	g, err := openWorkspace(ctx, d.Workspace, lookup)
	if err != nil {
		return nil
	}
	r := g.out(ctx, "status", "--porcelain", "-z", "--untracked-files=no", "--no-renames")
	if r.err != nil {
		return nil
	}
	var files []string
	for rec := range strings.SplitSeq(r.out, "\x00") {
		if len(rec) > 3 {
			files = append(files, rec[3:])
		}
	}
	return files
}

// InProgress names the operation (a merge, a rebase, ...) that the
// repository whose top is d.Workspace is in the middle of, "" when none
// (or when it is not such a repository).
func InProgress(ctx context.Context, d confine.Dir, lookup func(string) (string, bool)) string {
	g, err := openWorkspace(ctx, d.Workspace, lookup)
	if err != nil {
		return ""
	}
	op, _ := inProgress(g)
	return op
}

// Submodules returns the submodules (and nested repositories committed as
// gitlinks) that the index of the repository whose top is d.Workspace
// records: a run's worktree has each as an empty folder (none when it is
// not such a repository).
func Submodules(ctx context.Context, d confine.Dir, lookup func(string) (string, bool)) []string {
	g, err := openWorkspace(ctx, d.Workspace, lookup)
	if err != nil {
		return nil
	}
	r := g.out(ctx, "ls-files", "-s", "-z")
	if r.err != nil {
		return nil
	}
	var paths []string
	for rec := range strings.SplitSeq(r.out, "\x00") {
		if meta, path, ok := strings.Cut(rec, "\t"); ok && strings.HasPrefix(meta, "160000 ") {
			paths = append(paths, path)
		}
	}
	return paths
}

// ListSome is the first n of files, comma-separated, with how many more.
func ListSome(files []string, n int) string { return listSome(files, n) }

// uncommitted returns the files of wt's work tree that differ from its
// HEAD, new files included whatever status.showUntrackedFiles says, but
// for those under own.
func uncommitted(ctx context.Context, wt *gitRepo, own []string) ([]string, error) {
	r := wt.out(ctx, "status", "--porcelain", "-z", "--untracked-files=all", "--ignored=no", "--no-renames")
	if r.err != nil {
		return nil, fmt.Errorf("git status: %v: %s", r.err, strings.TrimSpace(r.out))
	}
	var files []string
	for rec := range strings.SplitSeq(r.out, "\x00") {
		if len(rec) < 4 {
			continue
		}
		name := rec[3:]
		if !slices.ContainsFunc(own, func(p string) bool { return name == p || strings.HasPrefix(name, strings.TrimSuffix(p, "/")+"/") }) {
			files = append(files, name)
		}
	}
	return files, nil
}

// listSome is the first n of files, comma-separated, with how many more.
func listSome(files []string, n int) string {
	if len(files) <= n {
		return strings.Join(files, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(files[:n], ", "), len(files)-n)
}

// sameDir reports whether a and b name the same directory.
func sameDir(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// ChangedFiles returns the files run runID has changed on its branch
// against its starting commit (sorted), and in its worktree not yet
// committed; none when it has no branch.
func ChangedFiles(ctx context.Context, d confine.Dir, runID string, lookup func(string) (string, bool)) []string {
	g, err := openWorkspace(ctx, d.Workspace, lookup)
	if err != nil || !g.ok(ctx, "rev-parse", "--verify", "--quiet", BaseRef(runID)) {
		return nil
	}
	out := splitNonEmpty(g.out(ctx, "diff", "--no-ext-diff", "--no-textconv", "--name-only", BaseRef(runID), step.WorktreeBranch(runID)).out)
	if wt, err := openRepo(ctx, WorktreePath(d, runID), lookup); err == nil {
		// Not Smith's own files: artifacts/ holds the same paths in every
		// run of a workflow (a message's name is the run's alone).
		if files, err := uncommitted(ctx, wt, []string{step.ArtifactsDir}); err == nil {
			out = append(out, files...)
		}
	}
	return out
}
