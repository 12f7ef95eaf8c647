package workers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"smith/workers/proc"
	"smith/workers/step"
	"smith/workers/steprun"
)

// Smith's git runs nothing from the repository (CONTRACT 12.4). Every git
// command Smith runs goes through a gitRepo: the argv names the git
// directory and the work tree explicitly (--git-dir, --work-tree: a .git
// file or folder that a step left in a work tree is never followed to
// another configuration), and the child's environment is built here, with
// no inherited GIT_* variable, so that nothing a repository's configuration
// (.git/config, a worktree's config.worktree, a file they include) or its
// files (.gitattributes) name is run: no hook, fsmonitor, filter, diff or
// merge driver, pager, editor, credential helper or askpass program. The
// list of what is disabled, and why, is docs/reliability.md section 7.
// None of them runs on a git too old to read the overrides (CheckGit).

// gitTimeout bounds one git command.
const gitTimeout = 2 * time.Minute

// gitFixedEnv is the environment of every git command on top of the
// inherited variables of CONTRACT 3.5 (PATH, HOME, ...): no system or
// global configuration or attributes (they may name commands; Smith's
// commits need no user settings), no prompt, pager, editor or askpass,
// no optional lock (git status must not race the steps), no replace refs.
var gitFixedEnv = []step.EnvVar{
	{Name: "GIT_CONFIG_NOSYSTEM", Value: "1"},
	{Name: "GIT_CONFIG_GLOBAL", Value: os.DevNull},
	{Name: "GIT_ATTR_NOSYSTEM", Value: "1"},
	{Name: "GIT_TERMINAL_PROMPT", Value: "0"},
	{Name: "GIT_OPTIONAL_LOCKS", Value: "0"},
	{Name: "GIT_PAGER", Value: "cat"},
	{Name: "PAGER", Value: "cat"},
	{Name: "GIT_EDITOR", Value: ":"},
	{Name: "GIT_SEQUENCE_EDITOR", Value: ":"},
	{Name: "GIT_ASKPASS", Value: ""},
	{Name: "SSH_ASKPASS", Value: ""},
	{Name: "GIT_NO_REPLACE_OBJECTS", Value: "1"},
	{Name: "GIT_PROTOCOL_FROM_USER", Value: "0"},
}

// gitFixedConfig is given to every git command with the highest precedence
// (GIT_CONFIG_COUNT, the same scope as -c), over whatever the repository's
// configuration says. An empty value resets a list (credential.helper) or
// leaves no command to run.
var gitFixedConfig = [][2]string{
	{"core.hooksPath", os.DevNull}, // no hook: /dev/null/<hook> never exists
	{"core.fsmonitor", "false"},
	{"core.useBuiltinFSMonitor", "false"},
	{"core.untrackedCache", "false"},
	{"core.attributesFile", os.DevNull},
	{"core.pager", "cat"},
	{"core.editor", ":"},
	{"sequence.editor", ":"},
	{"core.askPass", ""},
	{"core.sshCommand", ""},
	{"core.quotePath", "false"},
	{"credential.helper", ""},
	{"protocol.allow", "never"},
	{"submodule.recurse", "false"},
	{"fetch.recurseSubmodules", "false"},
	{"status.submoduleSummary", "false"},
	// A repository a step left in a subfolder of its worktree (sub/.git,
	// committed as a gitlink) is never looked into: git add, status and
	// diff would run git status inside it, under its own configuration,
	// whose filters and drivers disableDrivers never read. "dirty" still
	// records a new commit of it (its HEAD, read without running
	// anything); "all" would hide even that. It overrides every
	// submodule.<name>.ignore.
	{"diff.ignoreSubmodules", "dirty"},
	{"diff.external", ""},
	// smithvm diff prints a patch git apply and patch -p1 take, whatever
	// prefixes the repository asks for.
	{"diff.noprefix", "false"},
	{"diff.mnemonicPrefix", "false"},
	{"diff.srcPrefix", "a/"},
	{"diff.dstPrefix", "b/"},
	{"diff.relative", "false"},
	{"merge.stat", "false"},
	{"rerere.enabled", "false"}, // no rr-cache record, no replayed resolution
	// core.autocrlf's check only warns: a step's commit (git add -A,
	// Smith's own files included before they are put back) must not fail
	// on a line-ending warning.
	{"core.safecrlf", "warn"},
	{"merge.verifySignatures", "false"},
	{"log.showSignature", "false"},
	{"commit.gpgSign", "false"},
	{"tag.gpgSign", "false"},
	{"gc.auto", "0"},
	// Every completed step is on disk before the next starts, git's part
	// included: objects, refs and the index are fsynced (git's default
	// leaves loose objects and refs to the page cache).
	{"core.fsync", "all"},
	{"core.fsyncMethod", "fsync"},
	{"maintenance.auto", "false"},
	{"user.name", "Smith"},
	{"user.email", "smith@localhost"},
}

