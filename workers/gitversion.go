package workers

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"sync"

	"smith/source"
	"smith/workers/proc"
	"smith/workers/steprun"
)

// Smith's git runs nothing from the repository only when git reads the
// overrides Smith passes through GIT_CONFIG_COUNT/GIT_CONFIG_KEY_n/
// GIT_CONFIG_VALUE_n (core.hooksPath=/dev/null, the drivers' commands, ...:
// gitFixedConfig), which git reads from version 2.31 on. An older git
// ignores them without a word, and a repository's hooks and drivers would
// run. So no git command of Smith's runs before the git that PATH finds has
// said its version (`git version`, which reads no repository), and none
// runs on a git older than 2.31: the command fails with E_GIT_VERSION
// instead (CheckGit).

// MinGitVersion is the oldest git Smith runs its own git commands with.
const MinGitVersion = "2.31"

// minGit is MinGitVersion as numbers.
var minGit = [2]int{2, 31}

// gitVersionPattern reads `git version`'s output: "git version 2.39.5",
// "git version 2.30.1.windows.1", "git version 2.39.3 (Apple Git-146)".
var gitVersionPattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^git version (\d+)\.(\d+)(\.\d+)?`)
})

// gitVersions remembers, for the process's life, the version of the git
// each PATH finds: one `git version` per PATH, so a run pays for it once,
// at its first git command, and a run that runs no git pays nothing. Only
// an answer is kept: a git that could not be started is asked again (one
// installed meanwhile, by a long-lived smithvm serve). This is a cache of
// what the machine says, not state of a run.
var gitVersions struct {
	sync.Mutex
	m map[string]gitVersion
}

// A gitVersion is what `git version` said.
type gitVersion struct {
	text         string // its first line, e.g. "git version 2.39.5"
	major, minor int    // -1 when text has no version
}

// GitVersion returns the version line of the git that lookup's PATH
// finds ("git version 2.39.5"), and whether Smith runs with it (2.31 or
// newer). err is set when git cannot be run at all (not installed).
func GitVersion(ctx context.Context, lookup func(string) (string, bool)) (version string, ok bool, err error) {
	v, err := gitVersionOf(ctx, lookup)
	if err != nil {
		return "", false, err
	}
	return v.text, v.new(), nil
}

// new reports whether v is MinGitVersion or newer.
func (v gitVersion) new() bool {
	return v.major > minGit[0] || v.major == minGit[0] && v.minor >= minGit[1]
}

// gitVersionOf asks the git of lookup's PATH its version, once per PATH
// and process.
func gitVersionOf(ctx context.Context, lookup func(string) (string, bool)) (gitVersion, error) {
	var path string
	if lookup != nil {
		path, _ = lookup("PATH")
	}
	gitVersions.Lock()
	defer gitVersions.Unlock() // held while git answers: concurrent askers wait for its answer
	if v, ok := gitVersions.m[path]; ok {
		return v, nil
	}
	ctx = context.WithoutCancel(ctx)                       // as every git of Smith's: a stop does not cut it off
	env := steprun.BuildEnv(lookup, nil, nil, gitFixedEnv) // as every git command of Smith's
	res := proc.Run(ctx, proc.Spec{Argv: []string{"git", "version"}, Dir: os.TempDir(), Env: env, Timeout: gitTimeout})
	if res.StartErr != nil {
		return gitVersion{}, res.StartErr
	}
	v := parseGitVersion(firstLineOf(res.Stdout))
	if res.ExitCode != 0 || v.text == "" {
		v = gitVersion{text: fmt.Sprintf("git version: exit status %d, no version", res.ExitCode), major: -1, minor: -1}
	}
	if gitVersions.m == nil {
		gitVersions.m = map[string]gitVersion{}
	}
	gitVersions.m[path] = v
	return v, nil
}

// parseGitVersion reads the first line of `git version`'s output.
func parseGitVersion(line string) gitVersion {
	v := gitVersion{text: line, major: -1, minor: -1}
	if m := gitVersionPattern().FindStringSubmatch(line); m != nil {
		v.major, _ = strconv.Atoi(m[1])
		v.minor, _ = strconv.Atoi(m[2])
	}
	return v
}

// firstLineOf is s up to its first line break.
func firstLineOf(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' || s[i] == '\r' {
			return s[:i]
		}
	}
	return s
}

// CheckGit returns an E_GIT_VERSION error when the git that lookup's PATH
// finds is older than MinGitVersion (or says no version), and nil when it
// is new enough or cannot be run at all: that is for the git command
// about to run to report (and a workspace is then in no repository
// Smith can use).
func CheckGit(ctx context.Context, lookup func(string) (string, bool)) error {
	v, err := gitVersionOf(ctx, lookup)
	if err != nil || v.new() {
		return nil
	}
	return GitTooOld(v.text)
}

// GitTooOld is the E_GIT_VERSION error for a git whose `git version`
// said version.
func GitTooOld(version string) error {
	return &source.Error{Code: source.EGitVersion,
		Msg: fmt.Sprintf("the git on PATH says '%s', and Smith needs git %s or newer", version, MinGitVersion),
		Hint: "an older git ignores the settings (GIT_CONFIG_COUNT) through which Smith keeps a repository's hooks, filters and drivers from running, so Smith runs no git command with it: " +
			"install git " + MinGitVersion + " or newer (your system's package manager, or https://git-scm.com/downloads) or put a newer git earlier on PATH; smithvm doctor shows the version found"}
}
