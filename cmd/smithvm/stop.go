package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"smith/source"
	"smith/vm"
	"smith/vm/store"
	"smith/workers/proc"
)

// stopSignal is the signal `smithvm stop` sends the process driving a run
// (the pid in its lock), after writing the run's stop request: that
// process may drive several runs (serve), so the request says which.
const stopSignal = syscall.SIGUSR1

// stopWait bounds how long `smithvm stop` waits for the driver to save the
// run and let go of it: the step's grace (SIGTERM, then SIGKILL 10 s
// later) and some.
const stopWait = 30 * time.Second

// pidWait bounds how long `smithvm stop` waits for the process that holds
// a run's lock to write its pid into it.
const pidWait = 2 * time.Second

// catchStop catches the stop signal for the rest of the process, before
// it takes a run's lock: `smithvm stop` may signal it as soon as the lock
// names it, before its run watches for the request (stoppable), and the
// signal's default action would end the process then and there.
func (e *env) catchStop() {
	if !e.stopCaught {
		signal.Notify(make(chan os.Signal, 1), stopSignal)
		e.stopCaught = true
	}
}

// stoppable returns ctx cancelled also when run r is asked to stop
// (RequestStop, then stopSignal to this process): the run then ends as an
// interrupt ends it, interrupted and resumable. done ends the watch. The
// signal stays caught for the rest of the process: one sent just after
// the run ended (its driver found by stop a moment before) must not kill
// the process, which may be a server driving other runs.
func stoppable(ctx context.Context, r *store.Run) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, stopSignal)
	if r.StopRequested() {
		// Asked (and signalled) after the run was opened, before this
		// watch: the signal went to catchStop.
		cancel()
	}
	quit := make(chan struct{})
	go func() {
		for {
			select {
			case <-ch:
				if r.StopRequested() {
					cancel()
					return
				}
			case <-quit:
				return
			}
		}
	}()
	return ctx, func() {
		close(quit)
		cancel()
	}
}

func (e *env) stopFlags(v *flagVals) *pflag.FlagSet {
	fs := e.newFlags("stop", "RUN_ID [flags]", fmt.Sprintf("Stops a running run from another terminal as Ctrl-C would: the step's process\ngroup gets SIGTERM (SIGKILL %s later), the state is saved and the run\nends interrupted, resumable (smithvm resume or retry). It waits for the\nprocess driving the run to let go of it. Stopping a run that is not running\n(or that completed, failed or halted by itself while stop waited) says so,\nexit 0.\n", proc.DefaultKillGrace))
	v.addBase(fs)
	return fs
}

func (e *env) cmdStop(args []string) int {
	var c flagVals
	fs := e.stopFlags(&c)
	if st, done := e.parse(fs, args, 1); done {
		return st
	}
	id := fs.Arg(0)
	// The run is stopped before its state is read: a run that has just
	// started may have none yet, which is no reason not to stop it.
	base, code, ok := e.locateBase(c.base, id)
	if !ok {
		return code
	}
	proj, err := e.project(base)
	if err != nil {
		e.failErr(err, source.EUsage, "")
		return source.ExitConfig
	}
	stopped, err := stopRun(proj.store, id, true)
	if err != nil {
		return e.failErr(err, source.EInternal, notFoundHint(err, proj))
	}
	if !stopped {
		_, st, code := e.readRun(base, id)
		if st == nil {
			return code
		}
		e.notRunning(st)
		return 0
	}
	now, err := proj.store.ReadState(id)
	if err != nil {
		// Stopped before it saved a state: nothing to resume.
		fmt.Fprintf(e.stderr, "INFO: Run %s stopped before it saved a state (%v).\n", id, err)
		return 0
	}
	if now.Status != vm.StatusInterrupted {
		// It ended on its own (completed, failed, halted) or its driver
		// died while stop waited: the stop ended nothing, and a completed
		// run has nothing to resume.
		e.notRunning(now)
		return 0
	}
	fmt.Fprintf(e.stderr, "INFO: Run %s stopped: %s at '%s'; resume with '%s resume %s%s'.\n", id, now.Status, now.CurrentStep, e.self(), id, baseFlagOf(e, proj.base))
	return 0
}