// gitDriverKeys are the configuration keys, per named driver, that name a
// command: for every such key the repository's configuration holds, the
// command is replaced (an empty command runs nothing: git skips an empty
// filter and fails an empty merge driver, which a merge reports).
// filter.<x>.required is set false so that a skipped filter is not an
// error.
var gitDriverKeys = map[string]string{
	"filter.*.clean":      "",
	"filter.*.smudge":     "",
	"filter.*.process":    "",
	"filter.*.required":   "false",
	"merge.*.driver":      "",
	"diff.*.command":      "",
	"diff.*.textconv":     "",
	"credential.*.helper": "",
	"gpg.*.program":       "",
}

// A gitRepo is a git directory and its work tree, both named in every
// command, with the configuration overrides that keep the repository's
// commands from running.
type gitRepo struct {
	gitDir   string // absolute
	workTree string // absolute
	lookup   func(string) (string, bool)
	config   [][2]string // gitFixedConfig and the drivers' overrides
}

// openRepo returns the repository whose work tree's top is dir: dir/.git
// is its git directory, or (a linked worktree) a file naming it. The
// .git entry must not be a link, and a .git file must name a directory
// outside dir that names dir/.git back (git's own gitdir record), so a
// .git file left in a worktree cannot point git at a configuration of its
// own. The repository's configuration is read once here (git config
// --list runs nothing) to disable every driver it names.
func openRepo(ctx context.Context, dir string, lookup func(string) (string, bool)) (*gitRepo, error) {
	return open(ctx, dir, false, lookup)
}

// openWorkspace is openRepo for the user's checkout (WORKSPACE): its .git
// file may also name a repository's own git directory, which names no
// worktree back (a submodule's checkout: the superproject's
// .git/modules/<name>; git init --separate-git-dir). That is the user's
// layout, not a file a step left in a worktree Smith made.
func openWorkspace(ctx context.Context, dir string, lookup func(string) (string, bool)) (*gitRepo, error) {
	return open(ctx, dir, true, lookup)
}

// open is openRepo, or with separate openWorkspace.
func open(ctx context.Context, dir string, separate bool, lookup func(string) (string, bool)) (*gitRepo, error) {
	dir = filepath.Clean(dir)
	dotGit := filepath.Join(dir, ".git")
	fi, err := os.Lstat(dotGit)
	if err != nil {
		return nil, fmt.Errorf("%s is not the top of a git work tree: %w", dir, err)
	}
	// The first git command on it comes next (disableDrivers).
	if err := CheckGit(ctx, lookup); err != nil {
		return nil, err
	}
	gitDir := dotGit
	switch {
	case fi.IsDir():
	case fi.Mode().IsRegular():
		if gitDir, err = linkedGitDir(dir, dotGit, separate); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%s is neither a folder nor a file: Smith does not follow it", dotGit)
	}
	g := &gitRepo{gitDir: gitDir, workTree: dir, lookup: lookup, config: gitFixedConfig}
	if err := g.disableDrivers(ctx); err != nil {
		return nil, err
	}
	if f := userExcludesFile(ctx, lookup); f != "" {
		g.config = append(g.config, [2]string{"core.excludesFile", f})
	}
	return g, nil
}

