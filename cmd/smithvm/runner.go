package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"smith/compiler"
	"smith/isa"
	"smith/lang"
	"smith/manifest"
	"smith/source"
	"smith/vm"
	"smith/vm/store"
	"smith/workers"
	"smith/workers/confine"
	"smith/workers/proc"
)

// project is BASE with its directories.
type project struct {
	base  string
	dirs  confine.Dir
	store *store.Store
}

func (e *env) project(base string) (*project, error) {
	return e.projectIn(base, "")
}

// projectIn is project with --workspace ws: WORKSPACE is ws, and BASE is ws
// too when base is "" (CONTRACT 2).
func (e *env) projectIn(base, ws string) (*project, error) {
	wsAbs := ""
	if ws != "" {
		a, err := filepath.Abs(ws)
		if err != nil {
			return nil, fmt.Errorf("--workspace %s: %w", ws, err)
		}
		if fi, err := os.Stat(a); err != nil || !fi.IsDir() {
			return nil, &source.Error{Code: source.EUsage, Msg: "--workspace " + ws + ": not a directory: give an existing folder (the repository the steps work in)"}
		}
		wsAbs = a
		if base == "" {
			base = a
		}
	}
	if base == "" {
		wd, err := e.getwd()
		if err != nil {
			return nil, fmt.Errorf("current directory: %w", err)
		}
		base = wd
	}
	abs, err := filepath.Abs(base)
	if err != nil {
		return nil, fmt.Errorf("--base %s: %w", base, err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return nil, &source.Error{Code: source.EUsage, Msg: "--base " + base + ": not a directory: make it first, or leave --base out to use the current directory"}
	}
	dirs, err := confine.New(abs)
	if err != nil {
		return nil, err
	}
	if wsAbs != "" {
		if err := setWorkspace(&dirs, wsAbs); err != nil {
			return nil, err
		}
	}
	st, err := store.New(abs)
	if err != nil {
		return nil, err
	}
	return &project{base: abs, dirs: dirs, store: st}, nil
}

// setWorkspace makes ws (absolute) the WORKSPACE of dirs: BASE, a
// directory below it, or one outside it.
func setWorkspace(dirs *confine.Dir, ws string) error {
	if !filepath.IsAbs(ws) {
		return fmt.Errorf("--workspace %s: not an absolute path", ws)
	}
	// WORKSPACE may lie outside BASE (state under BASE, steps in DIR):
	// paths are confined to WORKSPACE, not to BASE (CONTRACT 2).
	dirs.Workspace = filepath.Clean(ws)
	return nil
}

// contextValues merges --context-file and then --context.
func (c *common) contextValues() (map[string]any, error) {
	ctx := map[string]any{}
	if c.ctxFile != "" {
		m, err := manifest.ReadContextFile(c.ctxFile)
		if err != nil {
			return nil, err
		}
		for k, v := range m {
			ctx[k] = v
		}
	}
	for _, kv := range c.context {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.HasPrefix(k, ".") || strings.HasSuffix(k, ".") || strings.Contains(k, "..") {
			return nil, fmt.Errorf("--context %q: want KEY=VALUE (KEY may be a dotted path: a.b=v)", kv)
		}
		vm.SetPath(ctx, k, v)
	}
	return ctx, nil
}

// checkRecording checks --record and --replay before anything runs: both
// at once, a --replay DIR that is not a folder, a --record DIR that is
// something else than a folder, or one that holds another run's
// recordings than run runID's ("" for a new run) are usage errors (a step
// would fail on them only after its provider call; a replay of the folder
// would read the other run's calls as this one's).
func (c *common) checkRecording(runID string) error {
	if c.record != "" && c.replay != "" {
		return errors.New("--record and --replay exclude each other: a replayed run makes no provider call to record")
	}
	if c.replay != "" {
		fi, err := os.Stat(c.replay)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return fmt.Errorf("--replay %s: no such folder; give the folder a run with --record DIR wrote", c.replay)
		case err != nil:
			return fmt.Errorf("--replay %s: %w", c.replay, unwrapPathErr(err))
		case !fi.IsDir():
			return fmt.Errorf("--replay %s: not a folder; give the folder a run with --record DIR wrote", c.replay)
		}
	}
	if c.record != "" {
		if fi, err := os.Stat(c.record); err == nil && !fi.IsDir() {
			return fmt.Errorf("--record %s: not a folder; give a folder (it is created when missing)", c.record)
		}
		runs, err := workers.RecordedRuns(c.record)
		if err != nil {
			return fmt.Errorf("--record %s: %w", c.record, unwrapPathErr(err))
		}
		for _, r := range runs {
			if r != runID {
				return fmt.Errorf("--record %s: it holds the recordings of run '%s', and a replay reads a step's recordings from its first: give an empty folder per run (a resume records into its own run's folder)", c.record, r)
			}
		}
	}
	return nil
}

