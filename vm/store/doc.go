// Package store keeps the files of a run under RUN_ROOT, that is
// BASE/.orchestrator/runs/<run_id>/ (CONTRACT section 2 and 6).
//
// The file layer is generic over JSON values: states, deltas and iteration
// records are any value encoding/json can marshal, or raw JSON given as
// []byte or json.RawMessage; events are vm.Event values (one is written per
// event of every run, so it is not boxed in an interface). state.go is the
// typed layer on top:
// Store.ReadState and Run.State replay the journal into a *vm.State and
// Run.Save holds the snapshot policy, so no command replays a run by hand.
//
// # On-disk format
//
//	RUN_ROOT/
//	  lock                   flock(2)ed by the process driving the run; holds its pid
//	  state.json             the last snapshot (see below)
//	  state.json.tmp         a snapshot being written; Load discards a leftover one
//	  journal.jsonl          deltas appended since the snapshot, one per line
//	  logs/events.jsonl      one event object per line, as given to AppendEvent
//	  logs/<Step>-stdout.log spilled stdout of a step (written by the caller)
//	  logs/<Step>-stderr.log stderr of a step (written by the caller)
//	  iterations/<Loop>.jsonl one record per line, as given to AppendIteration (the
//	                         directory is made with the first record)
//	  logs/<Step>-<seq>-capture.json a lines/json capture or a stderr too large for state.json (package vm)
//	  procs-<pid>-<n>        the process groups of the steps a smithvm runs, "0 0" when none (package workers)
//	  tmp/                   temporary files of steps (package workers)
//
// state.json is the caller's state, which must encode as a JSON object,
// indented by two spaces, with one key added by the store as its last key:
// "journal_seq", the sequence number of the last journal entry the snapshot
// includes. Load removes that key again before it decodes the state, so
// callers never see it. state.json is replaced atomically: the snapshot is
// written to state.json.tmp, fsynced, renamed over state.json, and RUN_ROOT
// is fsynced. A crash at any instant leaves either the old or the new
// complete file.
//
// journal.jsonl holds one line per delta:
//
//	{"seq":N,"delta":<the delta as compact JSON>}
//
// Sequence numbers start at 1 and grow by one for every delta over the whole
// life of the run; they are not reset by a snapshot. Each line is written with
// a single O_APPEND write and fdatasynced before AppendJournal returns, so the
// cost of an append does not depend on the length of the run. A Checkpoint
// that writes a snapshot does not fdatasync the line: the snapshot, synced
// before Checkpoint returns, holds it. After a snapshot the journal is
// truncated. A new run's directory entries are fsynced by its first durable
// write (the first snapshot or synced append), before that write returns. A crash between the rename of state.json and that
// truncation leaves lines whose seq is at most journal_seq: Load skips them, so
// no delta is applied twice. Load applies the remaining lines, which must
// continue journal_seq without a gap. A last line with no trailing newline is
// an append torn by a crash: Load ignores it and cuts it off the file.
//
// A run is driven by one process at a time: Create and Open take
// flock(LOCK_EX|LOCK_NB) on RUN_ROOT/lock, which the kernel releases when
// the process dies, even by SIGKILL.
//
// Checkpoint bounds the journal: it appends every delta and writes a
// snapshot every Policy.Every deltas or Policy.Interval, whichever comes
// first, so persisting a step costs O(delta) amortised and a resume replays
// at most Every deltas. List reads only state.json, so its summary of a run
// whose driver died may lag behind the journal by that much.
package store
