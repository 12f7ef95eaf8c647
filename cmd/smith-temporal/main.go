// Command smith-temporal runs Smith workflows on Temporal (CONTRACT 14):
// the same programs as smithvm, with the run's durability, its halts and
// its steps spread over a fleet of workers pulling from a task queue.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"smith/cmd/smith-temporal/engine"
	"smith/compiler"
	"smith/internal/buildversion"
	"smith/internal/shellcomp"
	"smith/source"
	"smith/vm"
	"smith/vm/store"
	"smith/workers/confine"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = `smith-temporal: run Smith workflows on Temporal

Usage:
  smith-temporal dev [--db FILE] [--port 7233] [--namespace default]
  smith-temporal worker --address HOST:PORT [--namespace default] [--task-queue smith] [--base BASE] [--host-queue Q] [--shared-workspace]
  smith-temporal run FILE --address HOST:PORT [--run-id ID] [--context k=v] [--detach] [--max-steps N] [--max-parallel N]
  smith-temporal resume RUN_ID [--signal SIGNAL:X] [--note TEXT] --address HOST:PORT [--max-steps N]
  smith-temporal status RUN_ID --address HOST:PORT [--json]
  smith-temporal completion bash|zsh|fish
  smith-temporal --version

To try it: 'smith-temporal dev' starts a development server on
127.0.0.1:7233; then run a worker and a workflow with --address 127.0.0.1:7233.

One Temporal workflow per Smith run (workflow id = run id). Workers execute
the runs' steps in BASE/workspace; every worker and client of a fleet uses
the same --blobs store (a directory, default BASE/.orchestrator/blobs, or
s3://BUCKET/PREFIX), where the program, values over 64 KiB and a snapshot of
the run's WORKSPACE after each step are kept by reference: a run's files
follow it to any worker.

Production clusters: every command that talks to Temporal takes --tls-cert,
--tls-key, --tls-ca, --tls-server-name (mTLS) and --api-key (Temporal Cloud),
or the variables SMITH_TEMPORAL_TLS_CERT, _TLS_KEY, _TLS_CA, _TLS_SERVER_NAME
and SMITH_TEMPORAL_API_KEY.
Run 'smith-temporal COMMAND --help' for a command's flags.

Exit status as smithvm's: 0 success, 1 a step failed, 2 configuration
error, 3 a path escapes the project, 4 halted awaiting resume, 124 a step
timed out.
`

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "step-host" { // internal: no flags, not in usage or completion
		return cmdStepHost(args[1:], stdin, stdout, stderr)
	}
	cmds := commands()
	return program().Run(args, usage, buildversion.Get(), stdout, stderr, func(i int, rest []string) int {
		return cmds[i].Run(rest, stdout, stderr)
	})
}

// conn holds the flags every command that talks to Temporal shares.
type conn struct {
	address, namespace, queue, base, blobs string
	tls                                    tlsFlags
	store                                  *engine.Blobs // --blobs opened by resolve
}

func (c *conn) add(fs *pflag.FlagSet) {
	fs.StringVar(&c.address, "address", "", "the Temporal frontend, HOST:PORT (required)")
	fs.StringVar(&c.namespace, "namespace", "default", "the Temporal namespace")
	fs.StringVar(&c.queue, "task-queue", engine.DefaultQueue, "the task queue the workers pull from")
	fs.StringVar(&c.base, "base", "", "the project directory BASE (default: the current directory)")
	fs.StringVar(&c.blobs, "blobs", "", "the blob store shared by every worker and client: a directory, file:///PATH or\ns3://BUCKET/PREFIX?region=R&endpoint=URL (default BASE/.orchestrator/blobs)")
	c.tls.add(fs)
}

// resolve fills the defaults that depend on BASE.
func (c *conn) resolve() error {
	if err := c.tls.resolve(os.Getenv); err != nil {
		return err
	}
	if c.address == "" {
		return source.Errorf(source.EUsage, "--address HOST:PORT is required")
	}
	if c.base == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		c.base = wd
	}
	abs, err := filepath.Abs(c.base)
	if err != nil {
		return err
	}
	c.base = abs
	if c.blobs == "" {
		c.blobs = filepath.Join(abs, ".orchestrator", "blobs")
	}
	c.store, err = engine.OpenBlobs(context.Background(), c.blobs)
	return err
}

