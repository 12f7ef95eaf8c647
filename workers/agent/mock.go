package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"smith/lang"
	"smith/source"
	"smith/workers/confine"
	"smith/workers/provider"
	"smith/workers/step"
	"smith/workers/steprun"
)

// mockCursors is the file under RUN_ROOT that remembers which script entries
// each step has consumed, so that a resumed run continues where it stopped.
const mockCursors = "mock-cursors.json"

// maxScript is the most a mock script may hold: 10 MiB, as a prompt
// (steprun.MaxPrompt). A larger one is not read.
const maxScript = steprun.MaxPrompt

// runMock answers a provider call without a process (CONTRACT.md 5.1). With
// provider_params script (a path relative to WORKSPACE, over the provider's
// defaults), the reply is the first entry of the script not yet consumed by
// this step whose match (if any) matches the prompt; that entry is then
// consumed. When no entry is left, or there is no script, the reply is the
// prompt itself. Tokens are the number of whitespace-separated words of the
// prompt plus those of the reply. For an agent that continues its
// sessions, the mock continues sess (or starts one, with an id of its
// own), and an entry with a turn answers only that call of the session.
func (r *Runner) runMock(req *step.Request, pv provider.Provider, sess *step.Session, prompt, call string) callReply {
	rep := r.mockReply(req, pv, sess, prompt, call)
	if req.Continue {
		rep.session = mockSessionID(req)
		if sess != nil {
			rep.session = sess.ID
		}
	}
	return rep
}

// mockReply is the mock's reply (runMock).
func (r *Runner) mockReply(req *step.Request, pv provider.Provider, sess *step.Session, prompt, call string) callReply {
	turn := 0 // no session
	if req.Continue {
		turn = 1
		if sess != nil {
			turn = sess.Turns + 1
		}
	}
	script := ""
	for _, list := range [][]provider.Param{pv.Defaults, req.ProviderParams} {
		for _, kv := range list {
			if kv.Key == lang.KeyScript {
				script = kv.Value
			}
		}
	}
	echo := callReply{text: req.Mask.String(prompt), tokens: 2 * len(strings.Fields(prompt))}
	if script == "" {
		return echo
	}
	abs, err := req.Dirs.Resolve(script)
	if err != nil {
		return callReply{exit: step.ExitNotRun, err: source.Wrap(source.EExec, "mock script", err)}
	}
	data, size, err := steprun.ReadAtMost(req.Dirs, abs, maxScript)
	if err != nil {
		return callReply{exit: step.ExitNotRun, err: steprun.FileErr("mock script", script, err)}
	}
	if size >= 0 {
		return callReply{exit: step.ExitNotRun, err: source.Errorf(source.ETooLarge, "mock script '%s' is %d bytes, more than the %d bytes (10 MiB) a script may hold; split it among the steps' own scripts",
			script, size, maxScript)}
	}
	entries, err := provider.ParseScript(data)
	if err != nil {
		return callReply{exit: step.ExitNotRun, err: source.Errorf(source.EParse, "mock script '%s': %v", script, err)}
	}
	key := filepath.ToSlash(filepath.Clean(script)) + "#" + req.CallKey()
	cursorMu.Lock()
	defer cursorMu.Unlock()
	cursors, cur, err := loadCursor[mockCursor](req.RunRoot, mockCursors, key)
	if err != nil {
		return callReply{exit: step.ExitNotRun, err: source.Errorf(source.EExec, "mock: %v", err)}
	}
	pick, seen := cur.Calls[call]
	if !seen || call == "" {
		pick = -1
		for i := range entries {
			if !slices.Contains(cur.Used, i) && entries[i].Matches(prompt) && entries[i].MatchesTurn(turn) {
				pick = i
				break
			}
		}
		if pick < 0 {
			return echo
		}
		cur.Used = append(cur.Used, pick)
		noteCall(&cur.Calls, call, pick)
		if err := saveCursors(req.RunRoot, mockCursors, cursors); err != nil {
			return callReply{exit: step.ExitNotRun, err: source.Errorf(source.EExec, "mock: %v", err)}
		}
	}
	e := entries[pick]
	rep := callReply{
		text:   req.Mask.String(e.Reply),
		exit:   e.ExitCode,
		tokens: len(strings.Fields(prompt)) + len(strings.Fields(e.Reply)),
	}
	if e.Signal != "" {
		rep.signal = e.Signal
		if !strings.HasPrefix(rep.signal, "SIGNAL:") {
			rep.signal = "SIGNAL:" + rep.signal
		}
	}
	return rep
}

// cursorMu serializes the cursor files and recordings of the threads of
// a parallel step (one process drives a run).
var cursorMu sync.Mutex

// noteCall records in calls that numbered call (none when "") was answered
// by entry or recording n, so that the call repeated after a crash gets the
// same answer.
func noteCall(calls *map[string]int, call string, n int) {
	if call != "" {
		if *calls == nil {
			*calls = map[string]int{}
		}
		(*calls)[call] = n
	}
}

// A mockCursor is what a script has answered one step: the entries used,
// in order, and for each numbered call (see callID) the entry that answered
// it, which answers it again when it is repeated after a crash.
type mockCursor struct {
	Used  []int          `json:"used"`
	Calls map[string]int `json:"calls,omitempty"`
}

// loadCursor reads a cursor file RUN_ROOT/name (mock-cursors.json: for
// each "script#step", the indexes of the entries consumed, in order;
// replay-cursors.json: per step, the number of recordings used) and returns
// it with the cursor of key, created empty when it has none. Without a
// RUN_ROOT, or before the first save, the file is empty.
func loadCursor[C any](runRoot, name, key string) (map[string]*C, *C, error) {
	cursors := map[string]*C{}
	if runRoot != "" {
		b, err := os.ReadFile(filepath.Join(runRoot, name))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("read cursors: %w", err)
		}
		if err == nil {
			if err := json.Unmarshal(b, &cursors); err != nil {
				return nil, nil, fmt.Errorf("read cursors %s: %w", name, err)
			}
		}
	}
	cur := cursors[key]
	if cur == nil {
		cur = new(C)
		cursors[key] = cur
	}
	return cursors, cur, nil
}

// saveCursors writes a cursor file atomically (json.Marshal sorts the keys).
func saveCursors(runRoot, name string, cursors any) error {
	if runRoot == "" {
		return nil
	}
	b, err := json.MarshalIndent(cursors, "", "  ")
	if err != nil {
		return fmt.Errorf("write cursors: %w", err)
	}
	return confine.WriteFileAtomic(filepath.Join(runRoot, name), append(b, '\n'), 0o644)
}
