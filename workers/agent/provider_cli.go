package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"smith/lang"
	"smith/source"
	"smith/workers/proc"
	"smith/workers/provider"
	"smith/workers/step"
	"smith/workers/steprun"
	"smith/workers/text"
)

// runCLI runs a provider's command once: its environment (the step's, the
// preset's facts, the provider entry's env and secrets), its config home
// under RUN_ROOT, then the process; then it reads the reply and classifies
// a failure from everything the CLI said (CONTRACT 5). sess is the session
// the call continues (session: continue; nil: none, or a new one).
func (r *Runner) runCLI(ctx context.Context, req *step.Request, p steprun.Paths, pv provider.Provider, sess *step.Session, prompt string, fromInput bool) callReply {
	env, home, overlay, serr := cliEnv(r, req, p, pv)
	defer overlay.close()
	if serr != nil {
		return callReply{exit: provider.ExitInvalid, err: serr}
	}
	pv.ConfigHome = home
	pv.DenyFiles = denyFiles(pv.CLI, home, req.Dirs.Workspace)
	config := readConfig(pv.CLI, home)
	// masked: the call masks more than the step (a key of the user's
	// configuration), so its recording must too.
	masked := false
	vals := settingsSecrets(pv.CLI, home)
	var keyVars []string
	if pv.CLI != nil && !pv.Isolated {
		// The model provider the user chose may read its key and headers
		// from variables of its own (codex's env_key, env_http_headers):
		// they pass, masked; credentials written in its table are masked.
		mp := pv.CLI.ModelProvider(config)
		pv.KeyVar = mp.KeyVar
		vals = append(vals, mp.Secrets...)
		for _, name := range mp.Vars() {
			if r.Lookup == nil {
				break
			}
			if v, ok := r.Lookup(name); ok && !slices.Contains(env, name+"="+v) {
				env = append(slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, name+"=") }), name+"="+v)
				vals = append(vals, v)
				keyVars = append(keyVars, name)
			}
		}
	}
	if len(vals) > 0 {
		more := *req
		more.Mask = req.Mask.With(vals...)
		req, masked = &more, true
	}
	var inv *invocation
	if pv.Own && len(req.CommandOverride) == 0 {
		call := provider.Call{Env: envMap(env), Isolated: pv.Isolated, Config: config, Continue: req.Continue}
		if sess != nil {
			call.Session = sess.ID
		}
		inv, serr = presetInvocation(req, p, pv, prompt, call)
	} else {
		inv, serr = buildInvocation(req, p, pv, prompt, fromInput)
	}
	defer inv.cleanup()
	if serr != nil {
		return callReply{exit: step.ExitNotRun, err: serr}
	}
	if p.Output != "" {
		// ${OUTPUT_FILE}'s directory exists before the CLI starts.
		if err := os.MkdirAll(filepath.Dir(p.Output), 0o755); err != nil {
			return callReply{exit: step.ExitNotRun, err: source.Errorf(source.EExec, "create the directory of output_file: %v", err)}
		}
	}
	spec, closeStdin, err := steprun.Spec(req, p, inv.argv, env, inv.stdin)
	if err != nil {
		return callReply{exit: step.ExitNotRun, err: source.Wrap(source.EExec, "input_file", err)}
	}
	defer closeStdin()
	if inv.stdinFile != nil {
		spec.Stdin = inv.stdinFile
	}
	if pv.CLI != nil && pv.CLI.StdoutFile {
		f, done, err := replyFile(p, req.Step)
		if err != nil {
			return callReply{exit: step.ExitNotRun, err: source.Errorf(source.EExec, "create the stdout file of step '%s': %v", req.Step, err)}
		}
		spec.StdoutFile = f
		defer done()
	}
	live := steprun.OpenLive(req, r.Now)
	defer live.Close()
	act := followLive(live, &spec, pv)
	pr := proc.Run(ctx, spec)
	act.finish()
	defer steprun.FlushStderr(p) // after stderrOf read the try's part
	if pr.StartErr != nil {
		if ctx.Err() != nil {
			return callReply{exit: step.ExitNotRun, err: source.Errorf(source.EInterrupted, "step '%s' was interrupted", req.Step)}
		}
		return callReply{exit: step.ExitNotFound, err: steprun.StartErr(inv.argv[0], pr.StartErr)}
	}
	rep := callReply{
		text:        pr.Stdout,
		exit:        pr.ExitCode,
		truncated:   pr.StdoutTruncated,
		spill:       pr.StdoutSpill,
		wroteOutput: inv.wroteOutput,
		stderr:      pr.Stderr,
		keyVars:     keyVars,
	}
	if masked {
		rep.mask = req.Mask
	}
	// whole is the file holding the whole (masked) stdout when it passed
	// the in-memory cap: the reply is read from it as a stream, and only
	// a reply that is the raw stdout itself is read whole into memory.
	whole := ""
	switch {
	case spec.StdoutFile != "":
		text, truncated, err := readStdoutFile(spec.StdoutFile, req.Mask, p.Spill)
		if err != nil {
			return callReply{exit: step.ExitNotRun, keyVars: keyVars, mask: rep.mask, err: source.Errorf(source.EExec, "read the stdout of step '%s': %v", req.Step, err)}
		}
		rep.text, rep.truncated = text, truncated
		if truncated && p.Spill != "" {
			// The whole reply is in the spill, as a piped one is.
			rep.spill, whole = p.Spill, p.Spill
		}
		if req.Live != nil {
			showStdout(req.Live, rep.text, whole) // -v: shown once the CLI is done
		}
	case pr.StdoutTruncated && pr.StdoutSpill != "":
		whole = pr.StdoutSpill
	}
	ours := pv.Isolated && home == isolatedHome(req, p, pv.Name)
	if ours && (pr.TimedOut || ctx.Err() != nil) && !pv.RawReply() {
		// Cut off: what the CLI saved of its session so far (gemini: the
		// prompt) is scrubbed as after a whole call.
		stdout, done := openStdout(rep.text, whole)
		id := provider.ReadReplyFrom(pv, permissionsOf(req), stdout, "", 0).Session
		done()
		scrubSessions(pv.CLI, home, id, req.Continue, req.Mask)
	}
	switch {
	case pr.TimedOut:
		rep.text = wholeStdout(rep.text, whole)
		rep.err = source.Errorf(source.ETimeout, "provider '%s' of step '%s' timed out after %s (the model server did not answer in time; raise timeout: or check the server)",
			pv.Name, req.Step, steprun.TimeoutOf(req))
		return rep
	case ctx.Err() != nil:
		rep.text = wholeStdout(rep.text, whole)
		rep.signal = lang.SigFailure
		rep.err = source.Errorf(source.EInterrupted, "step '%s' was interrupted", req.Step)
		return rep
	}
	if pv.RawReply() {
		rep.text = wholeStdout(rep.text, whole)
		return rep
	}
	stderr := pr.Stderr
	if pr.StderrTruncated && p.StderrFile() != "" {
		stderr = stderrOf(p.StderrFile(), pr.Stderr)
	}
	stdout, done := openStdout(rep.text, whole)
	out := provider.ReadReplyFrom(pv, permissionsOf(req), stdout, stderr, pr.ExitCode)
	decoded := false // out.Text was decoded from spans, masked
	if out.Spans != nil {
		// A reply too long to hold: decoded (and masked) into a file of
		// its own, its first MiB kept in memory.
		head, file, err := spillReply(req, p, stdout, out.Spans)
		if err != nil {
			done()
			return callReply{exit: step.ExitNotRun, keyVars: keyVars, mask: rep.mask, err: source.Errorf(source.EExec, "read the reply of step '%s': %v", req.Step, err)}
		}
		out.Text, rep.whole, decoded = head, file, true
		rep.truncated = rep.truncated || file != ""
	}
	done()
	if ours {
		scrubSessions(pv.CLI, home, out.Session, req.Continue, req.Mask)
	}
	if !out.Parsed || out.WholeText {
		rep.text = wholeStdout(rep.text, whole)
		out.Text = rep.text
	}
	if req.Continue {
		readSession(&rep, pv, sess, &out)
	}
	if out.Parsed {
		// A secret that JSON escaped is masked only once decoded (a
		// spilled reply was, as it was written).
		rep.text, rep.tokens, rep.cost = out.Text, out.Tokens, out.Cost
		if !decoded {
			rep.text = req.Mask.String(out.Text)
		}
	}
	rep.exit = out.Exit
	if out.Reason != "" {
		out.Reason = overlay.userPaths(out.Reason, home)
		rep.err = source.Errorf(source.EExec, "provider '%s' failed: %s", pv.Name, req.Mask.String(out.Reason))
	}
	return rep
}

