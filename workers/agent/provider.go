// Package agent runs provider steps (Runner.Run): the prompt, the call of a
// preset's or a workflow's own CLI or of the mock, retries and fallbacks,
// --record and --replay. It must never import workers or the VM, start a
// process but through proc.Run (steprun.Spec), take a path from a user or a
// model without confine, or write Smith's own files but through
// confine.WriteFileAtomic.
package agent

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"smith/lang"
	"smith/source"
	"smith/workers/proc"
	"smith/workers/provider"
	"smith/workers/step"
	"smith/workers/steprun"
	"smith/workers/text"
)

// Prompt transports (prompt_transport.mode).
const (
	transportArgv  = "argv"
	transportStdin = "stdin"
	transportFile  = "temp_file"
)

// A callReply is what one provider call produced, before the output capture. It
// is also what record/replay stores.
type callReply struct {
	text      string // the whole reply (masked): the model's text, or the raw stdout; its first MiB when whole is set
	exit      int
	signal    string // "" = from exit
	tokens    int
	cost      float64 // US dollars, where the CLI reports it
	err       *source.Error
	truncated bool   // the raw stdout (or the reply) passed the in-memory cap
	spill     string // its spill file
	// whole, when set, is a file under RUN_ROOT/tmp holding the whole
	// (masked) reply, which was too long to hold: text is its first MiB.
	// callProvider removes it.
	whole       string
	wroteOutput bool   // the CLI wrote output_file itself (${OUTPUT_FILE})
	stderr      string // the CLI's stderr (masked), not recorded
	// files are the changes the call made in its working directory
	// (recorded with --record, applied by --replay).
	files []FileChange
	// session is the id of the session the reply came from (session:
	// continue), usage the CLI's running token total of it (codex).
	session string
	usage   int
	// keyVars are the variables of keys the call passed beyond the
	// presets' (codex's env_key, env_http_headers) (step.Result.KeyVars);
	// mask, when set, is the step's masker with the values of the user's
	// configuration added (those keys, the keys of their settings), which
	// everything written of the call (its recording and patch) goes
	// through.
	keyVars []string
	mask    *text.Masker
}

// A Runner runs provider steps: the environment they run in, and
// where their replies are recorded (--record) or replayed from (--replay).
type Runner struct {
	steprun.Env
	Record string // --record DIR ("" = off)
	Replay string // --replay DIR ("" = off)

	// recording holds, per working directory, the lock a recorded call
	// holds from its snapshot before to its snapshot after, so that the
	// calls of parallel threads sharing a directory (a run without
	// isolation) are recorded one at a time and each recording's file
	// changes are its own call's, not another thread's too.
	recording sync.Map // working directory -> *sync.Mutex
}

// Run runs a provider step: confine the paths, wait, check
// depends_on, assemble the prompt, then call each provider in turn (each with
// its own retries) until one answers with something other than a retryable
// failure (exit 1 or 124).
func (r *Runner) Run(ctx context.Context, req *step.Request) step.Result {
	p, serr := steprun.Prepare(req)
	if serr != nil {
		return step.Failed(step.ExitNotRun, serr)
	}
	if len(req.Providers) == 0 {
		return step.Failed(step.ExitNotRun, source.Errorf(source.EUnknownProv, "step '%s' names no provider", req.Step))
	}
	provs := make([]provider.Provider, 0, len(req.Providers))
	for _, name := range req.Providers {
		pv, ok := provider.Lookup(req.ProviderDefs, name)
		if !ok {
			return step.Failed(step.ExitNotRun, source.Errorf(source.EUnknownProv, "provider '%s' is neither a built-in preset nor a key of providers%s",
				name, source.DidYouMean(name, provider.Names(req.ProviderDefs))))
		}
		provs = append(provs, pv)
	}
	files, res, ok := r.Preconditions(ctx, req, p)
	if !ok {
		return res
	}
	prompt, fromInput, serr := assemblePrompt(req, p, files)
	if serr != nil {
		return step.Failed(step.ExitNotRun, serr)
	}
	tries := 0
	provs = sessionOrder(req, provs)
	for i, pv := range provs {
		sess := sessionOn(req, pv.Name)
		res = r.Retry(ctx, req, tries, r.Replay != "", func(n int) step.Result {
			return r.callProvider(ctx, req, p, pv, sess, prompt, fromInput, n)
		})
		tries = res.Attempts
		res.Provider = pv.Name
		if !steprun.Retryable(res.ExitCode) || ctx.Err() != nil || i == len(provs)-1 {
			break
		}
		if req.OnFallback != nil {
			req.OnFallback(pv.Name, provs[i+1].Name, strings.TrimPrefix(failureReason(res), "provider '"+pv.Name+"' failed: "))
		}
	}
	return res
}