func (c *conn) dial() (client.Client, error) {
	opts := client.Options{
		HostPort:      c.address,
		Namespace:     c.namespace,
		DataConverter: c.dc(),
		Logger:        quietLogger{},
	}
	if err := c.tls.apply(&opts); err != nil {
		return nil, err
	}
	cl, err := client.Dial(opts)
	if err != nil {
		return nil, &source.Error{Code: source.ETemporalConn, Msg: fmt.Sprintf("cannot reach the Temporal server at %s (namespace %s)", c.address, c.namespace),
			Err: err, Hint: "is one running there? ('smith-temporal dev' starts one on 127.0.0.1:7233)"}
	}
	return cl, nil
}

// noNamespace is the E_TEMPORAL_CONNECT error of a server that lacks
// --namespace, and nil for any other err.
func (c *conn) noNamespace(err error) error {
	var nsErr *serviceerror.NamespaceNotFound
	if !errors.As(err, &nsErr) {
		return nil
	}
	return source.Errorf(source.ETemporalConn, "--namespace %s: the Temporal server at %s has no such namespace", c.namespace, c.address)
}

// dc is the fleet's data converter: JSON, values over 64 KiB in --blobs.
func (c *conn) dc() converter.DataConverter { return engine.DataConverter(c.store) }

// flagVals holds the values of every command's flags.
type flagVals struct {
	conn
	hostQueue, runID, sig, note    string
	ctxKV                          []string
	shared, detach, asJSON         bool
	maxSteps, historyLimit, maxPar int
	dev                            devVals
}

