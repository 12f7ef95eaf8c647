// Package doctor answers "is my setup right?" before a run spends time
// (smithvm doctor, CONTRACT 5): for each preset, whether its CLI is on PATH
// and at which version, whether it has a login or a key (checked the CLI's
// own way, with no model request), and, on request, one tiny real call
// through the preset. It reads the presets' facts from workers/provider and
// runs processes only through proc.Run and the agent runner.
package doctor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"smith/isa"
	"smith/workers/agent"
	"smith/workers/confine"
	"smith/workers/proc"
	"smith/workers/provider"
	"smith/workers/step"
	"smith/workers/steprun"
	"smith/workers/text"
)

// A Target is one provider to check: a preset's name, and whether the
// workflow gives it an isolated home.
type Target struct {
	Name     string
	Isolated bool
}

// A Line is the outcome of one check: one line of output, with what to do
// when it failed.
type Line struct {
	OK     bool
	Preset string
	Check  string // installed, login, ping
	Text   string
}

func (l Line) String() string {
	mark := "ok  "
	if !l.OK {
		mark = "FAIL"
	}
	return fmt.Sprintf("%s  %-6s  %-9s  %s", mark, l.Preset, l.Check, l.Text)
}

// An Env is what the checks take from their surroundings.
type Env struct {
	Lookup func(string) (string, bool) // Smith's environment
	// Dir is a scratch folder (a ping's workspace and run folder).
	Dir string
}

// versionPattern finds a version number in a CLI's --version output.
var versionPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\d+\.\d+\.\d+`) })

// messagePattern finds the message of a JSON error object.
var messagePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`"message"\s*:\s*"([^"]+)"`) })

// Check runs the checks of one target: installed, then login, then (with
// ping) one real request. A check that cannot run because an earlier one
// failed is not printed.
func Check(ctx context.Context, e Env, t Target, ping bool) []Line {
	f, ok := provider.CLIOf(t.Name)
	if !ok {
		return nil
	}
	env := presetEnv(e, f, t)
	home := f.ConfigHome(envMap(env))
	env, done, err := checkHome(e, f, t, env)
	defer done()
	if err != nil {
		return []Line{{Preset: t.Name, Check: "installed", Text: "could not make a scratch folder: " + err.Error()}}
	}
	var out []Line
	inst := installed(ctx, e, f, t, env)
	out = append(out, inst)
	if !inst.OK {
		return out
	}
	login := loggedIn(ctx, e, f, t, env, home)
	out = append(out, login)
	if ping && login.OK {
		out = append(out, pingOnce(ctx, e, t))
	}
	return out
}

// checkHome gives the checks of a CLI that writes into its configuration
// folder at every start, even for --version (gemini: its project registry,
// and a temporary file of it that it leaves behind), the home a step
// gives it: in the user's home an overlay of it (agent.OverlayHome), with
// home: isolated an empty folder; under the scratch folder, removed by
// done. The user's folder is only read. Other CLIs keep env.
func checkHome(e Env, f *provider.CLI, t Target, env []string) ([]string, func(), error) {
	if f.Overlay == nil || e.Dir == "" {
		return env, func() {}, nil
	}
	var (
		root string
		done = func() {}
		err  error
	)
	if t.Isolated {
		root, err = os.MkdirTemp(e.Dir, t.Name+"-home-*")
	} else {
		root, done, err = agent.OverlayHome(filepath.Join(e.Dir, "overlays"), f, envMap(env))
	}
	if err != nil {
		return env, done, err
	}
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, f.Home+"=") })
	return append(out, f.Home+"="+root), done, nil
}

// presetEnv is the environment the preset's processes get: the section 3.5
// variables and the preset's own, and its fixed ones.
func presetEnv(e Env, f *provider.CLI, t Target) []string {
	own, plain := provider.PresetVars(t.Name)
	return steprun.BuildEnv(e.Lookup, append(append([]string(nil), own...), plain...), nil, f.Env)
}

func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// run runs argv with env (20 s at most) and returns its output.
func run(ctx context.Context, argv, env []string) proc.Result {
	return proc.Run(ctx, proc.Spec{Argv: argv, Env: env, Timeout: 20 * time.Second, KillGrace: time.Second})
}