// spillReply decodes spans of src, a reply too long to hold, masked, into a
// new file under RUN_ROOT/tmp (the caller removes it), and returns its first
// proc.DefaultMemCap bytes and the file; a reply no longer than that is
// returned whole, with no file.
func spillReply(req *step.Request, p steprun.Paths, src io.ReaderAt, spans []provider.Span) (string, string, error) {
	name, err := steprun.WriteTemp(p, req.Step+"-reply-*.txt", nil)
	if err != nil {
		return "", "", err
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		os.Remove(name)
		return "", "", err
	}
	head := &headBuffer{max: proc.DefaultMemCap}
	bw := bufio.NewWriterSize(io.MultiWriter(f, head), 64<<10)
	mw := req.Mask.Writer(bw)
	err = provider.DecodeSpans(src, spans, mw)
	if cerr := mw.Close(); err == nil {
		err = cerr
	}
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil || head.total <= int64(head.max) {
		os.Remove(name)
		return head.String(), "", err
	}
	return head.String(), name, nil
}

// A headBuffer keeps the first max bytes written to it.
type headBuffer struct {
	strings.Builder
	max   int
	total int64 // the bytes written
}

func (h *headBuffer) Write(b []byte) (int, error) {
	h.total += int64(len(b))
	if n := h.max - h.Len(); n > 0 {
		h.Builder.Write(b[:min(n, len(b))])
	}
	return len(b), nil
}