// fail prints err, a failure of command name ("smith-temporal run"): one
// that carries a code as a refusal in the one form of every program's,
// "smith-temporal COMMAND: CODE: message" (shellcomp.Fail), returning its
// code's exit status; another as "smith-temporal COMMAND: message",
// returning st.
func fail(stderr io.Writer, name string, err error, st int) int {
	var c source.Coded
	if errors.As(err, &c) {
		return shellcomp.Fail(stderr, name, c.ErrCode(), "%v", err)
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	return st
}

// A command is one row of the command table.
type command = shellcomp.Row[flagVals]

// commands are smith-temporal's user commands in the usage's order
// (step-host is internal): the one table that dispatch, the did-you-mean
// of an unknown command and the completion scripts read. (A function, not
// a variable: completion's run reads the table.)
func commands() []command {
	return []command{
		{Flags: devFlags, Run: cmdDev},
		{Flags: workerFlags, Run: cmdWorker},
		{Flags: runFlags, Run: cmdRun},
		{Flags: resumeFlags, Run: cmdResume},
		{Flags: statusFlags, Run: cmdStatus},
		{Flags: completionFlags, Run: cmdCompletion},
	}
}

func workerFlags(v *flagVals, stderr io.Writer) *pflag.FlagSet {
	fs := newFlags("worker", "--address HOST:PORT [flags]", "Runs a worker: it executes the workflows (the VM) and the steps of Smith runs\nfrom the task queue until SIGINT or SIGTERM. Steps run in BASE/workspace.\n\nThe worker also pulls from a queue of its own host and BASE (--host-queue):\na run with isolation: git-worktree keeps its worktree on the host that created\nit and sends every later step there. A worker restarted with the same\n--base and --host-queue takes those runs up again.\n", stderr)
	v.conn.add(fs)
	fs.StringVar(&v.hostQueue, "host-queue", "", "the task queue of this host and BASE (default TASK-QUEUE@HOSTNAME-HASH, HASH from BASE)")
	fs.BoolVar(&v.shared, "shared-workspace", false, "BASE is one directory shared by every worker of the fleet (the same mount on every host):\nisolated runs are not kept on one host")
	return fs
}

func runFlags(v *flagVals, stderr io.Writer) *pflag.FlagSet {
	fs := newFlags("run", "FILE --address HOST:PORT [flags]", "Compiles FILE (exit 2, or 3 for a path escape, on any error) and starts it as a\nTemporal workflow whose id is the run id. Without --detach it waits for the\nrun to end (or halt) and exits with its status.\n", stderr)
	v.conn.add(fs)
	fs.StringVar(&v.runID, "run-id", "", "the run id (default: generated)")
	fs.StringArrayVar(&v.ctxKV, "context", nil, "KEY=VALUE overriding a context key (repeatable; KEY may be dotted)")
	fs.BoolVar(&v.detach, "detach", false, "print the run id and return at once")
	fs.BoolVar(&v.asJSON, "json", false, "print the final state as JSON")
	fs.IntVar(&v.maxSteps, "max-steps", vm.DefaultMaxSteps, "fail the run with E_STEP_BUDGET after `N` executed steps (every thread's steps count)")
	fs.IntVar(&v.maxPar, "max-parallel", 0, "run at most `N` iterations or branches of a parallel step at once (default: each step's own parallel: or max:)")
	fs.IntVar(&v.historyLimit, "history-limit", 0, "continue the run as new once its history holds `N` events (default 3000)")
	return fs
}

func resumeFlags(v *flagVals, stderr io.Writer) *pflag.FlagSet {
	fs := newFlags("resume", "RUN_ID --address HOST:PORT [flags]", "Resumes a halted run (CONTRACT 7.4): the halted block runs again, or with\n--signal its transition for that signal is taken; --note first appends a\nUSER_NOTE segment. A failed run goes on from its failed step in the workflow\ncompiled again (its completed steps are kept), as a new execution of its\nworkflow. Waits for the run to end (or halt again) unless --detach.\n", stderr)
	v.conn.add(fs)
	fs.StringVar(&v.sig, "signal", "", "take the halted block's transition for SIGNAL:X instead of running it")
	fs.StringVar(&v.note, "note", "", "append a USER_NOTE segment with TEXT first")
	fs.BoolVar(&v.detach, "detach", false, "send the resume and return at once")
	fs.BoolVar(&v.asJSON, "json", false, "print the final state as JSON")
	fs.IntVar(&v.maxSteps, "max-steps", vm.DefaultMaxSteps, "fail the run with E_STEP_BUDGET after `N` executed steps of this resume")
	return fs
}

func statusFlags(v *flagVals, stderr io.Writer) *pflag.FlagSet {
	fs := newFlags("status", "RUN_ID --address HOST:PORT [--json]", "Prints a run's state as the Temporal server holds it (the workflow's memo, a\nclosed run's result; no worker needed): status, current step, step results.\n--json prints the state in the shape of state.json: the whole state of a\nhalted or ended run; of a running one, asked of the workflow when a worker\nruns, else what the memo holds. A step the run no longer runs (its workflow\nended on Temporal while the step ran: terminated, timed out) reads\ninterrupted, in the table and --json alike.\n", stderr)
	v.conn.add(fs)
	fs.BoolVar(&v.asJSON, "json", false, "print the state as JSON (the shape of state.json)")
	return fs
}

func newFlags(name, synopsis, help string, stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet("smith-temporal "+name, pflag.ContinueOnError)
	fs.SortFlags = false
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: smith-temporal %s %s\n\n%s\nFlags:\n%s", name, synopsis, help, fs.FlagUsages())
	}
	return fs
}

// parse parses args; done is true when the command must stop now.
func parse(fs *pflag.FlagSet, args []string, nargs int, stdout, stderr io.Writer) (int, bool) {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return 0, true
		}
		return shellcomp.Refuse(stderr, fs.Name(), "%v (see --help)", err), true
	}
	if nargs >= 0 && fs.NArg() != nargs {
		return shellcomp.Refuse(stderr, fs.Name(), "want %d argument(s), got %d (see --help)", nargs, fs.NArg()), true
	}
	return 0, false
}