// installed: the CLI is on PATH and says its version.
func installed(ctx context.Context, e Env, f *provider.CLI, t Target, env []string) Line {
	l := Line{Preset: t.Name, Check: "installed"}
	exe := f.Program()
	res := run(ctx, []string{exe, "--version"}, env)
	if res.StartErr != nil {
		l.Text = exe + " is not on PATH" + strings.TrimPrefix(provider.InstallHint(exe), ": it is not on PATH")
		return l
	}
	path := LookPath(exe, envMap(env)["PATH"])
	v := versionPattern().FindString(res.Stdout + res.Stderr)
	if res.ExitCode != 0 || v == "" {
		l.Text = fmt.Sprintf("%s --version failed (exit %d): %s; reinstall it (%s)", path, res.ExitCode, firstLine(res.Stderr+res.Stdout), strings.TrimPrefix(provider.InstallHint(exe), ": it is not on PATH; "))
		return l
	}
	l.OK = true
	if v == f.Tested {
		l.Text = fmt.Sprintf("%s, version %s (the version the presets were tested with)", path, v)
	} else {
		l.Text = fmt.Sprintf("%s, version %s (the presets were tested with %s; it will likely work, and if it does not, install %s)", path, v, f.Tested, f.Tested)
	}
	return l
}

// LookPath finds exe in path, the value of a PATH, for a line of the
// doctor's to show where it is (exe itself when it is not there).
func LookPath(exe, path string) string {
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue // as a step's command is looked up (empty and relative entries are not)
		}
		p := filepath.Join(dir, exe)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return exe
}

// loggedIn: a key in the environment, or the CLI's own login.
// home is the configuration home the CLI's user has (env may give the
// CLI an overlay of it, checkHome).
func loggedIn(ctx context.Context, e Env, f *provider.CLI, t Target, env []string, home string) Line {
	l := Line{Preset: t.Name, Check: "login"}
	vars := envMap(env)
	// status is the CLI's own login check, run once: first for what it
	// says of the configuration file (a key of the user's is no use when
	// the CLI cannot load the file that names its server).
	var status *proc.Result
	if f.ConfigFile != "" && !t.Isolated {
		file := filepath.Join(home, f.ConfigFile)
		config, _ := os.ReadFile(file)
		if err := f.ConfigError(config); err != nil {
			l.Text = fmt.Sprintf("%s is not valid: %s; fix it (%s reads it at every start)", file, firstLine(err.Error()), t.Name)
			return l
		}
		if argv := f.LoginStatus; len(argv) > 0 && len(config) > 0 {
			res := run(ctx, argv, env)
			status = &res
			if f.ConfigBroken(res.Stdout + "\n" + res.Stderr) {
				l.Text = fmt.Sprintf("%s cannot load its configuration (%s: %q); fix %s (%s reads it at every start)",
					t.Name, strings.Join(argv, " "), statusLine(res.Stdout+"\n"+res.Stderr), file, t.Name)
				return l
			}
		}
	}
	// A CLI whose own check is a check of its whole auth setup (gemini:
	// run with no prompt, it stops before any request) is asked even when
	// a key is set: its settings may still refuse it.
	if name := f.CredentialIn(vars); name != "" && (t.Isolated || f.LoginOKExit == 0) {
		l.OK, l.Text = true, name+" is set"
		return l
	}
	if t.Isolated {
		// Only a key counts in a home of Smith's, and the user's
		// configuration file is not read there.
		if f.HasKey(vars) {
			l.OK, l.Text = true, f.KeyVar+" is set"
			return l
		}
		l.Text = fmt.Sprintf("no key: home: isolated gives %s a fresh configuration home with no login; set %s in Smith's environment (or remove home: isolated to use your login)", t.Name, f.KeyVar)
		return l
	}
	config, _ := os.ReadFile(filepath.Join(home, f.ConfigFile))
	// The model provider of the user's reads its key from a variable
	// (env_key), and may take headers from others (env_http_headers: a
	// gateway's team token): codex sends no such header for a variable that
	// is not set, and the server refuses the request as with no key.
	file := filepath.Join(home, f.ConfigFile)
	var problems []string
	mp := f.ModelProvider(config)
	name := mp.KeyVar
	if v, _ := e.Lookup(name); name != "" && v == "" {
		problems = append(problems, fmt.Sprintf("%s is not set: the model provider chosen in %s reads its key from it; set it", name, file))
	}
	for _, hv := range mp.HeaderVars {
		if v, _ := e.Lookup(hv[1]); v == "" {
			problems = append(problems, fmt.Sprintf("%s is not set: the model provider chosen in %s sends it as its header %s (env_http_headers), and %s sends no such header without it; set it",
				hv[1], file, hv[0], t.Name))
		}
	}
	switch {
	case len(problems) > 0:
		l.Text = strings.Join(problems, "; ")
		return l
	case name != "":
		l.OK, l.Text = true, fmt.Sprintf("%s (the key of the model provider chosen in %s) is set", name, file)
		if hs := mp.HeaderVars; len(hs) > 0 {
			var vars []string
			for _, hv := range hs {
				vars = append(vars, hv[1])
			}
			l.Text += fmt.Sprintf(", as are the variables of its headers (%s)", strings.Join(vars, ", "))
		}
		return l
	}
	if argv := f.LoginStatus; len(argv) > 0 {
		if status == nil {
			res := run(ctx, argv, env)
			status = &res
		}
		res := *status
		said := statusLine(agent.UserPaths(res.Stdout+"\n"+res.Stderr, vars[f.Home], f, home))
		if res.StartErr == nil && res.ExitCode == f.LoginOKExit && !f.NotLoggedIn(said) {
			l.OK, l.Text = true, fmt.Sprintf("logged in (%s: %q)", strings.Join(argv[1:], " "), said)
			if f.LoginOKExit != 0 {
				l.Text = fmt.Sprintf("ready: %s checked its own auth with no prompt and stopped before any model request (exit %d)", t.Name, res.ExitCode)
			}
			return l
		}
		fix := ""
		if h := f.AuthFix(said); h != "" {
			fix = "; " + h
		}
		l.Text = fmt.Sprintf("not logged in (%s: %q)%s; %s, or set %s%s (%s's configuration home: %s)", strings.Join(argv, " "), said, f.UnreadKey(vars), f.Login, f.UserKeyVar(), fix, t.Name, home)
		return l
	}
	if file := agent.LoginFile(f, home); file != "" {
		l.OK, l.Text = true, "logged in ("+file+")"
		return l
	}
	l.Text = fmt.Sprintf("no login and no key%s; %s, or set %s (%s's configuration home: %s)", f.UnreadKey(vars), f.Login, f.UserKeyVar(), t.Name, home)
	return l
}