// unwrapPathErr is err without the path its message would repeat.
func unwrapPathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func keysOf(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// load compiles (or decodes) the program and prints its diagnostics.
func (e *env) load(file string, ctxKeys []string) (*isa.Program, int) {
	return e.loadFrom(file, ctxKeys, "")
}

// loadFrom is load with a manifest's run starting at node start ("": its
// entry; --start).
func (e *env) loadFrom(file string, ctxKeys []string, start string) (*isa.Program, int) {
	return e.loadOpt(file, compiler.Options{ContextKeys: ctxKeys, Start: start})
}

// loadOpt is load with the compiler's options.
func (e *env) loadOpt(file string, opt compiler.Options) (*isa.Program, int) {
	p, ds := e.programCache().LoadProgram(file, opt)
	if wd, err := e.getwd(); err == nil {
		ds.RelTo(wd)
	}
	ds.Sort()
	ds.WriteText(e.stderr)
	if st := ds.ExitStatus(); st != 0 || p == nil {
		return nil, max(st, source.ExitConfig)
	}
	return p, 0
}

// workflowGone says, as one sentence, that the workflow file run st was
// started from (the one resume, graph, status, logs and clean recompile) no
// longer exists, with its path and then what, which says how to fix it or
// what the command does without it; a file of that folder with a near name
// is named as such, never as the workflow. It is "" when the file exists.
// Every command that needs the file says it with this one sentence.
func workflowGone(st *vm.State, what string) string {
	if _, err := os.Stat(st.WorkflowPath); !errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	msg := fmt.Sprintf("run %s was started from workflow file %s, which no longer exists; %s", st.RunID, st.WorkflowPath, what)
	if near := compiler.NearFile(st.WorkflowPath); near != "" {
		msg += fmt.Sprintf(" (a file with a near name exists: %s; if it is the workflow, move it back to %s)", near, st.WorkflowPath)
	}
	return msg
}

// session is one smithvm process driving one run.
type session struct {
	e       *env
	proj    *project
	run     *store.Run
	prog    *isa.Program
	console *console
	opts    *common

	// saveMu guards saveErr, the first failed write of the run's state:
	// the events of that change were dropped, so finish prints it.
	saveMu  sync.Mutex
	saveErr error
	// rootOnce opens root, RUN_ROOT as the first saved change found it
	// (-1 when it could not be opened): a RUN_ROOT whose links
	// fall to zero was deleted under the run. rootGone is set once it was.
	rootOnce sync.Once
	root     int
	rootGone atomic.Bool
}

// config builds the machine's configuration, wired to the store.
func (s *session) config(workflowPath string, ctx map[string]any) vm.Config {
	reg := workers.NewRegistry(s.e.lookup)
	reg.Record, reg.Replay = s.opts.record, s.opts.replay
	cfg := vm.Config{
		Registry:        reg,
		Host:            workers.Local{Env: s.e.lookup},
		MaxSteps:        s.opts.maxSteps,
		Env:             s.e.lookup,
		Dirs:            s.proj.dirs,
		RunRoot:         s.run.Root(),
		WorkflowPath:    workflowPath,
		RunID:           s.run.ID(),
		Context:         ctx,
		Events:          s.event,
		Checkpoint:      s.checkpoint,
		CheckpointLater: s.checkpointLater,
		Replaying:       s.opts.replay != "",
		Debug:           s.opts.logLevel == "debug",
		MaxParallel:     s.opts.maxPar,
	}
	if s.opts.verbose {
		cfg.Verbose = s.console.live()
	} else if s.console.tty {
		cfg.Verbose = s.console.tail() // shown on the progress line only
	}
	return cfg
}

func (s *session) event(ev vm.Event) {
	if err := s.run.AppendEvent(ev); err != nil {
		s.console.line(fmt.Sprintf("WARNING: cannot write events.jsonl: %v", err))
	}
	s.console.event(ev)
}

func (s *session) checkpoint(d *vm.Delta, st *vm.State) error {
	if err := s.run.Save(d, st); err != nil {
		return s.saveFailed(err)
	}
	return s.saveFailed(s.rootThere())
}

func (s *session) checkpointLater(d *vm.Delta, st *vm.State) (func() error, error) {
	wait, err := s.run.SaveLater(d, st)
	if err == nil {
		err = s.rootThere()
	}
	if err != nil {
		return nil, s.saveFailed(err)
	}
	return func() error { return s.saveFailed(wait()) }, nil
}

// rootThere returns an E_STATE_IO error when RUN_ROOT is no longer the
// directory the run's first saved change found: deleted (or replaced)
// while the run ran, it took the journal and the logs with it, and the
// run would go on saving into files no longer there. It looks at the
// directory it holds open (one fstat, no path to walk: every saved change
// pays it).
func (s *session) rootThere() error {
	s.rootOnce.Do(func() {
		fd, err := syscall.Open(s.run.Root(), syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
		if err != nil {
			fd = -1
		}
		s.root = fd
	})
	if s.root >= 0 && !s.rootGone.Load() {
		var st syscall.Stat_t
		if err := syscall.Fstat(s.root, &st); err != nil || st.Nlink > 0 {
			return nil
		}
		s.rootGone.Store(true)
	}
	if !s.rootGone.Load() {
		return nil
	}
	return &source.Error{Code: source.EStateIO,
		Msg:  "the run folder " + s.run.Root() + " was deleted or replaced while run '" + s.run.ID() + "' ran",
		Hint: "its journal and the logs written so far are gone: the run stops here and saves its state there again, so that " + s.resumeCmd(s.run.ID()) + " continues it"}
}

// saveFailed returns err, a failed write of the run's state, as an
// E_STATE_IO error saying what to do (a code of the store's own, such as
// E_LIMIT, stays), and keeps the first one for finish; nil stays nil.
func (s *session) saveFailed(err error) error {
	if err == nil {
		return nil
	}
	err = stateWriteError(s.run.ID(), s.resumeCmd(s.run.ID()), err)
	s.saveMu.Lock()
	if s.saveErr == nil {
		s.saveErr = err
	}
	s.saveMu.Unlock()
	return err
}

// stateWriteError wraps err, a failed write of run id's state, as
// E_STATE_IO with what to do, unless it carries a code of its own.
func stateWriteError(id, resume string, err error) error {
	var se *source.Error
	if errors.As(err, &se) && se.Code == source.EStateIO && se.Hint == "" {
		c := *se
		c.Hint = ioFix(err) + ", then " + resume
		return &c
	}
	var c source.Coded
	if errors.As(err, &c) {
		return err // E_LIMIT, or a save error that says what to do
	}
	return &source.Error{Code: source.EStateIO, Msg: "cannot write the state of run '" + id + "'", Err: err,
		Hint: "the run stops where it was last saved: " + ioFix(err) + ", then " + resume}
}

// ioFix says what to do about err, a file operation the machine refused.
func ioFix(err error) string {
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return "free space (or inodes: df -i) on that file system"
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return "raise the limit of open files (ulimit -n)"
	case errors.Is(err, syscall.EFBIG):
		return "raise the file size limit (ulimit -f)"
	case errors.Is(err, syscall.EROFS), errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return "make that file system and folder writable"
	}
	return "fix the cause (free space, make it writable)"
}

// finish saves the final snapshot and maps the run's end to an exit status.
// A nil st means the run never started (a missing secret, a failed
// worktree): no event told the user why, so finish prints the error.
func (s *session) finish(st *vm.State, runErr error) int {
	if code := source.CodeOf(runErr, source.EInternal); st == nil && runErr != nil {
		if code == source.EUsage {
			s.e.refuse("%v", runErr) // the one form of a usage refusal
		} else {
			fmt.Fprintf(s.e.stderr, "ERROR: %s: %v\n", code, runErr)
		}
	}
	s.saveMu.Lock()
	saveErr, rootGone := s.saveErr, s.rootGone.Load()
	s.saveMu.Unlock()
	if s.root > 0 {
		syscall.Close(s.root)
	}
	if st != nil && rootGone {
		// The state in memory is whole: save it where the run folder was.
		os.MkdirAll(s.run.Root(), 0o755)
	}
	if st != nil && saveErr != nil {
		// The change that failed took its events with it: no run_failed
		// event told the user why the run stopped.
		code := source.CodeOf(saveErr, source.EStateIO)
		fmt.Fprintf(s.e.stderr, "ERROR: %s: %v\n", code, saveErr)
	}
	if st != nil {
		if err := s.run.WriteSnapshot(st); err != nil {
			if saveErr == nil {
				err = stateWriteError(st.RunID, s.resumeCmd(st.RunID), err)
				code := source.CodeOf(err, source.EStateIO)
				fmt.Fprintf(s.e.stderr, "ERROR: %s: %v\n", code, err)
			}
			if runErr == nil {
				return source.ExitExec
			}
		}
		if s.opts.json {
			enc := json.NewEncoder(s.e.stdout)
			enc.SetIndent("", "  ")
			enc.Encode(st)
		}
	}
	if st != nil {
		s.console.line("INFO: Run folder: " + s.run.Root())
		s.console.line("INFO: Artifacts: " + artifactsOf(s.proj, st))
		if runErr != nil && vm.ExitStatus(runErr) != source.ExitConfig && st.RunStep == "" {
			s.console.line(s.resumeHint(st, errors.Is(runErr, vm.ErrHalted)))
		} else {
			s.console.line("INFO: Next: " + s.e.self() + " status " + st.RunID + s.baseFlag())
		}
	}
	return vm.ExitStatus(runErr)
}

// baseFlag is " --base BASE" (absolute) when BASE is not the current
// directory, so that a printed command works from where it was printed.
func (s *session) baseFlag() string {
	if wd, err := s.e.getwd(); err == nil {
		if a, err := filepath.Abs(wd); err == nil && sameDir(a, s.proj.base) {
			return ""
		}
	}
	return " --base " + shellQuote(s.proj.base)
}

// self is the command a printed hint uses to start smithvm again:
// "smithvm", but "go run ./cmd/smithvm" after go run in the repository
// (go run's binary is gone once it exits, and smithvm may not be
// installed).
func (e *env) self() string {
	if !goRunBinary(e.arg0) {
		return "smithvm"
	}
	if wd, err := e.getwd(); err == nil {
		if _, err := os.Stat(filepath.Join(wd, "cmd", "smithvm", "main.go")); err == nil {
			return "go run ./cmd/smithvm"
		}
	}
	return "smithvm"
}

// goRunBinary reports whether arg0 is a binary go run built: it lives in
// an exe folder of a go-build temporary folder.
func goRunBinary(arg0 string) bool {
	dir := filepath.ToSlash(filepath.Dir(arg0))
	return path.Base(dir) == "exe" && strings.Contains(dir, "/go-build")
}

// sameDir reports whether a and b name the same directory.
func sameDir(a, b string) bool {
	if a == b {
		return true
	}
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// resumeHint tells how to continue a run that stopped.
func (s *session) resumeHint(st *vm.State, halted bool) string {
	cmd := s.resumeCmd(st.RunID)
	switch {
	case halted:
		return "INFO: Resume with '" + cmd + "' (add --signal SIGNAL:X to take a transition, --note TEXT to answer)."
	case st.Status == vm.StatusInterrupted:
		// Ctrl-C, a hang-up or smithvm stop: nothing to fix first.
		return "INFO: Resume with '" + cmd + "' to continue where it stopped."
	}
	return "INFO: Resume with '" + cmd + "' once the cause is fixed."
}

// resumeCmd is the command that resumes run id, with the flags it needs.
func (s *session) resumeCmd(id string) string {
	cmd := s.e.self() + " resume " + id + s.baseFlag()
	if s.opts.wsDir != "" {
		cmd += " --workspace " + shellQuote(s.opts.wsDir)
	}
	return cmd
}

// signalContext is cancelled by SIGINT, SIGTERM or SIGHUP (a closed
// terminal, whose default action would leave the running steps' process
// groups behind); a second one kills the running steps at once instead of
// granting them the grace period. A SIGHUP ignored when smithvm started
// (nohup) stays ignored.
func signalContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	signal.Notify(ch, sigs...)
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case <-ch:
				n++
				if n == 1 {
					cancel()
				} else {
					proc.Hurry()
				}
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel()
	}
}