func cmdWorker(args []string, stdout, stderr io.Writer) int {
	var v flagVals
	fs := workerFlags(&v, stderr)
	if st, done := parse(fs, args, 0, stdout, stderr); done {
		return st
	}
	c, hostQueue, shared := v.conn, v.hostQueue, v.shared
	if err := c.resolve(); err != nil {
		return fail(stderr, "smith-temporal worker", err, source.ExitConfig)
	}
	dirs, err := confine.New(c.base)
	if err != nil {
		fmt.Fprintf(stderr, "smith-temporal worker: %v\n", err)
		return source.ExitConfig
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "smith-temporal worker: %v\n", err)
		return source.ExitExec
	}
	cl, err := c.dial()
	if err != nil {
		return fail(stderr, "smith-temporal worker", err, source.ExitConfig)
	}
	defer cl.Close()
	if hostQueue == "" {
		hostQueue = defaultHostQueue(c.queue, c.base)
	}
	acts := &engine.Activities{Base: c.base, Exe: exe, HostQueue: hostQueue, Blobs: c.store}
	if shared {
		acts.HostQueue = ""
	}
	w := worker.New(cl, c.queue, worker.Options{})
	engine.Register(w, &engine.Workflows{Dirs: dirs, Blobs: c.store}, acts)
	hw := worker.New(cl, hostQueue, worker.Options{})
	engine.RegisterHostActivities(hw, acts)
	if err := hw.Start(); err != nil {
		if nerr := c.noNamespace(err); nerr != nil { // a flag names what the server lacks: configuration
			return fail(stderr, "smith-temporal worker", nerr, source.ExitConfig)
		}
		fmt.Fprintf(stderr, "smith-temporal worker: host queue %s: %v\n", hostQueue, err)
		return source.ExitExec
	}
	defer hw.Stop()
	fmt.Fprintf(stdout, "smith-temporal worker: task queue %s on %s, BASE %s, host queue %s\n", c.queue, c.address, c.base, hostQueue)
	if err := w.Run(worker.InterruptCh()); err != nil {
		fmt.Fprintf(stderr, "smith-temporal worker: %v\n", err)
		return source.ExitExec
	}
	return 0
}

// defaultHostQueue names the queue of this host and BASE: the same for a
// worker restarted there, different for another BASE on the same host
// (another project, another worktree directory).
func defaultHostQueue(queue, base string) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	sum := sha256.Sum256([]byte(base))
	return queue + "@" + host + "-" + hex.EncodeToString(sum[:4])
}

func cmdRun(args []string, stdout, stderr io.Writer) int {
	var v flagVals
	fs := runFlags(&v, stderr)
	if st, done := parse(fs, args, 1, stdout, stderr); done {
		return st
	}
	c, runID, ctxKV, detach, asJSON := v.conn, v.runID, v.ctxKV, v.detach, v.asJSON
	maxSteps, historyLimit, maxPar := v.maxSteps, v.historyLimit, v.maxPar
	if maxSteps < 1 || historyLimit < 0 || maxPar < 0 {
		return shellcomp.Refuse(stderr, "smith-temporal run", "--max-steps must be at least 1, --history-limit and --max-parallel at least 0")
	}
	if err := c.resolve(); err != nil {
		return fail(stderr, "smith-temporal run", err, source.ExitConfig)
	}
	ctxVals := map[string]any{}
	for _, kv := range ctxKV {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.HasPrefix(k, ".") || strings.HasSuffix(k, ".") || strings.Contains(k, "..") {
			return shellcomp.Refuse(stderr, "smith-temporal run", "--context %q: want KEY=VALUE (KEY may be a dotted path: a.b=v)", kv)
		}
		setPath(ctxVals, k, v)
	}
	if runID != "" && !store.ValidRunID(runID) {
		return shellcomp.Refuse(stderr, "smith-temporal run", "--run-id %q: want [A-Za-z0-9_.-]{1,64}", runID)
	}
	file := fs.Arg(0)
	keys := make([]string, 0, len(ctxVals))
	for k := range ctxVals {
		keys = append(keys, k)
	}
	p, ds := compiler.LoadProgram(file, compiler.Options{ContextKeys: keys})
	ds.Sort()
	ds.WriteText(stderr)
	if st := ds.ExitStatus(); st != 0 || p == nil {
		return max(st, source.ExitConfig)
	}
	code, err := p.MarshalBinary()
	if err != nil {
		fmt.Fprintf(stderr, "smith-temporal run: %v\n", err)
		return source.ExitConfig
	}
	ref, err := c.store.Put(code)
	if err != nil {
		fmt.Fprintf(stderr, "smith-temporal run: %v\n", err)
		return source.ExitConfig
	}
	if runID == "" {
		runID = store.NewRunID()
	}
	abs, _ := filepath.Abs(file)
	cl, err := c.dial()
	if err != nil {
		return fail(stderr, "smith-temporal run", err, source.ExitConfig)
	}
	defer cl.Close()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	in := engine.Input{RunID: runID, WorkflowPath: abs, ProgramRef: ref, Context: ctxVals,
		MaxSteps: maxSteps, MaxParallel: maxPar, HistoryLimit: historyLimit}
	// A run id names one run for good: neither a run in flight nor an
	// ended one is started again under it (smithvm refuses it as well).
	_, err = cl.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: runID, TaskQueue: c.queue,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE}, engine.WorkflowName, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return shellcomp.Refuse(stderr, "smith-temporal run", "run '%s' already exists", runID)
	}
	if nerr := c.noNamespace(err); nerr != nil {
		return fail(stderr, "smith-temporal run", nerr, source.ExitConfig)
	}
	if err != nil {
		fmt.Fprintf(stderr, "smith-temporal run: start %s: %v\n", runID, err)
		return source.ExitConfig
	}
	fmt.Fprintf(stderr, "INFO: run %s started on Temporal (task queue %s)\n", runID, c.queue)
	if detach {
		fmt.Fprintln(stdout, runID)
		return 0
	}
	return wait(ctx, cl, runID, 0, asJSON, stdout, stderr)
}

