package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"smith/source"
	"smith/vm"
	"smith/vm/store"
	"smith/workers/steprun"
	"smith/workers/text"

	"github.com/spf13/pflag"
)

// logsPoll is how often logs -f reads what was appended and the run's state.
const logsPoll = 200 * time.Millisecond

func (e *env) logsFlags(v *flagVals) *pflag.FlagSet {
	fs := e.newFlags("logs", "RUN_ID [STEP] [flags]", "Prints what the run's steps wrote while they ran (RUN_ROOT/logs/live.jsonl,\nmasked): each line of a step's stdout and stderr and, for the claude, gemini\nand codex presets, what the agent did as its CLI streamed it (message, tool,\ncommand, read, edit). With STEP, only that step's lines. With -f it follows\nthe log until the step (or, without STEP, the run) is no longer running.\n")
	v.addBase(fs)
	fs.BoolVarP(&v.follow, "follow", "f", false, "keep printing new lines until the step or run ends")
	return fs
}

func (e *env) cmdLogs(args []string) int {
	var c flagVals
	fs := e.logsFlags(&c)
	if st, done := e.parse(fs, args, -1); done {
		return st
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return e.refuse("want RUN_ID [STEP], got %d argument(s) (see --help)", fs.NArg())
	}
	id, stepName := fs.Arg(0), fs.Arg(1)
	proj, st, code := e.readRun(c.base, id)
	if st == nil {
		return code
	}
	if stepName != "" && st.Steps[stepName] == nil && st.CurrentStep != stepName && st.Status != vm.StatusRunning {
		// The workflow is read only to suggest a step name.
		if msg := workflowGone(st, "logs suggests only the steps the run reached, not every step of the workflow"); msg != "" {
			fmt.Fprintf(e.stderr, "WARNING: %s\n", msg)
		}
		return e.refuse("run %s has no step '%s'%s", id, stepName, source.DidYouMean(stepName, e.stepNames(st)))
	}
	path := filepath.Join(proj.store.RunsDir(), id, "logs", store.LiveFile)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var (
		off     int64
		held    []byte
		printed int
	)
	for {
		// Whether to stop is decided before the last read, so the lines
		// written before the end are all printed.
		ended := true
		if c.follow {
			if st, err := proj.store.ReadState(id); err == nil {
				ended = !following(st, stepName)
			}
		}
		var n int
		off, held, n = e.printLive(path, off, held, stepName)
		printed += n
		if ended {
			if printed == 0 {
				what := "run " + id
				if stepName != "" {
					what = "step '" + stepName + "' of run " + id
				}
				fmt.Fprintf(e.stderr, "INFO: nothing was recorded for %s: its steps wrote no output (smithvm status %s shows their results).\n", what, id)
			}
			return 0
		}
		select {
		case <-ctx.Done():
			return 0
		case <-time.After(logsPoll):
		}
	}
}

// following reports whether logs -f goes on: the run is running and, with
// a step, the step is running or has not run yet.
func following(st *vm.State, stepName string) bool {
	if st.Status != vm.StatusRunning {
		return false
	}
	if stepName == "" || st.CurrentStep == stepName {
		return true
	}
	r := st.Steps[stepName]
	return r == nil || r.Status == vm.StepRunning
}

// printLive prints the whole lines of the live log at path from off (held:
// a line read without its newline yet) and returns where it stopped and
// how many lines it printed.
func (e *env) printLive(path string, off int64, held []byte, stepName string) (int64, []byte, int) {
	f, err := os.Open(path)
	if err != nil {
		return off, held, 0
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return off, held, 0
	}
	n := 0
	b, _ := io.ReadAll(f)
	off += int64(len(b))
	held = append(held, b...)
	for {
		i := bytes.IndexByte(held, '\n')
		if i < 0 {
			break
		}
		var l store.LiveLine
		if json.Unmarshal(held[:i], &l) == nil && (stepName == "" || l.Step == stepName) {
			fmt.Fprintln(e.stdout, formatLive(l))
			n++
		}
		held = held[i+1:]
	}
	return off, held, n
}

// formatLive is one line of the live log on a terminal: time, step (with
// its thread in a parallel step, "Work [2]", as on the console), kind and
// text. A stdout or stderr line is what the step printed, as it printed
// it; an agent's activity is Smith's reading of its CLI's JSON, whose
// control characters (escaped in the JSON) are shown as escapes, never
// sent to the terminal (text.Visible).
func formatLive(l store.LiveLine) string {
	t := l.Time
	if ts, err := time.Parse(time.RFC3339Nano, l.Time); err == nil {
		t = ts.UTC().Format("15:04:05.000")
	}
	name := l.Step
	if l.Thread != "" {
		name += " [" + l.Thread + "]"
	}
	txt := l.Text
	if l.Kind != steprun.LiveStdout && l.Kind != steprun.LiveStderr {
		txt = text.Visible(txt)
	}
	return fmt.Sprintf("%s  %s  %-7s %s", t, name, l.Kind, txt)
}

// stepNames are the run's steps, in program order.
func (e *env) stepNames(st *vm.State) []string {
	names, _ := e.stepOrder(st)
	return names
}