func (e *env) cmdRun(args []string) int {
	var c flagVals
	fs := e.runFlags(&c)
	if st, done := e.parse(fs, args, 1); done {
		return st
	}
	return e.runFile(&c.common, fs.Arg(0), "", c.start)
}

func (e *env) cmdRunStep(args []string) int {
	var c flagVals
	fs := e.runStepFlags(&c)
	if st, done := e.parse(fs, args, 2); done {
		return st
	}
	return e.runFile(&c.common, fs.Arg(0), fs.Arg(1), "")
}

// workspaceUnusable says what to do about a WORKSPACE that cannot be made.
func workspaceUnusable(err error) string {
	return fmt.Sprintf("cannot make WORKSPACE: %v: it must be a writable directory (remove a file in its place, or pass --workspace DIR)", err)
}

// runFile runs FILE (only STEP when step != "", from node start when start
// != "").
func (e *env) runFile(c *common, file, step, start string) int {
	// Ctrl-C, SIGTERM and SIGHUP are caught from the start (loading the
	// workflow, checking the repository take a while): one then ends the
	// run interrupted (130), not smithvm by the signal's default action.
	ctx, cancel := signalContext()
	defer cancel()
	ctxVals, err := c.contextValues()
	if err != nil {
		e.failErr(err, source.EUsage, "")
		return source.ExitConfig
	}
	if err := c.checkRecording(c.runID); err != nil {
		return e.refuse("%v", err)
	}
	proj, err := e.projectIn(c.base, c.wsDir)
	if err != nil {
		e.failErr(err, source.EUsage, "")
		return source.ExitConfig
	}
	if c.runID != "" && !store.ValidRunID(c.runID) {
		return e.refuse("--run-id %q: want 1 to 64 characters from [A-Za-z0-9_.-]", c.runID)
	}
	abs := file
	if a, err := filepath.Abs(file); err == nil {
		abs = a
	}
	// The literal paths are checked against this run's layout (WORKSPACE,
	// BASE) before the run is created: a path its step would refuse
	// refuses the run (E_PATH_ESCAPE, nothing written). A worktree run's
	// WORKSPACE is its own worktree, which does not exist yet: its paths
	// are checked at use. A .smbc's are checked too (compiler.CheckLayout),
	// at their steps' positions.
	prog, st := e.loadOpt(file, compiler.Options{ContextKeys: keysOf(ctxVals), Start: start, Layout: &proj.dirs})
	if prog == nil {
		return st
	}
	if prog.Format == "manifest" && prog.Name == "workflows" && filepath.Base(file) == "workflows.json" {
		// ./workflows.json: the compiler saw no folder to name the runs
		// after (resume compiles the absolute path, which has one).
		prog.Name = filepath.Base(filepath.Dir(abs))
	}
	if start != "" && prog.Format != "manifest" {
		return e.refuse("--start names a node of a manifest (workflows.json); a YAML workflow starts at its first step (smithvm run-step runs one step alone)")
	}
	if step != "" {
		if msg := runStepProblem(prog, step, file); msg != "" {
			return e.refuse("%s", msg)
		}
		if prog, err = prog.Only(step); err != nil {
			return e.failErr(err, source.EInternal, "")
		}
	}
	firstRun := e.gitignoreCheck(proj)
	_ = firstRun
	if prog.Config.Isolation == lang.IsolationWorktree {
		// Before anything of the run is made: a git too old to read
		// Smith's overrides would run the repository's hooks.
		if err := workers.CheckGit(context.Background(), e.lookup); err != nil {
			return e.failErr(err, source.EGitVersion, "")
		}
		if !workers.IsGitRepo(context.Background(), proj.dirs.Workspace, e.lookup) {
			fmt.Fprintf(e.stderr, "WARNING: isolation: git-worktree, but WORKSPACE %s is not in a git repository: the run works in WORKSPACE itself, on no branch of its own (run it with --workspace on a repository, or git init and commit there first).\n", proj.dirs.Workspace)
		} else if files := workers.UncommittedTracked(context.Background(), proj.dirs, e.lookup); len(files) > 0 {
			fmt.Fprintf(e.stderr, "WARNING: the repository %s has changes that are not committed (%s); the run starts from its last commit, without them: commit them first for the agents to see them.\n", proj.dirs.Workspace, workers.ListSome(files, 5))
		}
		if op := workers.InProgress(context.Background(), proj.dirs, e.lookup); op != "" {
			fmt.Fprintf(e.stderr, "WARNING: the repository %s is in the middle of %s; the run starts from its HEAD, a commit of that unfinished work, not from your branch: finish or abort it first for the run to start from your branch (smithvm merge refuses until it is done).\n", proj.dirs.Workspace, op)
		}
		if subs := workers.Submodules(context.Background(), proj.dirs, e.lookup); len(subs) > 0 {
			fmt.Fprintf(e.stderr, "WARNING: the repository %s has submodules (%s); the run's worktree has them as empty folders (Smith checks out no submodule): the agents do not see their files, and a step that writes in one fails.\n", proj.dirs.Workspace, workers.ListSome(subs, 5))
		}
	}
	if err := os.MkdirAll(proj.dirs.Workspace, 0o755); err != nil {
		return e.refuse("%s", workspaceUnusable(err))
	}
	id := c.runID
	if id == "" {
		id = store.NewRunID()
	}
	if ctx.Err() != nil {
		fmt.Fprintf(e.stderr, "WARNING: Run %s interrupted before it started; nothing was saved.\n", id)
		return source.ExitInterrupted
	}
	e.catchStop()
	r, err := proj.store.Create(id)
	if err != nil {
		var c source.Coded
		if !errors.As(err, &c) {
			// Not a bug of Smith: BASE/.orchestrator/runs cannot be made
			// or written (a file in its place, a read-only BASE, a full disk).
			err = &source.Error{Code: source.EStateIO, Msg: "cannot create the folder of run '" + id + "'", Err: err,
				Hint: "BASE/.orchestrator/runs must be a writable directory: remove what is in its place, free space or make BASE writable, or pass another --base"}
		} else if source.CodeOf(err, "") == source.EStateIO {
			err = stateWriteError(id, e.self()+" run "+file, err)
		}
		return e.failErr(err, source.EStateIO, "")
	}
	e.rememberBase(proj.base)
	defer r.Close()
	s := &session{e: e, proj: proj, run: r, prog: prog, console: newConsole(e.stderr, len(prog.Blocks)), opts: c}
	defer s.console.close()
	m, err := vm.New(prog, s.config(abs, ctxVals))
	if err != nil {
		fmt.Fprintf(e.stderr, "smithvm: %v\n", err)
		return vm.ExitStatus(err)
	}
	ctx, unwatch := stoppable(ctx, r)
	defer unwatch()
	final, runErr := m.Run(ctx)
	if final == nil && runErr != nil {
		// Nothing ran and no state was written: leave no empty run behind.
		r.Close()
		os.RemoveAll(r.Root())
	}
	return s.finish(final, runErr)
}