// wholeStdout is a CLI's whole stdout: text, the stdout captured in
// memory, or when it passed the cap the file whole holds it all in (text
// when that cannot be read). It is the reply itself.
func wholeStdout(text, whole string) string {
	if whole == "" {
		return text
	}
	b, err := os.ReadFile(whole)
	if err != nil {
		return text
	}
	return string(b)
}

// openStdout opens a CLI's stdout for reading its reply as a stream: the
// file whole when it holds it (text, the stdout captured in memory, when
// there is none or it cannot be read). done closes it.
func openStdout(text, whole string) (*io.SectionReader, func()) {
	if whole != "" {
		if f, err := os.Open(whole); err == nil {
			if st, err := f.Stat(); err == nil {
				return io.NewSectionReader(f, 0, st.Size()), func() { f.Close() }
			}
			f.Close()
		}
	}
	return io.NewSectionReader(strings.NewReader(text), 0, int64(len(text))), func() {}
}

// showStdout writes a CLI's whole stdout to w (-v), copied from the file
// whole when it holds it, text otherwise.
func showStdout(w io.Writer, text, whole string) {
	if whole != "" {
		if f, err := os.Open(whole); err == nil {
			defer f.Close()
			_, _ = io.Copy(w, f)
			return
		}
	}
	_, _ = io.WriteString(w, text)
}

// stderrTail is how much of the end of a CLI's stderr log the failure's
// classification reads when its stderr passed the in-memory cap: what it
// reads is at the end (the last line or paragraph, gemini's closing JSON
// error object and its "status:" line, a few KB), and the denials of tool
// calls are in the lines it prints around a call. As much as the cap of
// the captured head (proc.DefaultMemCap) bounds the whole at 2 MiB.
const stderrTail = proc.DefaultMemCap

