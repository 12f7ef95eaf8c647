package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"smith/compiler"
	"smith/isa"
	"smith/source"
	"smith/vm"
	"smith/vm/store"
	"smith/workers/confine"
)

// maxText is the most of a log or output file served; longer ones are cut
// to their last maxText bytes.
const maxText = 2 << 20

// httpError writes err as text, its code first as the CLI prints it, with
// the status the code calls for.
func httpError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	var c source.Coded
	if errors.As(err, &c) {
		switch c.ErrCode() {
		case source.EStateNotFound, source.EUsage, source.EPathEscape:
			status = http.StatusNotFound
		case source.ERunLocked:
			status = http.StatusConflict
		}
	}
	http.Error(w, codedMessage(err), status)
}

// notFound is the error for a name in a URL that is no run, step or file.
type notFound string

func (e notFound) Error() string        { return string(e) }
func (e notFound) ErrCode() source.Code { return source.EStateNotFound }

func errNotFound(what string) error { return notFound(what) }

// artifactsDir is WORKSPACE/artifacts, where each step's output_file goes.
func (s *Server) artifactsDir() string { return filepath.Join(s.cfg.Dirs.Workspace, "artifacts") }

// resolveRun checks rel, a path relative to the runs directory, with
// workers/confine (no '..', no symlink on the way) and returns it whole.
func (s *Server) resolveRun(rel string) (string, error) {
	// The run store is its own confinement root: a Dir whose Base and
	// Workspace are the runs directory (the project's Dir keeps every path
	// inside WORKSPACE, which the run store is not).
	runs := s.cfg.Store.RunsDir()
	p, err := confine.Dir{Base: runs, Workspace: runs}.ResolveIn(runs, rel)
	if err != nil {
		return "", errNotFound("no such run file: " + err.Error())
	}
	return p, nil
}

// readState reads run id's state without its lock. The id must name a
// directory right under the runs directory that no symlink leads to.
func (s *Server) readState(id string) (*vm.State, error) {
	if !store.ValidRunID(id) {
		return nil, errNotFound("no run '" + id + "'")
	}
	if _, err := s.resolveRun(id); err != nil {
		return nil, err
	}
	return s.cfg.Store.ReadState(id)
}

