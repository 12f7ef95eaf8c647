package vm

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"smith/workers/text"
)

// Console returns the event's console line (CONTRACT 4), without a newline.
// Durations have one decimal. Control characters in it (a CLI's or a
// model's text quoted in a message) are shown as escapes, never sent to the
// terminal (text.Visible).
func (e Event) Console() string {
	return text.Visible(e.console())
}

func (e Event) console() string {
	switch e.Kind {
	case EvRunStarted:
		return fmt.Sprintf("INFO: Run %s started (workflow '%s').", e.RunID, e.Workflow)
	case EvRunResumed:
		return fmt.Sprintf("INFO: Run %s resumed at '%s'.", e.RunID, e.Step)
	case EvRunCompleted:
		return fmt.Sprintf("INFO: Run %s completed.", e.RunID)
	case EvRunFailed:
		return fmt.Sprintf("ERROR: Run %s failed: %s.", e.RunID, withCode(e.Code, e.Msg, true))
	case EvRunHalted:
		return fmt.Sprintf("WARNING: Run %s halted at '%s' awaiting resume.", e.RunID, e.Step)
	case EvRunInterrupted:
		return fmt.Sprintf("WARNING: Run %s interrupted at '%s'; state saved.", e.RunID, e.Step)
	case EvFailAction:
		return "ERROR: " + e.Msg
	case EvStepStarted:
		return fmt.Sprintf("INFO: Step %s starting.", e.stepRef())
	case EvStepCompleted:
		return fmt.Sprintf("INFO: Step %s completed successfully in %.1fs.", e.stepRef(), e.Duration)
	case EvStepFailed:
		if e.Msg == "" && e.ExitCode != nil {
			return fmt.Sprintf("ERROR: Step %s failed with exit code %d in %.1fs.", e.stepRef(), *e.ExitCode, e.Duration)
		}
		return fmt.Sprintf("ERROR: Step %s failed: %s.", e.stepRef(), withCode(e.Code, e.Msg, false))
	case EvStepSignal:
		return fmt.Sprintf("INFO: Step %s finished with %s in %.1fs.", e.stepRef(), e.Signal, e.Duration)
	case EvStepRetry:
		code := 0
		if e.ExitCode != nil {
			code = *e.ExitCode
		}
		return fmt.Sprintf("WARNING: Step %s attempt %d failed with exit code %d; retrying in %ss.",
			e.stepRef(), e.Attempt, code, strconv.FormatFloat(e.Wait, 'f', -1, 64))
	case EvProviderFallback:
		return fmt.Sprintf("WARNING: Step %s: provider '%s' failed (%s); trying '%s'.", e.stepRef(), e.Provider, e.Msg, e.Next)
	case EvConflict:
		return fmt.Sprintf("WARNING: Step %s: %s", e.stepRef(), e.Msg)
	case EvSession:
		return fmt.Sprintf("INFO: Step %s: %s.", e.stepRef(), e.Msg)
	case EvDebug:
		if e.Step != "" {
			return fmt.Sprintf("DEBUG: Step %s: %s", e.stepRef(), e.Msg)
		}
		return "DEBUG: " + e.Msg
	case EvMessageSent:
		return fmt.Sprintf("INFO: Step %s sent %s to '%s'.", e.stepRef(), e.Path, e.Agent)
	case EvMessageConsumed:
		if e.Level == LevelWarning {
			return fmt.Sprintf("WARNING: Step %s: %s", e.stepRef(), e.Msg)
		}
		return fmt.Sprintf("INFO: Step %s consumed %s.", e.stepRef(), e.Path)
	case EvStepSkipped:
		return fmt.Sprintf("INFO: Step %s skipped (condition false).", e.stepRef())
	case EvStepMaxVisits:
		return fmt.Sprintf("WARNING: Step %s reached max_visits (%d); not run.", e.stepRef(), e.Visits)
	}
	if e.Step != "" {
		return fmt.Sprintf("%s: %s: step %s: %s", e.Level, e.Kind, e.stepRef(), e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", e.Level, e.Kind, e.Msg)
}

// stepRef names the event's step, quoted, with a thread's index or branch
// name, or its loop iteration: 'Implement' [2].
func (e Event) stepRef() string {
	switch {
	case e.Thread != "":
		return "'" + e.Step + "' [" + e.Thread + "]"
	case e.Iteration != "":
		return "'" + e.Step + "' [" + e.Iteration + "]"
	}
	return "'" + e.Step + "'"
}

// sentence trims the trailing period of msg, which the console form adds.
func sentence(msg string) string {
	return strings.TrimRight(strings.TrimSpace(msg), ".")
}

// withCode is msg as a sentence after its code, "E_PATH_ESCAPE: ...", as
// smithc check prints codes; a run that failed on the workflow's own
// error: or FAIL message (E_STEP_FAILED) shows the message alone when
// userFail is set.
func withCode(code, msg string, userFail bool) string {
	msg = sentence(msg)
	if code == "" || strings.HasPrefix(msg, code) || (userFail && code == "E_STEP_FAILED") {
		return msg
	}
	return code + ": " + msg
}

// threadLines is the -v live copy of a step's output (Config.Verbose) for
// step in thread (CONTRACT 12.3: console lines name their step): in a
// thread of a parallel step, whose lines interleave with the other
// threads', each line is written after "Step [key] | ", a whole line per
// write; outside a thread, the lines as they are. The workers write whole
// lines to it (the last one may lack its newline).
func threadLines(w io.Writer, step, thread string) io.Writer {
	if thread == "" {
		return w
	}
	return &prefixWriter{w: w, prefix: []byte(step + " [" + thread + "] | ")}
}

// A prefixWriter writes each line given to it after prefix.
type prefixWriter struct {
	w       io.Writer
	prefix  []byte
	buf     []byte
	midLine bool // the last write ended without a newline
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	for rest := b; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line = rest[:i+1]
		}
		rest = rest[len(line):]
		p.buf = p.buf[:0]
		if !p.midLine {
			p.buf = append(p.buf, p.prefix...)
		}
		p.buf = append(p.buf, line...)
		p.midLine = line[len(line)-1] != '\n'
		if _, err := p.w.Write(p.buf); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}