// stderrOf is the stderr a failure is classified from when the CLI's
// stderr passed the in-memory cap: the whole log when it is no longer
// than head (its first bytes, captured) and stderrTail together; else
// head, a newline, and the log's last stderrTail bytes from the start of
// a line. (The log holds every try of the step, the last one at its end.)
func stderrOf(log, head string) string {
	f, err := os.Open(log)
	if err != nil {
		return head
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return head
	}
	if st.Size() <= int64(len(head))+stderrTail {
		b, err := io.ReadAll(f)
		if err != nil {
			return head
		}
		return string(b)
	}
	tail := make([]byte, stderrTail)
	n, err := f.ReadAt(tail, st.Size()-stderrTail)
	if err != nil && n < len(tail) {
		return head
	}
	if i := bytes.IndexByte(tail, '\n'); i >= 0 {
		tail = tail[i+1:]
	}
	return head + "\n" + string(tail)
}

// permissionsOf returns the step's permissions ("" = edit).
func permissionsOf(req *step.Request) string {
	if req.Permissions == "" {
		return provider.PermEdit
	}
	return req.Permissions
}

// cliEnv builds a provider's whole environment: the section 3.5 variables,
// env_allow, a preset's own variables from Smith's environment (CONTRACT
// 5), the step's secrets and the provider's, the preset's fixed variables,
// the document's and step's env, then the provider entry's env. It returns
// the preset's config home too: the user's own (~/.claude, or the home
// variable's folder), or with home: isolated RUN_ROOT/providers/<name>,
// created with its settings files.
func cliEnv(r *Runner, req *step.Request, p steprun.Paths, pv provider.Provider) (env []string, home string, overlay *overlayCall, serr *source.Error) {
	secrets := append(append([]step.EnvVar(nil), req.Secrets...), pv.Secrets...)
	allow := req.EnvAllow
	f := pv.CLI
	var vars []step.EnvVar
	if f != nil {
		own, plain := provider.PresetVars(pv.Name)
		allow = append(append(append([]string(nil), own...), plain...), req.EnvAllow...)
		vars = append(vars, f.Env...)
	}
	vars = append(vars, req.Env...)
	vars = append(vars, pv.Env...)
	if f == nil || f.Home == "" {
		return steprun.BuildEnv(r.Lookup, allow, secrets, vars), "", nil, nil
	}
	given := envMap(steprun.BuildEnv(r.Lookup, allow, secrets, vars))
	// A home the step's or the provider's env names (not one from Smith's
	// own environment) is the workflow's choice: used as it is.
	chosen := ""
	for _, v := range append(append([]step.EnvVar(nil), req.Env...), pv.Env...) {
		if v.Name == f.Home {
			chosen = v.Value
		}
	}
	if !pv.Isolated {
		home = f.ConfigHome(given)
		if pv.Own && f.LoginNeeded(readConfig(f, home)) && !f.HasUserKey(given) && LoginFile(f, home) == "" {
			// codex would send unauthenticated requests for 13-30 s
			// (OPENAI_API_KEY, which its built-in provider does not
			// read, or not).
			return nil, home, nil, source.Errorf(source.EExec, "provider '%s' failed: the CLI has no usable credentials: no login and no key%s; %s, or set %s (%s's configuration home: %s)",
				pv.Name, f.UnreadKey(given), f.Login, f.UserKeyVar(), pv.Name, home)
		}
		if f.Overlay != nil && chosen == "" {
			ov, err := overlayHome(req, p, f, given)
			if err != nil {
				return nil, home, ov, source.Errorf(source.EExec, "prepare the settings of provider '%s': %v", pv.Name, err)
			}
			vars = append([]step.EnvVar{{Name: f.Home, Value: ov.root}}, vars...)
			return steprun.BuildEnv(r.Lookup, allow, secrets, vars), home, ov, nil
		}
		return steprun.BuildEnv(r.Lookup, allow, secrets, vars), home, nil, nil
	}
	// home: isolated: a home of Smith's, unless the step's or the
	// provider's env names one (a home variable from Smith's own
	// environment does not count: isolated means not the user's).
	home = chosen
	ours := home == ""
	if ours {
		home = isolatedHome(req, p, pv.Name)
		vars = append([]step.EnvVar{{Name: f.Home, Value: home}}, vars...)
		allow = slices.DeleteFunc(slices.Clone(allow), func(n string) bool { return n == f.Home })
	}
	for rel, content := range f.Files {
		if !ours {
			break // a home the workflow chose keeps its own settings
		}
		path := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, "", nil, source.Errorf(source.EExec, "create the config home of provider '%s': %v", pv.Name, err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			return nil, "", nil, source.Errorf(source.EExec, "write the settings of provider '%s': %v", pv.Name, err)
		}
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, "", nil, source.Errorf(source.EExec, "create the config home of provider '%s': %v", pv.Name, err)
	}
	if ours && pv.Own && f.KeyNeeded && !f.HasKey(given) {
		return nil, "", nil, source.Errorf(source.EExec, "provider '%s' failed: %s is not set, and home: isolated gives the CLI a fresh configuration home (%s) with no login; set %s in Smith's environment, or remove home: isolated to use your own login",
			pv.Name, f.KeyVar, home, f.KeyVar)
	}
	if f.TmpInHome {
		tmp := filepath.Join(home, "tmp")
		if err := os.MkdirAll(tmp, 0o700); err != nil {
			return nil, "", nil, source.Errorf(source.EExec, "create the config home of provider '%s': %v", pv.Name, err)
		}
		vars = append([]step.EnvVar{{Name: "TMPDIR", Value: tmp}}, vars...)
	}
	return steprun.BuildEnv(r.Lookup, allow, secrets, vars), home, nil, nil
}

