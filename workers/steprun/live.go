package steprun

import (
	"os"
	"path/filepath"
	"sync"
	"time"

	"smith/workers/proc"
	"smith/workers/step"
	"smith/workers/text"
)

// LiveFile is the run's live log, RUN_ROOT/logs/live.jsonl (CONTRACT 13,
// "watch a step while it runs"): one JSON object per line, appended as a
// step's process writes: {"time", "step", "thread", "kind", "text"} (thread:
// the iteration index or branch name in a parallel step, else left out), kind stdout or
// stderr (a line of the process's output) or, for a preset's agent CLI,
// message, tool, command, read or edit (what the agent did, as its CLI
// streamed it). Everything in it is masked. The viewer and `smithvm logs`
// follow it.
const LiveFile = "live.jsonl"

// Kinds of the live log's lines besides the agent's activity.
const (
	LiveStdout = "stdout"
	LiveStderr = "stderr"
)

const (
	// liveLineMax bounds one line's text.
	liveLineMax = 4096
	// liveMax bounds what one process adds to the live log: it is a view
	// of the step, the whole streams are in the step's logs.
	liveMax = 8 << 20
)

// A LiveLine is one line of the live log.
type LiveLine struct {
	Time   string `json:"time"`
	Step   string `json:"step"`
	Thread string `json:"thread,omitempty"`
	Kind   string `json:"kind"`
	Text   string `json:"text"`
}

// A Live appends one step's lines to the run's live log. It is safe for
// concurrent use (both streams of a process write to it). A nil *Live
// writes nothing.
type Live struct {
	path, step string
	thread     string // the iteration or branch in a parallel step
	mask       *text.Masker
	now        func() time.Time

	mu      sync.Mutex
	f       *os.File
	n       int
	cut     bool
	failed  bool
	scratch []byte
}

// OpenLive returns the live log of req's step, nil without RUN_ROOT. The
// file is created at the first line.
func OpenLive(req *step.Request, now func() time.Time) *Live {
	if req.RunRoot == "" {
		return nil
	}
	if now == nil {
		now = time.Now
	}
	return &Live{path: filepath.Join(req.RunRoot, "logs", LiveFile), step: req.Step, thread: req.Thread, mask: req.Mask, now: now}
}

// Add appends one line of kind. text is masked again (a secret that a
// JSON stream escaped is masked only once decoded).
func (l *Live) Add(kind, text string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.scratch = l.scratch[:0]
	l.add(kind, text, l.now().UTC().Format(time.RFC3339Nano))
	l.write()
}

// add appends the line of kind to l.scratch, masked and cut; l.mu is held.
func (l *Live) add(kind, text, now string) {
	if l.failed || l.cut {
		return
	}
	text = l.mask.String(text)
	if len(text) > liveLineMax {
		cut := liveLineMax
		for cut > 0 && text[cut]&0xC0 == 0x80 {
			cut--
		}
		text = text[:cut] + "…"
	}
	if l.n > liveMax {
		l.cut = true
		kind, text = LiveStderr, "[smith: the live log of this step stops here; its whole output is in its logs]"
	}
	start := len(l.scratch)
	l.scratch = append(appendLiveLine(l.scratch, LiveLine{Time: now, Step: l.step, Thread: l.thread, Kind: kind, Text: text}), '\n')
	l.n += len(l.scratch) - start
}

// appendLiveLine appends line's JSON to b, the bytes of json.Marshal,
// written by hand: the live log encodes every line a step writes, up to
// 8 MB of them (a 100 MB stream of 100-byte lines spent a quarter of
// smithvm's CPU in encoding/json's reflection).
func appendLiveLine(b []byte, line LiveLine) []byte {
	b = text.AppendJSONString(append(b, `{"time":`...), line.Time, true)
	b = text.AppendJSONString(append(b, `,"step":`...), line.Step, true)
	if line.Thread != "" {
		b = text.AppendJSONString(append(b, `,"thread":`...), line.Thread, true)
	}
	b = text.AppendJSONString(append(b, `,"kind":`...), line.Kind, true)
	b = text.AppendJSONString(append(b, `,"text":`...), line.Text, true)
	return append(b, '}')
}

// write appends l.scratch to the file, in one write (O_APPEND: the lines
// of parallel steps never mix); l.mu is held.
func (l *Live) write() {
	if len(l.scratch) == 0 || l.failed {
		return
	}
	if l.f == nil {
		err := os.MkdirAll(filepath.Dir(l.path), 0o755)
		if err == nil {
			l.f, err = os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		}
		if err != nil {
			l.failed = true // a view, not a record: the step goes on
			return
		}
	}
	if _, err := l.f.Write(l.scratch); err != nil {
		l.failed = true
	}
}

// Lines is a proc.Spec.Lines that adds the lines of both streams, those
// of one call in one write. It wants no more once the log is cut.
func (l *Live) Lines(s proc.Stream, lines []byte) bool {
	if l == nil {
		return false
	}
	kind := LiveStdout
	if s == proc.Stderr {
		kind = LiveStderr
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now().UTC().Format(time.RFC3339Nano)
	l.scratch = l.scratch[:0]
	proc.EachLine(lines, func(line []byte) { l.add(kind, string(line), now) })
	l.write()
	return !l.failed && !l.cut
}

// Wants reports whether the log still takes lines: false once it is cut
// (liveMax) or could not be written, and for a nil *Live. A reader that
// turns a stream into lines for it (an agent CLI's activity) stops then.
func (l *Live) Wants() bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.failed && !l.cut
}

// Close closes the file.
func (l *Live) Close() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
	l.failed = true
}