// openWorktree is openRepo for a worktree Smith made (a run's or a
// thread's): its .git must be the file that links it to the repository
// (checked as openRepo says), never a folder. A step that replaced it with
// a repository of its own (git init in its worktree) would otherwise get
// Smith's commits, joins and threads, on a branch that is not the run's.
func openWorktree(ctx context.Context, dir string, lookup func(string) (string, bool)) (*gitRepo, error) {
	g, err := openRepo(ctx, dir, lookup)
	if err == nil && g.gitDir == filepath.Join(filepath.Clean(dir), ".git") {
		err = fmt.Errorf("%s is a repository of its own, not the link of a worktree Smith made to the repository (a step replaced it?): Smith does not use it", g.gitDir)
	}
	return g, err
}

// userExcludesFile is the user's global ignore file as their own
// configuration names it (core.excludesFile in ~/.gitconfig), which
// GIT_CONFIG_GLOBAL=/dev/null would otherwise lose: files the user ignores
// everywhere (.env, ...) stay out of Smith's commits. Reading a setting
// runs nothing; "" when none is set.
func userExcludesFile(ctx context.Context, lookup func(string) (string, bool)) string {
	ctx = context.WithoutCancel(ctx) // as run: a stop must not lose the user's ignores
	if CheckGit(ctx, lookup) != nil {
		return ""
	}
	env := steprun.BuildEnv(lookup, nil, nil, []step.EnvVar{{Name: "GIT_CONFIG_NOSYSTEM", Value: "1"}, {Name: "GIT_TERMINAL_PROMPT", Value: "0"}})
	res := proc.Run(ctx, proc.Spec{Argv: []string{"git", "--no-pager", "config", "--global", "--path", "--get", "core.excludesFile"}, Dir: os.TempDir(), Env: env, Timeout: gitTimeout})
	if res.StartErr != nil || res.ExitCode != 0 {
		return ""
	}
	return strings.TrimSpace(res.Stdout)
}

// userSafeDirs are the safe.directory values of the user's own global and
// system configuration, which GIT_CONFIG_GLOBAL=/dev/null and
// GIT_CONFIG_NOSYSTEM would otherwise lose: a repository owned by another
// user (a container's mounted volume) that the user trusts opens for
// Smith's git as for theirs. Only the one command that looks for its
// repository (discover) checks the owner; reading a setting runs nothing.
func userSafeDirs(ctx context.Context, lookup func(string) (string, bool)) []string {
	if CheckGit(ctx, lookup) != nil {
		return nil
	}
	env := steprun.BuildEnv(lookup, nil, nil, []step.EnvVar{{Name: "GIT_TERMINAL_PROMPT", Value: "0"}})
	// One git for both scopes, in git's order (system, then global); a
	// local value (TMPDIR inside a repository) is left out, as git itself
	// ignores it.
	res := proc.Run(ctx, proc.Spec{Argv: []string{"git", "--no-pager", "config", "--show-scope", "--get-all", "safe.directory"}, Dir: os.TempDir(), Env: env, Timeout: gitTimeout})
	if res.StartErr != nil || res.ExitCode != 0 {
		return nil
	}
	var dirs []string
	for line := range strings.SplitSeq(strings.TrimRight(res.Stdout, "\n"), "\n") {
		if scope, v, ok := strings.Cut(line, "\t"); ok && (scope == "system" || scope == "global") {
			dirs = append(dirs, v)
		}
	}
	return dirs
}

// linkedGitDir reads the .git file of a linked worktree at dir and returns
// the git directory it names, checked as openRepo says; with separate, a
// repository's own git directory (no commondir: not a worktree's record)
// needs no record naming dir back.
func linkedGitDir(dir, dotGit string, separate bool) (string, error) {
	data, err := os.ReadFile(dotGit)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", dotGit, err)
	}
	target, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir: ")
	if !ok {
		return "", fmt.Errorf("%s does not name a git directory", dotGit)
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(dir, target)
	}
	target = filepath.Clean(target)
	if r, err := filepath.Rel(dir, target); err == nil && filepath.IsLocal(r) {
		return "", fmt.Errorf("%s names the git directory %s inside its own work tree: Smith does not use it", dotGit, target)
	}
	if separate && isOwnGitDir(target) {
		return target, nil
	}
	back, err := os.ReadFile(filepath.Join(target, "gitdir"))
	if err != nil || !sameFile(strings.TrimSpace(string(back)), dotGit) {
		return "", fmt.Errorf("%s names the git directory %s, which does not name this worktree back", dotGit, target)
	}
	return target, nil
}