// stateProgram is the run's program, recompiled from its workflow_path
// (nil when that no longer compiles).
func (s *Server) stateProgram(st *vm.State) *isa.Program {
	if st.WorkflowPath == "" {
		return nil
	}
	keys := make([]string, 0, len(st.Context))
	for k := range st.Context {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return s.program(st.WorkflowPath, keys)
}

// writeJSON writes v as indented JSON, as `status --json` prints it.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// shownState is run id's state as status, the viewer and the graph show
// it (vm.State.Shown): a step cut off by a stop or a crash reads
// interrupted.
func (s *Server) shownState(id string) (*vm.State, error) {
	st, err := s.readState(id)
	if err != nil {
		return nil, err
	}
	return st.Shown(s.cfg.Store.CutOff(id, st.Status)), nil
}

// apiRun is GET /api/runs/ID: the state, as `smithvm status --json`.
func (s *Server) apiRun(w http.ResponseWriter, r *http.Request) {
	st, err := s.shownState(r.PathValue("id"))
	if err != nil {
		httpError(w, err)
		return
	}
	writeJSON(w, st)
}

// apiGraph is GET /api/runs/ID/graph: the DOT of `smithvm graph`, or with
// view=overview one box per Node, with node=K only Node K.
func (s *Server) apiGraph(w http.ResponseWriter, r *http.Request) {
	st, err := s.shownState(r.PathValue("id"))
	if err != nil {
		httpError(w, err)
		return
	}
	prog := s.stateProgram(st)
	if prog == nil {
		http.Error(w, "the run's workflow "+st.WorkflowPath+" no longer compiles", http.StatusUnprocessableEntity)
		return
	}
	opt := compiler.DOTOptions{Status: BlockStatus(st)}
	q := r.URL.Query()
	if q.Has("node") {
		k, _ := strconv.Atoi(q.Get("node"))
		opt.View = compiler.DOTNode(k)
	} else if q.Get("view") == "overview" {
		opt.View = compiler.DOTOverview()
	}
	var buf bytes.Buffer
	if err := compiler.DOT(prog, &buf, opt); err != nil {
		var nn *compiler.NoNodeError
		if errors.As(err, &nn) {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		httpError(w, err)
		return
	}
	out := buf.Bytes()
	w.Header().Set("Content-Type", "text/vnd.graphviz; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(out)
}

// A stepRow is one line of the run page's step table.
type stepRow struct {
	Name     string        `json:"name"`
	Depth    int           `json:"depth"`
	Status   string        `json:"status"`
	Attempts int           `json:"attempts"`
	Duration float64       `json:"duration"`
	ExitCode int           `json:"exit_code"`
	Provider string        `json:"provider,omitempty"`
	Signal   string        `json:"signal,omitempty"`
	Error    *vm.StepError `json:"error,omitempty"`
	Iters    int           `json:"iterations,omitempty"`
	Stdout   bool          `json:"stdout"`
	Stderr   bool          `json:"stderr"`
	Files    []string      `json:"files,omitempty"`
	// Tokens and Cost are summed over every run of the step (Usage);
	// Commit is its commit on the run's branch.
	Tokens int     `json:"tokens"`
	Cost   float64 `json:"cost_usd"`
	Commit string  `json:"commit,omitempty"`
}

// A view is what the run page draws: the state plus what only the
// program and the run directory know.
type view struct {
	State  *vm.State `json:"state"`
	Format string    `json:"format"`
	Steps  []stepRow `json:"steps"`
	Graph  struct {
		Blocks   int      `json:"blocks"`
		Clusters []string `json:"clusters"`
		// Start is the view the page shows first: full or overview.
		Start string `json:"start"`
	} `json:"graph"`
	// Signals are those the halted block has transitions for.
	Signals   []string `json:"signals,omitempty"`
	CanResume bool     `json:"can_resume"`
	// Usage is the whole run's, from its events; Diff says the run has a
	// diff to show (a worktree).
	Usage Usage `json:"usage"`
	Diff  bool  `json:"diff"`
	// CanStop: the page may stop runs; Driven: a process holds the run's
	// lock now (its status alone may say running after a crash).
	CanStop bool `json:"can_stop"`
	Driven  bool `json:"driven"`
	// CutOff says why a run whose status says running is not (a crash or
	// a SIGKILL cut it off: no process drives it); empty otherwise.
	CutOff string `json:"cut_off,omitempty"`
}

// apiView is GET /api/runs/ID/view: everything the run page draws.
func (s *Server) apiView(w http.ResponseWriter, r *http.Request) {
	st, err := s.readState(r.PathValue("id"))
	if err != nil {
		httpError(w, err)
		return
	}
	writeJSON(w, s.view(st))
}

func (s *Server) view(st *vm.State) *view {
	prog := s.stateProgram(st)
	cutOff := s.cfg.Store.CutOff(st.RunID, st.Status)
	st = st.Shown(cutOff) // a step cut off reads interrupted
	v := &view{State: st, CanResume: s.cfg.Resume != nil, CanStop: s.cfg.Stop != nil}
	_, v.Driven, _ = s.cfg.Store.Driver(st.RunID)
	if cutOff {
		v.CutOff = store.CutOffNote
	}
	// A step being run has no result yet: it shows as running.
	rows := *st
	if cur := st.CurrentStep; st.Status == vm.StatusRunning && cur != "" && st.Steps[cur] == nil {
		rows.Steps = make(map[string]*vm.StepResult, len(st.Steps)+1)
		for k, r := range st.Steps {
			rows.Steps[k] = r
		}
		rows.Steps[cur] = &vm.StepResult{Status: vm.StepRunning}
	}
	names, depth := StepOrder(&rows, prog)
	// One listing of RUN_ROOT/logs and of WORKSPACE/artifacts serves every
	// step: a run of thousands of steps is redrawn on every event.
	logs := s.logSizes(st.RunID)
	withFiles := s.artifactSteps()
	for _, n := range names {
		res := rows.Steps[n]
		row := stepRow{Name: n, Depth: depth[n], Status: res.Status, Attempts: res.Attempts, Duration: res.Duration,
			ExitCode: res.ExitCode, Provider: res.Provider, Signal: res.Signal, Error: res.Error, Iters: res.IterationsTotal}
		row.Stdout = res.Output != "" || res.SpillStdoutPath != ""
		row.Stderr = logs[filepath.Base(stderrLog(n))] > 0
		if kept := res.OutputFile != ""; kept || withFiles[n] {
			row.Files = s.stepFiles(st.RunID, n, kept)
		}
		v.Steps = append(v.Steps, row)
	}
	s.addUsage(v, st)
	if prog == nil {
		return v
	}
	v.Format = prog.Format
	v.Graph.Blocks = len(prog.Blocks)
	for _, n := range prog.Nodes {
		v.Graph.Clusters = append(v.Graph.Clusters, n.ID)
	}
	v.Graph.Start = "full"
	if len(prog.Blocks) > bigGraph && len(prog.Nodes) > 1 {
		v.Graph.Start = "overview"
	}
	if st.IsHalted {
		v.Signals = prog.Signals(st.HaltedBlock)
	}
	return v
}

// stderrLog is the stderr log of step relative to RUN_ROOT, as the store
// names it (a zero Run's paths are relative).
func stderrLog(step string) string { return new(store.Run).StderrLog(step) }

// stdoutSpill is the spilled stdout of step relative to RUN_ROOT.
func stdoutSpill(step string) string { return new(store.Run).StdoutSpill(step) }

// logSizes maps the regular files of RUN_ROOT/logs of run id to their
// sizes (symlinks left out).
func (s *Server) logSizes(id string) map[string]int64 {
	out := map[string]int64{}
	dir, err := s.resolveRun(filepath.Join(id, "logs"))
	if err != nil {
		return out
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return out
	}
	for _, e := range ents {
		if e.Type().IsRegular() {
			if fi, err := e.Info(); err == nil {
				out[e.Name()] = fi.Size()
			}
		}
	}
	return out
}

// artifactSteps is the set of steps with a folder (not a symlink) under
// WORKSPACE/artifacts.
func (s *Server) artifactSteps() map[string]bool {
	out := map[string]bool{}
	dir, err := s.cfg.Dirs.ResolveIn(s.cfg.Dirs.Workspace, "artifacts")
	if err != nil {
		return out
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return out
	}
	for _, e := range ents {
		if e.IsDir() {
			out[e.Name()] = true
		}
	}
	return out
}

// steprunOutputs is RUN_ROOT/outputs (steprun.OutputsDir; serve does not
// import the workers).
const steprunOutputs = "outputs"

// outputDir is the folder of step's output files in run id: the run's
// copies under RUN_ROOT/outputs/<step>/ when it kept its output_file
// (kept), else WORKSPACE/artifacts/<step>/ (a step that writes files
// there itself, a run made before runs kept their outputs).
func (s *Server) outputDir(id, step string, kept bool) (string, error) {
	if kept {
		return s.resolveRun(filepath.Join(id, steprunOutputs, step))
	}
	return s.cfg.Dirs.ResolveIn(s.artifactsDir(), step)
}

// maxFiles bounds the output files listed for one step.
const maxFiles = 50

// stepFiles lists the step's output files (outputDir), relative to their
// folder, without following symlinks.
func (s *Server) stepFiles(id, step string, kept bool) []string {
	dir, err := s.outputDir(id, step, kept)
	if err != nil {
		return nil
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil
	}
	defer root.Close()
	var out []string
	fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || len(out) >= maxFiles {
			return fs.SkipDir
		}
		if d.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// stepResult returns the result of step in run id (a step the run has).
func (s *Server) stepResult(id, step string) (*vm.State, *vm.StepResult, error) {
	st, err := s.readState(id)
	if err != nil {
		return nil, nil, err
	}
	res, ok := st.Steps[step]
	if !ok {
		return nil, nil, errNotFound("run '" + id + "' has no step '" + step + "'")
	}
	return st, res, nil
}

// apiStdout is GET /api/runs/ID/steps/STEP/stdout: the spilled stdout (the
// file the result names: a loop iteration has its own), or the output kept
// in the state.
func (s *Server) apiStdout(w http.ResponseWriter, r *http.Request) {
	id, step := r.PathValue("id"), r.PathValue("step")
	st, res, err := s.stepResult(id, step)
	if err != nil {
		httpError(w, err)
		return
	}
	spill := stdoutSpill(step)
	if res.SpillStdoutPath != "" {
		spill = filepath.Join(filepath.Dir(spill), filepath.Base(res.SpillStdoutPath))
	}
	text, err := s.readRunFile(id, spill)
	if err != nil {
		text = []byte(res.Output)
	}
	s.writeText(w, st, text)
}

// apiStderr is GET /api/runs/ID/steps/STEP/stderr.
func (s *Server) apiStderr(w http.ResponseWriter, r *http.Request) {
	id, step := r.PathValue("id"), r.PathValue("step")
	st, _, err := s.stepResult(id, step)
	if err != nil {
		httpError(w, err)
		return
	}
	text, err := s.readRunFile(id, stderrLog(step))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		httpError(w, err)
		return
	}
	s.writeText(w, st, text)
}

// apiStepFile is GET /api/runs/ID/steps/STEP/files/PATH: one of the
// step's output files, this run's copy (RUN_ROOT/outputs/STEP/PATH), or
// WORKSPACE/artifacts/STEP/PATH for a run made before runs kept them.
func (s *Server) apiStepFile(w http.ResponseWriter, r *http.Request) {
	id, step, rel := r.PathValue("id"), r.PathValue("step"), r.PathValue("path")
	st, res, err := s.stepResult(id, step)
	if err != nil {
		httpError(w, err)
		return
	}
	dir, err := s.outputDir(id, step, res.OutputFile != "")
	if err != nil {
		httpError(w, errNotFound(err.Error()))
		return
	}
	text, err := readIn(dir, rel)
	if err != nil {
		httpError(w, errNotFound("no file '"+rel+"' of step '"+step+"'"))
		return
	}
	s.writeText(w, st, text)
}

// readRunFile reads rel, relative to RUN_ROOT of id.
func (s *Server) readRunFile(id, rel string) ([]byte, error) {
	root, err := s.resolveRun(id)
	if err != nil {
		return nil, err
	}
	return readIn(root, rel)
}

// openIn opens rel inside dir (a directory confine resolved): rel must be
// local, no component of it may be a symlink, and the open goes through an
// os.Root at dir, so nothing outside dir can be named.
func openIn(dir, rel string) (*os.File, error) {
	if !filepath.IsLocal(rel) {
		return nil, errNotFound("'" + rel + "' is not a path inside " + dir)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	prefix := ""
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		prefix = filepath.Join(prefix, part)
		fi, err := root.Lstat(prefix)
		if err != nil {
			return nil, err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return nil, errNotFound("'" + rel + "' passes through the symlink '" + prefix + "'")
		}
	}
	return root.Open(rel)
}

// openRunFile opens rel, relative to RUN_ROOT of id (see openIn).
func (s *Server) openRunFile(id, rel string) (*os.File, error) {
	root, err := s.resolveRun(id)
	if err != nil {
		return nil, err
	}
	return openIn(root, rel)
}

// readIn reads the regular file rel inside dir (see openIn), its last
// maxText bytes at most.
func readIn(dir, rel string) ([]byte, error) {
	f, err := openIn(dir, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errNotFound(rel + " is not a file")
	}
	if fi.Size() > maxText {
		if _, err := f.Seek(fi.Size()-maxText, io.SeekStart); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(io.LimitReader(f, maxText))
}

// writeText writes text as plain text with the run's secrets masked.
func (s *Server) writeText(w http.ResponseWriter, st *vm.State, text []byte) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	io.WriteString(w, s.masker(st).Replace(string(text)))
}

// apiResume is POST /api/runs/ID/resume (form fields signal and note).
func (s *Server) apiResume(w http.ResponseWriter, r *http.Request) {
	if !s.actionAllowed(w, r, s.cfg.Resume != nil) {
		return
	}
	id := r.PathValue("id")
	st, err := s.readState(id)
	if err != nil {
		httpError(w, err)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	if err := r.ParseForm(); err != nil {
		jsonError(w, http.StatusBadRequest, err.Error())
		return
	}
	signal, note := strings.TrimSpace(r.PostForm.Get("signal")), r.PostForm.Get("note")
	if st.Status == vm.StatusCompleted {
		jsonError(w, http.StatusConflict, "run '"+id+"' already completed; nothing to resume")
		return
	}
	if prog := s.stateProgram(st); prog != nil {
		// The same check as smithvm resume's (which Resume makes again).
		if err := vm.CheckResumeSignal(prog, st, signal); err != nil {
			jsonError(w, http.StatusBadRequest, string(source.EUnknownSignal)+": "+err.Error())
			return
		}
	}
	if err := s.cfg.Resume(id, signal, note); err != nil {
		resumeRefused(w, err)
		return
	}
	accepted(w)
}

// jsonError writes {"error": msg} with status.
func jsonError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