// wait follows the run until it ends or halts, printing its console lines
// after event_seq seen (polled with the progress query), and returns its
// exit status.
func wait(ctx context.Context, cl client.Client, runID string, seen int, asJSON bool, stdout, stderr io.Writer) int {
	done := make(chan struct{})
	var out engine.Output
	var gerr error
	go func() {
		defer close(done)
		gerr = cl.GetWorkflow(ctx, runID, "").Get(ctx, &out)
	}()
	// follow prints the lines not printed yet; it returns the run's status.
	follow := func(ctx context.Context) string {
		v, err := cl.QueryWorkflow(ctx, runID, "", engine.ProgressQuery, seen)
		var p engine.Progress
		if err != nil || v.Get(&p) != nil {
			return ""
		}
		for _, l := range p.Lines {
			if l.Seq > seen {
				fmt.Fprintln(stderr, l.Text)
				seen = l.Seq
			}
		}
		return p.Status
	}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			if gerr != nil {
				// A failed Smith run is a failed workflow: its Output is
				// the failure's details.
				o, ok := failedOutput(gerr)
				if !ok {
					fmt.Fprintf(stderr, "smith-temporal: run %s: %v\n", runID, gerr)
					return source.ExitExec
				}
				out = *o
			}
			// The last lines: in the result, or the closed workflow
			// answers the query too (runs of older workers, a client
			// more than 100 lines behind).
			if len(out.Lines) > 0 && out.Lines[0].Seq <= seen+1 {
				for _, l := range out.Lines {
					if l.Seq > seen {
						fmt.Fprintln(stderr, l.Text)
						seen = l.Seq
					}
				}
			} else {
				qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				follow(qctx)
				cancel()
			}
			return report(runID, &out, asJSON, stdout, stderr)
		case <-tick.C:
			if follow(ctx) != vm.StatusHalted {
				continue
			}
			st, err := queryState(ctx, cl, runID)
			if err == nil && st != nil && st.Status == vm.StatusHalted {
				return report(runID, &engine.Output{ExitCode: source.ExitHalted, State: st,
					Message: "run halted awaiting resume"}, asJSON, stdout, stderr)
			}
		case <-ctx.Done():
			fmt.Fprintf(stderr, "INFO: stopped waiting; run %s goes on on Temporal (smith-temporal status %s)\n", runID, runID)
			return source.ExitInterrupted
		}
	}
}

// report prints how the run ended.
func report(runID string, out *engine.Output, asJSON bool, stdout, stderr io.Writer) int {
	if asJSON && out.State != nil {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(out.State)
	}
	switch out.ExitCode {
	case 0:
		fmt.Fprintf(stderr, "INFO: run %s completed\n", runID)
	case source.ExitHalted:
		fmt.Fprintf(stderr, "INFO: run %s halted; resume with 'smith-temporal resume %s' (add --signal SIGNAL:X to take a transition, --note TEXT to answer)\n", runID, runID)
	default:
		code := out.Code
		if code == "" {
			code = string(source.EStepFailed)
		}
		fmt.Fprintf(stderr, "ERROR: %s: %s\n", code, out.Message)
	}
	return out.ExitCode
}