// notRunning says that run st, found not running by stop (or ended by
// itself while stop waited for it), has nothing to stop.
func (e *env) notRunning(st *vm.State) {
	why := "status: " + st.Status
	if st.Status == vm.StatusRunning {
		why = store.CutOffNote // its state says running, but no process drives it
	}
	fmt.Fprintf(e.stderr, "INFO: Run %s is not running (%s); nothing to stop.\n", st.RunID, why)
}

// stopRun asks the process driving run id to stop it (the stop request,
// then stopSignal to the pid in the run's lock) and, with wait, waits
// until that process has saved the run and let go of its lock. stopped
// is false when no process drives the run.
func stopRun(s *store.Store, id string, wait bool) (stopped bool, err error) {
	pid, running, err := s.Driver(id)
	// A process writes its pid into the lock just after taking it: a stop
	// at that instant waits for the pid (or for the lock to go).
	for deadline := time.Now().Add(pidWait); err == nil && running && pid <= 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		pid, running, err = s.Driver(id)
	}
	if err != nil || !running {
		return false, err
	}
	if pid <= 0 {
		return false, fmt.Errorf("run '%s' is locked but its lock names no process", id)
	}
	if err := s.RequestStop(id); err != nil {
		return false, err
	}
	if err := syscall.Kill(pid, stopSignal); err != nil {
		return false, fmt.Errorf("signal process %d driving run '%s': %w", pid, id, err)
	}
	if !wait {
		return true, nil
	}
	for deadline := time.Now().Add(stopWait); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, running, err := s.Driver(id); err != nil || !running {
			return true, err
		}
	}
	return true, &source.Error{Code: source.ERunLocked, Msg: fmt.Sprintf("run '%s' is still driven by process %d %s after the stop request", id, pid, stopWait)}
}

// baseFlagOf is " --base BASE" when BASE is not the current directory.
func baseFlagOf(e *env, base string) string {
	s := &session{e: e, proj: &project{base: base}}
	return s.baseFlag()
}

func (e *env) retryFlags(v *flagVals) *pflag.FlagSet {
	c := &v.common
	fs := e.newFlags("retry", "RUN_ID [flags]", "Runs a failed or interrupted run again from the step where it stopped: the\nsame as 'smithvm resume RUN_ID' (recompiles the workflow, keeps the context,\nskips completed steps). A halted run waits for a decision: resume it with\n--signal. A completed run has nothing to do (exit 0).\n")
	c.addContinue(fs, false)
	return fs
}

func (e *env) cmdRetry(args []string) int {
	var c flagVals
	fs := e.retryFlags(&c)
	if st, done := e.parse(fs, args, 1); done {
		return st
	}
	id := fs.Arg(0)
	if c.wsDir == "" {
		base, code, ok := e.locateBase(c.base, id)
		if !ok {
			return code
		}
		c.base = base
	}
	ctx, cancel := signalContext() // from the start, as runFile
	defer cancel()
	if err := retryProblem(&c.common, e, id); err != nil {
		return e.failErr(err, source.EInternal, "")
	}
	cont, status, _ := e.openResume(&c.common, id)
	if cont == nil {
		return status
	}
	return cont(ctx)
}

// retryProblem refuses a retry of a halted run: it waits for a person's
// decision (resume --signal), not for a second try.
func retryProblem(c *common, e *env, id string) error {
	proj, err := e.projectIn(c.base, c.wsDir)
	if err != nil {
		return err
	}
	st, err := proj.store.ReadState(id)
	if err != nil {
		return nil // openResume says why, with its code
	}
	if st.IsHalted || st.Status == vm.StatusHalted {
		return &source.Error{Code: source.EUsage, Msg: "run '" + id + "' is halted at '" + st.HaltedBlock + "' awaiting a decision, not failed",
			Hint: "resume it with smithvm resume " + id + " --signal SIGNAL:X (or without --signal to run the step again)"}
	}
	return nil
}