// runStepProblem says why STEP cannot run alone, or "".
func runStepProblem(p *isa.Program, step, file string) string {
	for _, b := range p.Blocks {
		if b.ID != step {
			continue
		}
		if b.Parent != 0 {
			if par := p.Blocks[b.Parent-1]; par.Kind == isa.KindParallel {
				return fmt.Sprintf("step '%s' is in a branch of the parallel step '%s'; run-step runs top-level steps (try: smithvm run-step %s %s)",
					step, par.ID, file, topLoop(p, b))
			}
			return fmt.Sprintf("step '%s' is inside the for_each '%s', whose item and loop variables it needs; run-step runs top-level steps (try: smithvm run-step %s %s)",
				step, p.Blocks[b.Parent-1].ID, file, topLoop(p, b))
		}
		return ""
	}
	return fmt.Sprintf("no step '%s' in %s%s", step, file, source.DidYouMean(step, blockIDs(p)))
}

// topLoop is the outermost loop that holds b.
func topLoop(p *isa.Program, b isa.Block) string {
	for b.Parent != 0 {
		b = p.Blocks[b.Parent-1]
	}
	return b.ID
}

func blockIDs(p *isa.Program) []string {
	ids := make([]string, len(p.Blocks))
	for i, b := range p.Blocks {
		ids[i] = b.ID
	}
	return ids
}