func queryState(ctx context.Context, cl client.Client, runID string) (*vm.State, error) {
	v, err := cl.QueryWorkflow(ctx, runID, "", engine.StatusQuery)
	if err != nil {
		return nil, err
	}
	var st *vm.State
	if err := v.Get(&st); err != nil {
		return nil, err
	}
	return st, nil
}

func cmdResume(args []string, stdout, stderr io.Writer) int {
	var v flagVals
	fs := resumeFlags(&v, stderr)
	if st, done := parse(fs, args, 1, stdout, stderr); done {
		return st
	}
	c, sig, note, detach, asJSON, maxSteps := v.conn, v.sig, v.note, v.detach, v.asJSON, v.maxSteps
	if maxSteps < 1 {
		return shellcomp.Refuse(stderr, "smith-temporal resume", "--max-steps must be at least 1")
	}
	if err := c.resolve(); err != nil {
		return fail(stderr, "smith-temporal resume", err, source.ExitConfig)
	}
	if sig != "" && !strings.HasPrefix(sig, "SIGNAL:") {
		return shellcomp.Refuse(stderr, "smith-temporal resume", "--signal %q: want SIGNAL:NAME", sig)
	}
	runID := fs.Arg(0)
	cl, err := c.dial()
	if err != nil {
		return fail(stderr, "smith-temporal resume", err, source.ExitConfig)
	}
	defer cl.Close()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	// What the server holds: no worker needs to run (the signal waits
	// for the next worker).
	l, err := lookAt(ctx, cl, c.dc(), runID)
	if err != nil {
		return notFound("resume", &c, runID, err, stderr)
	}
	st := l.state(runID)
	if !l.closed() && l.brief == nil {
		// A run of older workers, or one not started yet: ask it.
		if st, err = queryState(ctx, cl, runID); err != nil {
			return notFound("resume", &c, runID, err, stderr)
		}
	}
	switch {
	case st != nil && st.Status == vm.StatusCompleted:
		fmt.Fprintf(stderr, "INFO: run %s is completed: nothing to do\n", runID)
		return 0
	case l.closed() && l.out != nil && l.out.State != nil && (st.Status == vm.StatusFailed || st.Status == vm.StatusInterrupted):
		return restart(ctx, cl, &c, runID, l.out, engine.ResumeRequest{Signal: sig, Note: note, MaxSteps: maxSteps}, detach, asJSON, stdout, stderr)
	case l.closed():
		return shellcomp.Fail(stderr, "smith-temporal resume", source.EStateNotFound, "run %s is %s: it was ended outside Smith (terminated, cancelled or timed out on Temporal) and the server holds no state of it to continue from; start the workflow again with 'smith-temporal run FILE'", runID, statusWord(l, nil))
	case st == nil || st.Status != vm.StatusHalted:
		return shellcomp.Fail(stderr, "smith-temporal resume", source.ERunLocked, "run %s is %s, not halted: Temporal drives it already", runID, statusWord(l, st))
	}
	if err := cl.SignalWorkflow(ctx, runID, "", engine.ResumeSignal, engine.ResumeRequest{Signal: sig, Note: note, MaxSteps: maxSteps}); err != nil {
		fmt.Fprintf(stderr, "smith-temporal resume: %v\n", err)
		return source.ExitExec
	}
	if detach {
		return 0
	}
	// Wait until the run has left the halt before following it.
	for i := 0; i < 200; i++ {
		if l, err := lookAt(ctx, cl, c.dc(), runID); err == nil && (l.closed() || l.brief == nil ||
			l.brief.Status != vm.StatusHalted || l.brief.Seq != st.Seq) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	return wait(ctx, cl, runID, st.EventSeq, asJSON, stdout, stderr)
}

// notFound reports why run runID could not be read on the server (for
// command cmd).
// restart resumes a failed run as smithvm resume does: the workflow
// recompiled, its completed steps kept, the failed step run again. The
// failed workflow execution has ended for good, so the resume is a new
// execution of the same workflow id that starts from the failed one's
// state and WORKSPACE snapshot, as a continue-as-new does.
func restart(ctx context.Context, cl client.Client, c *conn, runID string, out *engine.Output, req engine.ResumeRequest, detach, asJSON bool, stdout, stderr io.Writer) int {
	st := out.State
	if req.Signal != "" || req.Note != "" {
		flag := "--signal"
		if req.Signal == "" {
			flag = "--note"
		}
		return shellcomp.Refuse(stderr, "smith-temporal resume", "run %s is %s, not halted: %s answers a halted run; resume it without %s", runID, st.Status, flag, flag)
	}
	in, err := lastInput(ctx, cl, c.dc(), runID)
	if err != nil {
		fmt.Fprintf(stderr, "smith-temporal resume: run %s: %v\n", runID, err)
		return source.ExitExec
	}
	keys := make([]string, 0, len(st.Context))
	for k := range st.Context {
		keys = append(keys, k)
	}
	p, ds := compiler.LoadProgram(st.WorkflowPath, compiler.Options{ContextKeys: keys})
	ds.Sort()
	ds.WriteText(stderr)
	if code := ds.ExitStatus(); code != 0 || p == nil {
		return max(code, source.ExitConfig)
	}
	code, err := p.MarshalBinary()
	if err == nil {
		in.ProgramRef, err = c.store.Put(code)
	}
	if err != nil {
		fmt.Fprintf(stderr, "smith-temporal resume: %v\n", err)
		return source.ExitConfig
	}
	in.Program = nil
	in.State, in.Resume, in.Halted, in.Executed = st, nil, false, 0
	in.MaxSteps, in.Lines = req.MaxSteps, out.Lines
	in.Env = nil // read again: the worker's environment now, as a local resume's
	if out.Files != "" {
		in.Files = out.Files
	}
	_, err = cl.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: runID, TaskQueue: c.queue,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY}, engine.WorkflowName, in)
	if err != nil {
		return shellcomp.Fail(stderr, "smith-temporal resume", source.ERunLocked, "run %s: %v", runID, err)
	}
	fmt.Fprintf(stderr, "INFO: run %s resumed on Temporal from step %s (task queue %s)\n", runID, st.CurrentStep, c.queue)
	if detach {
		return 0
	}
	return wait(ctx, cl, runID, st.EventSeq, asJSON, stdout, stderr)
}