// LoginFile returns the first of the CLI's login files (its own login:
// ~/.claude/.credentials.json, ~/.codex/auth.json, ...) in its
// configuration home, "" for none.
func LoginFile(f *provider.CLI, home string) string {
	for _, name := range f.LoginFiles {
		p := filepath.Join(home, name)
		if st, err := os.Stat(p); err == nil && st.Size() > 0 {
			return p
		}
	}
	return ""
}

// denyFiles returns the CLI's settings files (DenySettings: in its config
// home, or after "./" in the working directory cwd) that hold deny rules
// (a non-empty permissions.deny), in that order. A file that is missing or
// not JSON holds none.
func denyFiles(f *provider.CLI, home, cwd string) []string {
	if f == nil {
		return nil
	}
	var out []string
	for _, rel := range f.DenySettings {
		dir := home
		if r, ok := strings.CutPrefix(rel, "./"); ok {
			dir, rel = cwd, r
		}
		if dir == "" {
			continue
		}
		path := filepath.Join(dir, rel)
		var doc struct {
			Permissions struct {
				Deny []any `json:"deny"`
			} `json:"permissions"`
		}
		if b, err := os.ReadFile(path); err == nil && json.Unmarshal(stripJSONComments(b), &doc) == nil && len(doc.Permissions.Deny) > 0 {
			out = append(out, path)
		}
	}
	return out
}