// failureReason is the one-line reason of a failed result for the console:
// its error's message, else its exit code.
func failureReason(res step.Result) string {
	if res.Err != nil {
		return firstLine(res.Err.Error())
	}
	if res.ExitCode == proc.ExitTimeout {
		return "timed out"
	}
	return fmt.Sprintf("exit code %d", res.ExitCode)
}

// assemblePrompt returns the prompt: Prompt, else the VM's assembled prompt
// (Prompted), else the prompt_file's content; then, when the step has an
// input_file, an empty line and the file's content (the whole prompt when
// there is nothing before it), so both reach the model (CONTRACT 5;
// fromInput: the file is in the prompt, not on stdin); then the depends_on
// injection.
func assemblePrompt(req *step.Request, p steprun.Paths, files []string) (prompt string, fromInput bool, serr *source.Error) {
	switch {
	case req.Prompt != "":
		prompt = req.Prompt
	case req.Prompted != "":
		prompt = req.Prompted
	case p.Prompt != "":
		if prompt, serr = steprun.ReadIntoPrompt(req, p.Prompt, "prompt_file", req.PromptFile, 0); serr != nil {
			return "", false, serr
		}
	}
	if p.Input != "" {
		s, serr := steprun.ReadIntoPrompt(req, p.Input, "input_file", req.InputFile, len(prompt))
		if serr != nil {
			return "", false, serr
		}
		prompt, fromInput = joinParagraphs(prompt, s), true
	}
	prompt, serr = steprun.InjectDeps(req, files, prompt)
	if serr != nil {
		return "", false, serr
	}
	prompt = joinParagraphs(prompt, req.Feedback)
	instr := req.AgentInstructions
	if req.AgentInstructionsFile != "" {
		abs, err := req.Dirs.Resolve(req.AgentInstructionsFile)
		if err != nil {
			return "", false, steprun.FileErr("instructions_file", req.AgentInstructionsFile, err)
		}
		if instr, serr = steprun.ReadIntoPrompt(req, abs, "instructions_file", req.AgentInstructionsFile, len(prompt)); serr != nil {
			return "", false, serr
		}
	}
	return joinParagraphs(instr, prompt), fromInput, nil
}

// joinParagraphs joins a and b with an empty line between them; an empty
// one is left out.
func joinParagraphs(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return strings.TrimRight(a, "\n") + "\n\n" + b
}