// lastInput is the input of the last execution of run runID's workflow.
func lastInput(ctx context.Context, cl client.Client, dc converter.DataConverter, runID string) (engine.Input, error) {
	var in engine.Input
	it := cl.GetWorkflowHistory(ctx, runID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !it.HasNext() {
		return in, errors.New("its workflow has no history")
	}
	ev, err := it.Next()
	if err != nil {
		return in, err
	}
	a := ev.GetWorkflowExecutionStartedEventAttributes()
	if a == nil {
		return in, errors.New("its workflow's history does not start with its input")
	}
	return in, dc.FromPayloads(a.GetInput(), &in)
}

func notFound(cmd string, c *conn, runID string, err error, stderr io.Writer) int {
	if nerr := c.noNamespace(err); nerr != nil {
		return fail(stderr, "smith-temporal "+cmd, nerr, source.ExitConfig)
	}
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return shellcomp.Fail(stderr, "smith-temporal "+cmd, source.EStateNotFound, "no run %s on Temporal", runID)
	}
	fmt.Fprintf(stderr, "smith-temporal: run %s: %v\n", runID, err)
	return source.ExitConfig
}

func cmdStatus(args []string, stdout, stderr io.Writer) int {
	var v flagVals
	fs := statusFlags(&v, stderr)
	if st, done := parse(fs, args, 1, stdout, stderr); done {
		return st
	}
	c, asJSON := v.conn, v.asJSON
	if err := c.resolve(); err != nil {
		return fail(stderr, "smith-temporal status", err, source.ExitConfig)
	}
	cl, err := c.dial()
	if err != nil {
		return fail(stderr, "smith-temporal status", err, source.ExitConfig)
	}
	defer cl.Close()
	runID := fs.Arg(0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// What the server holds (the memo, a closed run's result): no worker
	// needs to run.
	l, err := lookAt(ctx, cl, c.dc(), runID)
	if err != nil {
		return notFound("status", &c, runID, err, stderr)
	}
	st := l.state(runID)
	if !l.closed() && (l.brief == nil || asJSON && l.halted == nil) && hasWorker(ctx, cl, c.queue) {
		// The whole state of a running run (or of one of older workers)
		// is the workflow's: ask it (a query, answered by a worker).
		qs, err := queryState(ctx, cl, runID)
		if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			fmt.Fprintf(stderr, "smith-temporal status: no worker answered within 30 s: is a worker running on task queue %s?\n", c.queue)
			return source.ExitExec
		}
		if err != nil {
			return notFound("status", &c, runID, err, stderr)
		}
		if qs != nil {
			st = qs
		}
	}
	if st == nil {
		fmt.Fprintf(stdout, "run %s: %s\n", runID, statusWord(l, nil))
		return 0
	}
	// A step (or thread) the state still records running reads
	// interrupted when the run no longer runs, as smithvm status shows
	// it: the run does not run (failed, halted), or its workflow ended on
	// Temporal while its state says running (terminated or timed out, or
	// failed outside Smith): nothing drives it any more.
	cutOff := l.closed() && st.Status == vm.StatusRunning
	st = st.Shown(cutOff)
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(st)
		return 0
	}
	fmt.Fprintf(stdout, "run %s: %s (workflow %s), current step %s\n", st.RunID, st.Status, st.WorkflowName, st.CurrentStep)
	if cutOff {
		fmt.Fprintf(stdout, "  cut off: its workflow is %s and nothing drives the run; start the workflow again with 'smith-temporal run FILE'\n", statusWord(l, nil))
	}
	if st.WorktreePath != "" {
		var q string
		if l.brief != nil {
			q = l.brief.HostQueue
		} else if v, err := cl.QueryWorkflow(ctx, runID, "", engine.HostQuery); err == nil {
			v.Get(&q)
		}
		if q != "" {
			fmt.Fprintf(stdout, "  worktree %s on host queue %s (its steps run only there)\n", st.WorktreePath, q)
		} else {
			fmt.Fprintf(stdout, "  worktree %s in the fleet's shared WORKSPACE (its steps run on any worker)\n", st.WorktreePath)
		}
	}
	for _, name := range sortedSteps(st) {
		r := st.Steps[name]
		fmt.Fprintf(stdout, "  %-24s %-9s exit %d\n", name, r.Status, r.ExitCode)
	}
	return 0
}