// settingsSecrets returns the values that the env block of the CLI's
// settings file in its config home (claude: settings.json) gives its own
// masked variables (a key, a token, an endpoint), at least
// provider.MinMasked bytes long: the CLI and everything it starts get
// them as if from Smith's environment, so they are masked the same way.
// A file that is missing or not JSON gives none (the CLI says what is
// wrong with it).
//
// The NAME=value lines of the CLI's .env files (DotEnv: gemini's
// ~/.gemini/.env and ~/.env) count the same way.
func settingsSecrets(f *provider.CLI, home string) []string {
	if f == nil || home == "" {
		return nil
	}
	vals := map[string]string{}
	if f.SettingsEnv != "" {
		var doc struct {
			Env map[string]any `json:"env"`
		}
		if b, err := os.ReadFile(filepath.Join(home, f.SettingsEnv)); err == nil && json.Unmarshal(stripJSONComments(b), &doc) == nil {
			for k, v := range doc.Env {
				if s, ok := v.(string); ok {
					vals[k] = s
				}
			}
		}
	}
	for _, rel := range f.DotEnv {
		if b, err := os.ReadFile(filepath.Join(home, rel)); err == nil {
			for k, v := range dotEnv(string(b)) {
				vals[k] = v
			}
		}
	}
	var out []string
	for _, name := range f.Vars {
		if v := vals[name]; len(v) >= provider.MinMasked {
			out = append(out, v)
		}
	}
	return out
}

// dotEnv reads the NAME=value lines of a .env file: "export " before the
// name, a value in single or double quotes, or unquoted up to a " #"
// comment; blank lines and comments skipped.
func dotEnv(text string) map[string]string {
	out := map[string]string{}
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		name, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch {
		case len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && strings.IndexByte(v[1:], v[0]) >= 0:
			v = v[1 : 1+strings.IndexByte(v[1:], v[0])]
		default:
			if i := strings.Index(v, " #"); i >= 0 {
				v = strings.TrimSpace(v[:i])
			}
		}
		out[strings.TrimSpace(name)] = v
	}
	return out
}

// readConfig reads the CLI's configuration file in its config home (codex:
// config.toml), for the preset to read what the user chose; nil when there
// is none. Smith never writes it.
func readConfig(f *provider.CLI, home string) []byte {
	if f == nil || f.ConfigFile == "" || home == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(home, f.ConfigFile))
	if err != nil {
		return nil
	}
	return b
}

// envMap turns "K=V" strings into a map.
func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// presetInvocation is a preset's own command: the prompt on stdin (never in
// argv, so any prompt, whatever it starts with, arrives whole), the model
// and permission flags from the table.
func presetInvocation(req *step.Request, p steprun.Paths, pv provider.Provider, prompt string, call provider.Call) (*invocation, *source.Error) {
	inv := &invocation{}
	f := pv.CLI
	perms := permissionsOf(req)
	if _, ok := f.Perms[perms]; !ok {
		return inv, source.Errorf(source.EExec, "permissions '%s' of step '%s' is not read, edit or full", perms, req.Step)
	}
	if f.MaxPrompt > 0 && len(prompt) > f.MaxPrompt {
		return inv, source.Errorf(source.EExec, "the prompt of step '%s' is %d bytes; provider '%s' reads at most %d bytes from stdin (it would cut the rest)",
			req.Step, len(prompt), pv.Name, f.MaxPrompt)
	}
	if serr := inv.promptStdin(req, p, prompt); serr != nil {
		return inv, serr
	}
	if perms == provider.PermRead && f.ReadPolicy != "" {
		// read reads and answers only, whatever the user's settings let
		// the CLI do without asking.
		pol, err := steprun.WriteTemp(p, req.Step+"-policy-*.toml", []byte(f.ReadPolicy))
		if err != nil {
			return inv, source.Errorf(source.EExec, "write the read policy of provider '%s': %v", pv.Name, err)
		}
		inv.policy, call.Policy = pol, pol
	}
	model, _ := providerVars(req, pv, p, "", "").Get("model")
	inv.argv = f.Command(model, perms, call)
	return inv, nil
}

// A liveFollower feeds one call's streams to the run's live log (CONTRACT
// 13): stderr as lines; a preset's stdout, a stream of JSON events, as the
// agent's activity (ActivityReader); any other provider's stdout as lines.
// A CLI whose stdout goes to a file (StdoutFile) is followed by reading the
// file as it grows.
type liveFollower struct {
	live       *steprun.Live
	act        *provider.ActivityReader
	stop, done chan struct{}
}

// followPoll is how often a stdout file is read while the CLI runs.
const followPoll = 200 * time.Millisecond