func (e *env) cmdResume(args []string) int {
	var c flagVals
	fs := e.resumeFlags(&c)
	if st, done := e.parse(fs, args, 1); done {
		return st
	}
	if fs.Changed("note") && strings.TrimSpace(c.note) == "" {
		return e.refuse("--note needs a text (the USER_NOTE to add to the halted block's payload); leave the flag out to resume without one")
	}
	ctx, cancel := signalContext() // from the start, as runFile
	defer cancel()
	if c.wsDir == "" {
		base, code, ok := e.locateBase(c.base, fs.Arg(0))
		if !ok {
			return code
		}
		c.base = base
	}
	cont, status, _ := e.openResume(&c.common, fs.Arg(0))
	if cont == nil {
		return status
	}
	return cont(ctx)
}

// openResume does the part of a resume that can refuse it: it takes the
// run's lock (E_RUN_LOCKED), loads and saves its state and compiles its
// workflow. It returns the rest of the resume, which runs the machine and
// releases the lock, or nil and the exit status. A completed run has
// nothing to do: nil and 0. err is the error it printed, if one. `smithvm
// serve` resumes through it too.
func (e *env) openResume(c *common, id string) (cont func(context.Context) int, status int, err error) {
	if err := c.checkRecording(id); err != nil {
		return nil, e.refuse("%v", err), err
	}
	proj, err := e.projectIn(c.base, c.wsDir)
	if err != nil {
		e.failErr(err, source.EUsage, "")
		return nil, source.ExitConfig, err
	}
	e.catchStop()
	r, err := proj.store.Open(id)
	if err != nil {
		if source.CodeOf(err, source.EStateIO) == source.EStateIO {
			err = stateWriteError(id, e.self()+" resume "+id+baseFlagOf(e, proj.base), err)
		}
		return nil, e.failErr(err, source.EInternal, notFoundHint(err, proj)), err
	}
	done := false
	defer func() {
		if !done {
			r.Close()
		}
	}()
	st, err := r.State()
	if err != nil {
		if source.CodeOf(err, "") == source.EStateIO {
			err = stateWriteError(id, e.self()+" resume "+id+baseFlagOf(e, proj.base), err)
		}
		return nil, e.failErr(err, source.EInternal, ""), err
	}
	if (c.signal != "" || c.note != "") && st.Status != vm.StatusCompleted && !st.IsHalted && st.Status != vm.StatusHalted {
		// --signal and --note answer a halted run; on a failed or
		// interrupted one --signal would take the step's transition as if
		// the step had sent it, and --note answer a flag nobody raised.
		status := st.Status
		if status == vm.StatusRunning {
			status = "interrupted" // cut off: its lock was free
		}
		flag := "--signal"
		if c.signal == "" {
			flag = "--note"
		}
		err := &source.Error{Code: source.EUsage, Msg: "run '" + id + "' is " + status + ", not halted: " + flag + " answers a halted run",
			Hint: "resume it without " + flag + ": " + e.self() + " resume " + id + baseFlagOf(e, proj.base)}
		return nil, e.refuse("%v", err), err
	}
	if st.Status != vm.StatusCompleted {
		if msg := workflowGone(st, "restore it there to resume the run"); msg != "" {
			return nil, e.fail(source.EParse, "%s", msg), &source.Error{Code: source.EParse, Msg: msg}
		}
	}
	var prog *isa.Program
	if c.signal != "" && st.Status != vm.StatusCompleted {
		// The signal is checked before anything of the run is touched: a
		// mistyped one leaves the run as it was (E_UNKNOWN_SIGNAL).
		var code int
		if prog, code = e.load(st.WorkflowPath, keysOf(st.Context)); prog == nil {
			return nil, code, nil
		}
		if err := vm.CheckResumeSignal(prog, st, c.signal); err != nil {
			return nil, e.failErr(err, source.EInternal, ""), err
		}
	}
	// What an attempt cut off by a crash left running dies before anything
	// runs again (its process groups are recorded in RUN_ROOT/procs-*).
	proc.KillLeftovers(r.Root())
	// And the temporary files a kill in the middle of a write left.
	workers.CleanTemps(r.Root(), proj.dirs)
	if st.WorktreePath != "" {
		workers.CleanTemps("", confine.Dir{Base: proj.dirs.Base, Workspace: st.WorktreePath})
	}
	// A crash may have left the latest state only in the journal: bring
	// state.json up to date before anything else.
	if err := r.WriteSnapshot(st); err != nil {
		err = stateWriteError(st.RunID, e.self()+" resume "+st.RunID+baseFlagOf(e, proj.base), err)
		return nil, e.failErr(err, source.EStateIO, ""), err
	}
	if st.Status == "completed" {
		fmt.Fprintf(e.stderr, "INFO: Run %s already completed; nothing to do.\n", st.RunID)
		if c.json {
			enc := json.NewEncoder(e.stdout)
			enc.SetIndent("", "  ")
			enc.Encode(st)
		}
		return nil, 0, nil
	}
	if c.replay == "" && workers.WasReplayed(r.Root()) {
		// Not refused (a replay may be continued live on purpose), but
		// never silently: the steps left now call their CLIs.
		fmt.Fprintf(e.stderr, "WARNING: run %s was replayed from recordings (--replay), and this resume has no --replay: its provider steps call their CLIs and models now; to keep replaying, resume it with --replay DIR\n", st.RunID)
	}
	if c.wsDir == "" && st.Workspace != "" {
		// The run records its WORKSPACE; resume uses it.
		if err := setWorkspace(&proj.dirs, st.Workspace); err != nil {
			fmt.Fprintf(e.stderr, "smithvm: run %s: %v\n", st.RunID, err)
			return nil, source.ExitConfig, err
		}
	}
	if prog == nil {
		// The literal paths are checked against the run's layout, as for
		// run: a workflow fixed into a path its step would refuse is
		// refused before any step runs again (E_PATH_ESCAPE).
		var code int
		if prog, code = e.loadOpt(st.WorkflowPath, compiler.Options{ContextKeys: keysOf(st.Context), Layout: &proj.dirs}); prog == nil {
			return nil, code, nil
		}
	}
	if prog.Config.Isolation == lang.IsolationWorktree || st.WorktreePath != "" {
		// As run: no git of the run's (its worktree repaired, its commits)
		// on a git too old to read Smith's overrides.
		if err := workers.CheckGit(context.Background(), e.lookup); err != nil {
			return nil, e.failErr(err, source.EGitVersion, ""), err
		}
	}
	if st.RunStep != "" {
		// A run-step run stays one step.
		if prog, err = prog.Only(st.RunStep); err != nil {
			return nil, e.failErr(err, source.EInternal, ""), err
		}
	}
	if err := os.MkdirAll(proj.dirs.Workspace, 0o755); err != nil {
		return nil, e.refuse("%s", workspaceUnusable(err)), err
	}
	s := &session{e: e, proj: proj, run: r, prog: prog, console: newConsole(e.stderr, len(prog.Blocks)), opts: c}
	m, err := vm.New(prog, s.config(st.WorkflowPath, nil))
	if err != nil {
		s.console.close()
		fmt.Fprintf(e.stderr, "smithvm: %v\n", err)
		return nil, vm.ExitStatus(err), err
	}
	done = true
	return func(ctx context.Context) int {
		defer r.Close()
		defer s.console.close()
		ctx, unwatch := stoppable(ctx, r)
		defer unwatch()
		final, runErr := m.Resume(ctx, st, vm.ResumeOptions{Signal: c.signal, Note: c.note})
		return s.finish(final, runErr)
	}, 0, nil
}