// isOwnGitDir reports whether dir is a repository's own git directory
// (HEAD, objects/ and refs/, no commondir), not a linked worktree's record.
func isOwnGitDir(dir string) bool {
	if _, err := os.Lstat(filepath.Join(dir, "commondir")); err == nil {
		return false
	}
	return isDir(filepath.Join(dir, "objects")) && isDir(filepath.Join(dir, "refs")) && isFile(filepath.Join(dir, "HEAD"))
}

// isFile reports whether path is a regular file (not followed when a link).
func isFile(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode().IsRegular()
}

// sameFile reports whether a and b name the same existing file.
func sameFile(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// disableDrivers adds an override for every key of gitDriverKeys that the
// repository's configuration sets.
func (g *gitRepo) disableDrivers(ctx context.Context) error {
	res, err := g.run(ctx, "config", "--list", "--null")
	if err != nil {
		if res.ExitCode == 1 && res.Stdout == "" {
			return nil // no configuration at all
		}
		return fmt.Errorf("git config --list: %v: %s", err, strings.TrimSpace(res.Stderr))
	}
	seen := map[string]bool{}
	config := append([][2]string(nil), gitFixedConfig...)
	for rec := range strings.SplitSeq(res.Stdout, "\x00") {
		key, _, _ := strings.Cut(rec, "\n")
		first, rest, ok1 := strings.Cut(key, ".")
		i := strings.LastIndex(rest, ".")
		if !ok1 || i < 0 || seen[key] {
			continue
		}
		pattern := strings.ToLower(first) + ".*." + strings.ToLower(rest[i+1:])
		if v, ok := gitDriverKeys[pattern]; ok {
			seen[key] = true
			config = append(config, [2]string{key, v})
		}
	}
	g.config = config
	return nil
}

// env is the whole environment of one git command: CONTRACT 3.5's
// inherited variables, gitFixedEnv and the configuration overrides.
func (g *gitRepo) env() []string {
	vars := append([]step.EnvVar(nil), gitFixedEnv...)
	vars = append(vars, step.EnvVar{Name: "GIT_CONFIG_COUNT", Value: strconv.Itoa(len(g.config))})
	for i, kv := range g.config {
		n := strconv.Itoa(i)
		vars = append(vars, step.EnvVar{Name: "GIT_CONFIG_KEY_" + n, Value: kv[0]}, step.EnvVar{Name: "GIT_CONFIG_VALUE_" + n, Value: kv[1]})
	}
	return steprun.BuildEnv(g.lookup, nil, nil, vars)
}

// argv is the command line of git with args on g.
func (g *gitRepo) argv(args []string) []string {
	return append([]string{"git", "--no-pager", "--git-dir=" + g.gitDir, "--work-tree=" + g.workTree}, args...)
}

// run runs git once on g; a failure to start or a non-zero exit is its
// error. A stop (Ctrl-C, SIGTERM, smithvm stop) does not cut it off:
// Smith's git is its bookkeeping (a step's commit, a join's merges, a
// worktree made or removed, a question about the repository), local and
// bounded by gitTimeout, and cut off half-way it would fail the step or
// the join that the stop only meant to interrupt (a failure a resume then
// follows) or leave a lock or a half-made worktree. The run stops at its
// next step instead.
func (g *gitRepo) run(ctx context.Context, args ...string) (proc.Result, error) {
	ctx = context.WithoutCancel(ctx)
	if err := CheckGit(ctx, g.lookup); err != nil {
		return proc.Result{StartErr: err}, err
	}
	res := proc.Run(ctx, proc.Spec{Argv: g.argv(args), Dir: g.workTree, Env: g.env(), Timeout: gitTimeout, DieWithParent: true})
	if res.StartErr == nil && res.ExitCode != 0 {
		return res, fmt.Errorf("exit status %d", res.ExitCode)
	}
	return res, res.StartErr
}

// stream runs git with args on g with its whole stdout written to w (a
// diff of any size), its stderr captured.
func (g *gitRepo) stream(ctx context.Context, w io.Writer, args ...string) (proc.Result, error) {
	if err := CheckGit(ctx, g.lookup); err != nil {
		return proc.Result{StartErr: err}, err
	}
	res := proc.Run(ctx, proc.Spec{Argv: g.argv(args), Dir: g.workTree, Env: g.env(), Timeout: gitTimeout, Stdout: w, MemCap: 64 << 10, DieWithParent: true})
	if res.StartErr == nil && res.ExitCode != 0 {
		return res, fmt.Errorf("exit status %d", res.ExitCode)
	}
	return res, res.StartErr
}

type gitResult struct {
	out string
	err error
}

// git runs git with args on g; its out is stdout and stderr together.
func (g *gitRepo) git(ctx context.Context, args ...string) gitResult {
	res, err := g.run(ctx, args...)
	return gitResult{res.Stdout + res.Stderr, err}
}

// out runs git with args on g and returns its stdout alone (diffs must not
// mix in stderr), or its stderr when it failed.
func (g *gitRepo) out(ctx context.Context, args ...string) gitResult {
	res, err := g.run(ctx, args...)
	if err != nil {
		return gitResult{res.Stderr, err}
	}
	return gitResult{res.Stdout, nil}
}

// ok reports whether git with args on g exits 0.
func (g *gitRepo) ok(ctx context.Context, args ...string) bool {
	_, err := g.run(ctx, args...)
	return err == nil
}

// errNoRepo is discover's answer for a directory in no git work tree.
var errNoRepo = errors.New("not in a git work tree")

// discover returns the top of the git work tree that holds dir. It is the
// one git command that looks for its repository (git rev-parse, which
// runs no hook, filter or fsmonitor), with the environment and overrides
// of every other.
func discover(ctx context.Context, dir string, lookup func(string) (string, bool)) (string, error) {
	g := &gitRepo{workTree: dir, lookup: lookup, config: gitFixedConfig}
	ctx = context.WithoutCancel(ctx) // as run: cut off, it would answer "no repository"
	if err := CheckGit(ctx, lookup); err != nil {
		return "", err // never "no repository": an isolated run would run in place
	}
	for _, v := range userSafeDirs(ctx, lookup) {
		g.config = append(g.config[:len(g.config):len(g.config)], [2]string{"safe.directory", v})
	}
	// git's own words, untranslated, tell "no repository" from a
	// repository it refuses to open.
	env := slices.DeleteFunc(g.env(), func(kv string) bool {
		return strings.HasPrefix(kv, "LC_ALL=") || strings.HasPrefix(kv, "LANGUAGE=")
	})
	res := proc.Run(ctx, proc.Spec{Argv: []string{"git", "--no-pager", "-C", dir, "rev-parse", "--show-toplevel"}, Dir: dir, Env: append(env, "LC_ALL=C"), Timeout: gitTimeout})
	if res.StartErr != nil {
		return "", res.StartErr
	}
	if res.ExitCode != 0 {
		if strings.Contains(res.Stderr, "not a git repository") {
			return "", errNoRepo
		}
		// A repository git cannot open (its configuration unreadable, an
		// owner the user's safe.directory does not cover) is still one:
		// never taken for "no repository", which would run in it in place.
		return "", &repoRefused{fmt.Sprintf("git cannot open the repository of %s: %s", dir, strings.TrimSpace(res.Stderr))}
	}
	return strings.TrimSpace(res.Stdout), nil
}

// repoRefused is discover's answer for a repository git refuses to open.
type repoRefused struct{ msg string }

func (e *repoRefused) Error() string { return e.msg }