// followLive sets spec up to feed live and returns the follower, whose
// finish must be called once the process is done.
func followLive(live *steprun.Live, spec *proc.Spec, pv provider.Provider) *liveFollower {
	f := &liveFollower{live: live}
	if live == nil {
		return f
	}
	f.act = provider.NewActivityReader(pv, spec.Dir)
	if f.act == nil {
		spec.Lines = live.Lines
		return f
	}
	spec.Lines = func(s proc.Stream, lines []byte) bool {
		if s == proc.Stderr {
			return live.Lines(s, lines)
		}
		proc.EachLine(lines, f.line) // only stdout's goroutine
		return live.Wants()          // no more reading once the live log is cut
	}
	if spec.StdoutFile != "" {
		f.stop, f.done = make(chan struct{}), make(chan struct{})
		go f.follow(spec.StdoutFile)
	}
	return f
}

// line reads one line of the CLI's stream.
func (f *liveFollower) line(line []byte) {
	for _, a := range f.act.Line(line) {
		f.live.Add(a.Kind, a.Text)
	}
}

// follow reads the file path as it grows, line by line, until stop; then
// it reads the rest.
func (f *liveFollower) follow(path string) {
	defer close(f.done)
	var (
		off  int64
		held []byte
		buf  = make([]byte, 64<<10)
	)
	read := func() {
		if !f.live.Wants() {
			return // the live log is cut: the rest is not read
		}
		file, err := os.Open(path)
		if err != nil {
			return
		}
		defer file.Close()
		for f.live.Wants() {
			n, err := file.ReadAt(buf, off)
			off += int64(n)
			held = append(held, buf[:n]...)
			for {
				i := bytes.IndexByte(held, '\n')
				if i < 0 {
					break
				}
				f.line(held[:i])
				held = held[i+1:]
			}
			if len(held) > 1<<20 {
				held = held[:0] // no line of activity is that long: skip it
			}
			if err != nil || n == 0 {
				return
			}
		}
	}
	t := time.NewTicker(followPoll)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			read()
			if len(held) > 0 {
				f.line(held)
			}
			return
		case <-t.C:
			read()
		}
	}
}

// finish waits for the follower and adds what the stream left unfinished.
func (f *liveFollower) finish() {
	if f.stop != nil {
		close(f.stop)
		<-f.done
	}
	if f.act != nil {
		for _, a := range f.act.Flush() {
			f.live.Add(a.Kind, a.Text)
		}
	}
}

// readStdoutFile reads the stdout file of a CLI (StdoutFile) through
// mask as proc captures a step's piped stdout (CONTRACT 3.5): the first
// proc.DefaultMemCap bytes, and a longer one spilled, whole, to spill
// (RUN_ROOT/logs/<Step>-stdout.log).
func readStdoutFile(path string, mask *text.Masker, spill string) (string, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	return proc.Capture(f, mask, 0, spill)
}

// replyFile creates the file a CLI writes its stdout to (StdoutFile) and
// returns the path to give it and the function that removes it. The CLI's
// reply is raw, not yet masked: the file has a name under RUN_ROOT/tmp
// only for the moment it takes to open it, then is known by its open
// descriptor (/proc/self/fd/N), so that a smithvm killed while the CLI
// runs leaves no reply in the run folder (resume's clean-up removes one
// killed in that moment). Where /proc is missing the named file is used.
func replyFile(p steprun.Paths, stepName string) (string, func(), error) {
	name, err := steprun.WriteTemp(p, stepName+"-stdout-*.txt", nil)
	if err != nil {
		return "", nil, err
	}
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		os.Remove(name)
		return "", nil, err
	}
	fd := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	if _, err := os.Stat(fd); err != nil {
		f.Close()
		return name, func() { os.Remove(name) }, nil
	}
	if err := os.Remove(name); err != nil {
		f.Close()
		return "", nil, err
	}
	return fd, func() { f.Close() }, nil
}