// callProvider makes one provider call (try n), continuing sess when the
// step's agent continues its sessions (nil: a new one): from the replay
// directory, the mock, or the CLI; records it when recording; then builds
// the Result.
func (r *Runner) callProvider(ctx context.Context, req *step.Request, p steprun.Paths, pv provider.Provider, sess *step.Session, prompt string, fromInput bool, n int) step.Result {
	call := callID(req, pv.Name, n)
	if serr := cannotContinue(req, pv); serr != nil {
		return finishReply(req, p, callReply{exit: provider.ExitInvalid, err: serr}, pv.Name, sess)
	}
	if r.Replay != "" {
		rep := r.replay(req, prompt, call, sess)
		return finishReply(req, p, rep, pv.Name, sess)
	}
	start := r.Now()
	var before snapshot
	var snapErr error
	if r.Record != "" {
		mu, _ := r.recording.LoadOrStore(req.Dirs.Workspace, new(sync.Mutex))
		mu.(*sync.Mutex).Lock()
		defer mu.(*sync.Mutex).Unlock()
		before, snapErr = r.snapshotBefore(req, call)
	}
	var rep callReply
	if pv.Mock {
		rep = r.runMock(req, pv, sess, prompt, call)
	} else {
		rep = r.runCLI(ctx, req, p, pv, sess, prompt, fromInput)
	}
	if rep.whole != "" {
		defer os.Remove(rep.whole) // once finishReply has read it
	}
	if rep.mask != nil {
		// The key of the user's model provider is masked in the
		// recording and its patch too (CONTRACT 5.2).
		masked := *req
		masked.Mask = rep.mask
		req = &masked
	}
	if r.Record != "" && rep.err != nil && rep.err.Code == source.EInterrupted {
		// Cut off by Ctrl-C or stop: not a call to replay. The resumed
		// run repeats it, and that call is recorded, with its changes
		// counted from the snapshot taken before this one.
		return finishReply(req, p, rep, pv.Name, sess)
	}
	if r.Record != "" {
		if snapErr == nil {
			var after snapshot
			if after, snapErr = takeSnapshot(req, req.Dirs.Workspace); snapErr == nil {
				rep.files, snapErr = fileChanges(req, req.Dirs.Workspace, before, after)
			}
		}
		if snapErr != nil && rep.err == nil {
			rep.err = source.Errorf(source.EExec, "record the file changes of step '%s': %v", req.Step, snapErr)
			if rep.exit == 0 {
				rep.exit = provider.ExitInvalid
			}
		}
		recorded := rep
		if rep.whole != "" {
			// A recording holds the whole reply, whatever its size.
			if b, err := os.ReadFile(rep.whole); err == nil {
				recorded.text = string(b)
			}
		}
		if err := r.record(req, pv.Name, sess, prompt, recorded, n, call, r.Now().Sub(start)); err == nil {
			dropSnapshotBefore(req, call)
		} else if rep.err == nil {
			rep.err = source.Errorf(source.EExec, "record provider call of step '%s': %v", req.Step, err)
			if rep.exit == 0 {
				rep.exit = provider.ExitInvalid
			}
		}
	}
	return finishReply(req, p, rep, pv.Name, sess)
}

// callID identifies one provider call of a numbered execution (execution,
// provider, try), so that a call repeated after a crash can be answered as
// before; "" for an unnumbered one.
func callID(req *step.Request, name string, try int) string {
	if req.Execution <= 0 {
		return ""
	}
	return fmt.Sprintf("%d/%s/%d", req.Execution, name, try)
}

// finishReply turns a reply of provider name into a Result: the output (cut
// to the in-memory cap when the raw stdout was), output_file, the output
// capture, and for an agent that continues its sessions the session after
// the call (sess: the one it continued, nil for a new one).
func finishReply(req *step.Request, p steprun.Paths, rep callReply, name string, sess *step.Session) step.Result {
	if req.Continue && rep.exit == 0 && rep.err == nil && rep.session == "" {
		rep.exit = provider.ExitInvalid
		rep.err = source.Errorf(source.EExec, "provider '%s' did not say which session it answered in, so agent '%s' cannot continue it (session: continue)", name, req.Agent)
	}
	res := step.Result{
		ExitCode:    rep.exit,
		Signal:      rep.signal,
		Tokens:      rep.tokens,
		Cost:        rep.cost,
		Truncated:   rep.truncated,
		SpillStdout: rep.spill,
		StderrLog:   p.StderrLog,
		Stderr:      steprun.TrimOutput(rep.stderr),
	}
	res.KeyVars = rep.keyVars
	if rep.err != nil { // a nil *source.Error must not become a non-nil error
		res.Err = rep.err
	}
	if res.Signal == "" {
		res.Signal = steprun.SignalFor(rep.exit)
	}
	if req.Continue && rep.session != "" && rep.exit == 0 && rep.err == nil {
		res.Session = sessionAfter(name, sess, rep.session, rep.usage)
	}
	out := rep.text
	if rep.truncated && len(out) > proc.DefaultMemCap {
		out = out[:proc.DefaultMemCap]
	}
	res.Output = steprun.TrimOutput(out)
	if p.Output != "" && !rep.wroteOutput {
		if err := writeReply(req, p, rep); err != nil {
			res.Signal, res.Err = lang.SigFailure, source.Wrap(source.EExec, "output_file", err)
			return res
		}
	}
	if kept, err := steprun.KeepOutput(req, p); err != nil {
		if _, serr := os.Stat(p.Output); serr == nil || !rep.wroteOutput {
			res.Signal, res.Err = lang.SigFailure, source.Wrap(source.EExec, "output_file", err)
			return res
		}
	} else {
		res.OutputFile = kept
	}
	if rep.whole != "" {
		shown := ""
		if p.Output != "" {
			shown = p.Output
		}
		steprun.ApplySpilled(req, &res, rep.text, rep.whole, shown)
	} else {
		steprun.ApplyCapture(req, &res, rep.text)
	}
	if req.KeepReply && res.Err == nil {
		err := steprun.KeepReply(req, rep.text)
		if rep.whole != "" {
			err = steprun.KeepReplyFile(req, rep.whole)
		}
		if err != nil {
			res.Signal, res.Err = lang.SigFailure, source.Errorf(source.EExec, "keep the reply of step '%s' for the writer after it: %v", req.Step, err)
		}
	}
	return res
}