// cmdStepHost runs a worker's steps (its child; not for users): requests
// on stdin, results on stdout, a line each (engine.ServeSteps). SIGTERM
// (the worker died) or the end of stdin cancels every step, which kills
// its process group.
func cmdStepHost(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("step-host", "--base BASE", "Internal: runs a worker's steps.\n", stderr)
	base := fs.String("base", "", "the project directory")
	if st, done := parse(fs, args, 0, stdout, stderr); done {
		return st
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := engine.ServeSteps(ctx, *base, stdin, stdout, os.LookupEnv); err != nil {
		fmt.Fprintf(stderr, "step-host: %v\n", err)
		return source.ExitExec
	}
	return 0
}

// setPath sets a dotted key (a.b.c) in m, creating nested objects, as
// smithvm's --context does.
func setPath(m map[string]any, key string, v any) {
	parts := strings.Split(key, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = v
}

// quietLogger drops the SDK's informational logging; warnings and errors
// go to stderr.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(msg string, kv ...any) {
	fmt.Fprintln(os.Stderr, append([]any{"temporal: WARN", msg}, kv...)...)
}
func (quietLogger) Error(msg string, kv ...any) {
	fmt.Fprintln(os.Stderr, append([]any{"temporal: ERROR", msg}, kv...)...)
}

var _ log.Logger = quietLogger{}

// statusWord names a run's status: Smith's when known, else Temporal's
// ("starting" for a running workflow with no state yet).
func statusWord(l *look, st *vm.State) string {
	switch {
	case st != nil:
		return st.Status
	case l.closed():
		return strings.ToLower(l.status.String()) + " on Temporal"
	}
	return "starting"
}

// sortedSteps lists the state's steps by name.
func sortedSteps(st *vm.State) []string {
	names := make([]string, 0, len(st.Steps))
	for n := range st.Steps {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
