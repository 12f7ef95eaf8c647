package store

import "path/filepath"

// LiveFile is the name of a run's live log under RUN_ROOT/logs, which the
// workers append to while a step runs (workers/steprun.LiveFile, the same
// name): one LiveLine per line. The viewer and `smithvm logs` read it.
const LiveFile = "live.jsonl"

// A LiveLine is one line of the live log: a line of a step's stdout or
// stderr (Kind "stdout", "stderr"), or one thing an agent did as its CLI
// streamed it ("message", "tool", "command", "read", "edit"). Text is
// masked. Thread is the iteration index or branch name of a step in a
// parallel step ("" otherwise).
type LiveLine struct {
	Time   string `json:"time"`
	Step   string `json:"step"`
	Thread string `json:"thread,omitempty"`
	Kind   string `json:"kind"`
	Text   string `json:"text"`
}

// LiveLog returns the path of the run's live log, RUN_ROOT/logs/live.jsonl.
func (r *Run) LiveLog() string { return filepath.Join(r.LogsDir(), LiveFile) }