// writeReply writes the whole reply to output_file: rep's text, or the
// file that holds a reply too long to hold, copied.
func writeReply(req *step.Request, p steprun.Paths, rep callReply) error {
	if rep.whole == "" {
		return req.Dirs.WriteFile(p.Output, []byte(rep.text), 0o644)
	}
	src, err := os.Open(rep.whole)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := req.Dirs.Create(p.Output)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	return err
}

// firstLine returns the first line of s, cut to 200 bytes.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// An invocation is a provider command ready to run.
type invocation struct {
	argv  []string
	stdin string // "" = /dev/null (unless stdinFile)
	// stdinFile is the prompt, when it goes on stdin only: an open file
	// with no name (steprun.TempStdin), closed by cleanup.
	stdinFile   *os.File
	wroteOutput bool   // the template names ${OUTPUT_FILE}
	tmp         string // the prompt's temporary file (${PROMPT_FILE}), removed by cleanup
	policy      string // the preset's read policy for the call, removed by cleanup
}

func (inv *invocation) cleanup() {
	if inv.tmp != "" {
		_ = os.Remove(inv.tmp)
	}
	if inv.policy != "" {
		_ = os.Remove(inv.policy)
	}
	if inv.stdinFile != nil {
		inv.stdinFile.Close()
	}
}

// promptStdin gives inv the prompt as its stdin through a file with no
// name (steprun.TempStdin): the CLI reads the same bytes from a regular
// file, and nothing of the prompt stays under RUN_ROOT/tmp if smithvm is
// killed while the CLI runs.
func (inv *invocation) promptStdin(req *step.Request, p steprun.Paths, prompt string) *source.Error {
	f, err := steprun.TempStdin(p, req.Step+"-prompt-*.txt", []byte(prompt))
	if err != nil {
		return source.Errorf(source.EExec, "write prompt file: %v", err)
	}
	inv.stdinFile = f
	return nil
}