// PingPrompt is the one tiny request of --ping (smithvm doctor --help
// quotes it).
const PingPrompt = "Reply with the single word: pong"

// pingOnce sends one tiny request through the preset, as a step would.
func pingOnce(ctx context.Context, e Env, t Target) Line {
	l := Line{Preset: t.Name, Check: "ping"}
	base := filepath.Join(e.Dir, t.Name)
	dirs, err := confine.New(base)
	if err == nil {
		err = os.MkdirAll(dirs.Workspace, 0o755)
	}
	if err != nil {
		l.Text = "could not make a scratch folder: " + err.Error()
		return l
	}
	masked := provider.AllVars().Values(e.Lookup)
	req := &step.Request{
		RunID: "doctor", Step: "Ping", Attempt: 1, Kind: isa.KindProvider,
		Providers: []string{t.Name}, Prompt: PingPrompt, Permissions: provider.PermRead,
		Timeout: 120 * time.Second, Attempts: 1,
		Dirs: dirs, RunRoot: filepath.Join(base, ".orchestrator", "runs", "doctor"),
		Mask: text.NewMasker(masked),
	}
	if t.Isolated {
		req.ProviderDefs = []provider.Def{{Name: t.Name, Isolated: true}}
	}
	if err := os.MkdirAll(req.RunRoot, 0o755); err != nil {
		l.Text = "could not make a scratch folder: " + err.Error()
		return l
	}
	start := time.Now()
	r := agent.Runner{Env: steprun.Env{Lookup: e.Lookup}}
	res := r.Run(ctx, req)
	took := time.Since(start).Seconds()
	if res.ExitCode != 0 {
		reason := fmt.Sprintf("exit code %d", res.ExitCode)
		if res.Err != nil {
			reason = firstLine(res.Err.Error())
		}
		l.Text = fmt.Sprintf("the request failed after %.1fs: %s", took, reason)
		return l
	}
	l.OK = true
	l.Text = fmt.Sprintf("replied %q, %d tokens, in %.1fs", cut(strings.TrimSpace(res.Output), 60), res.Tokens, took)
	return l
}

// statusLine is the line of a login status command's output that says
// something about the login (the last one otherwise), skipping warnings.
func statusLine(s string) string {
	if m := messagePattern().FindStringSubmatch(s); m != nil {
		return cut(m[1], 200) // an error object's message (gemini's JSON)
	}
	last := ""
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "WARNING") {
			continue
		}
		if l := strings.ToLower(line); strings.Contains(l, "logged in") || strings.Contains(l, "login") {
			return cut(line, 200)
		}
		last = line
	}
	return cut(last, 200)
}

func firstLine(s string) string {
	for line := range strings.SplitSeq(strings.TrimSpace(s), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return cut(line, 200)
		}
	}
	return ""
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