// buildInvocation substitutes the provider template and chooses the prompt
// transport. The template is CommandOverride, else the provider's command.
// The mode is the step's prompt_transport, else the provider's, else argv
// when the template uses ${PROMPT}, temp_file when it uses ${PROMPT_FILE},
// otherwise stdin. In argv mode a template without ${PROMPT} gets the
// argv_template appended (default: the prompt as the last argument); in
// temp_file mode one without ${PROMPT_FILE} likewise (default: the file's
// path). stdin and temp_file modes write the prompt to a file under
// RUN_ROOT/tmp, removed after the call. Outside stdin mode, stdin is the
// input_file, unless the prompt is that file's content.
func buildInvocation(req *step.Request, p steprun.Paths, pv provider.Provider, prompt string, fromInput bool) (*invocation, *source.Error) {
	inv := &invocation{}
	tmpl := pv.Command
	if len(req.CommandOverride) > 0 {
		tmpl = req.CommandOverride
	}
	if len(tmpl) == 0 {
		return inv, source.Errorf(source.EExec, "provider '%s' has no command", pv.Name)
	}
	uses := func(key string) bool {
		return slices.ContainsFunc(tmpl, func(s string) bool { return provider.Uses(s, key) })
	}
	mode := ""
	var argvTmpl []string
	for _, t := range []*provider.Transport{pv.Transport, req.Transport} {
		if t == nil {
			continue
		}
		if t.Mode != "" {
			mode = t.Mode
		}
		if len(t.ArgvTemplate) > 0 {
			argvTmpl = t.ArgvTemplate
		}
	}
	if mode == "" {
		switch {
		case uses("PROMPT"):
			mode = transportArgv
		case uses("PROMPT_FILE"):
			mode = transportFile
		default:
			mode = transportStdin
		}
	}
	switch mode {
	case transportArgv, transportStdin, transportFile:
	default:
		return inv, source.Errorf(source.EExec, "prompt_transport mode '%s' is not argv, stdin or temp_file", mode)
	}
	// The prompt needs a file with a name only where the template names
	// it (${PROMPT_FILE}, temp_file); on stdin alone, it has none.
	named := mode == transportFile || uses("PROMPT_FILE") || slices.ContainsFunc(argvTmpl, func(s string) bool { return provider.Uses(s, "PROMPT_FILE") })
	if mode == transportStdin && !named {
		if serr := inv.promptStdin(req, p, prompt); serr != nil {
			return inv, serr
		}
	}
	if named {
		tmp, err := steprun.WriteTemp(p, req.Step+"-prompt-*.txt", []byte(prompt))
		if err != nil {
			return inv, source.Errorf(source.EExec, "write prompt file: %v", err)
		}
		inv.tmp = tmp
	}
	vars := providerVars(req, pv, p, prompt, inv.tmp)
	sub := func(elems []string) ([]string, *source.Error) {
		out := make([]string, 0, len(elems))
		for _, s := range elems {
			v, err := provider.Subst(s, vars)
			if err != nil {
				return nil, source.Errorf(source.ETemplateKey, "provider '%s' uses template key '%s' that neither its defaults nor provider_params define%s",
					pv.Name, err.Key, source.DidYouMean(err.Key, vars.Names()))
			}
			out = append(out, v)
		}
		return out, nil
	}
	argv, serr := sub(tmpl)
	if serr != nil {
		return inv, serr
	}
	// A prompt the template does not place goes after it: the argv
	// template when there is one, else the prompt (argv) or its file.
	var extra []string
	switch {
	case mode == transportArgv && !uses("PROMPT"):
		extra = []string{prompt}
	case mode == transportFile && !uses("PROMPT_FILE"):
		extra = []string{inv.tmp}
	}
	if extra != nil && len(argvTmpl) > 0 {
		if extra, serr = sub(argvTmpl); serr != nil {
			return inv, serr
		}
	}
	argv = append(argv, extra...)
	inv.argv = argv
	switch {
	case mode == transportStdin && inv.stdinFile == nil:
		inv.stdin = inv.tmp
	case !fromInput:
		inv.stdin = p.Input
	}
	inv.wroteOutput = p.Output != "" && (uses("OUTPUT_FILE") || slices.ContainsFunc(argvTmpl, func(s string) bool { return provider.Uses(s, "OUTPUT_FILE") }))
	return inv, nil
}

// providerVars returns the values of every template key. model is always a
// key ("" unless a param sets it), as for the checker.
func providerVars(req *step.Request, pv provider.Provider, p steprun.Paths, prompt, promptFile string) provider.Vars {
	vars := provider.Vars([]provider.Param{
		{Key: lang.KeyPrompt, Value: prompt},
		{Key: lang.KeyPromptFile, Value: promptFile},
		{Key: lang.KeyInputFile, Value: p.Input},
		{Key: lang.KeyOutputFile, Value: p.Output},
		{Key: lang.KeyModel, Value: ""},
	})
	for _, list := range [][]provider.Param{pv.Defaults, req.ProviderParams} {
		for _, kv := range list {
			vars = vars.Set(kv.Key, kv.Value)
		}
	}
	if req.Model != "" {
		vars = vars.Set("model", req.Model) // model: wins over provider_params and defaults
	}
	return vars
}
