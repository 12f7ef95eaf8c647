package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"path/filepath"
	"strconv"

	"smith/vm/store"
)

// What the run page shows of a step while it runs, and what the agents
// did (CONTRACT 13): the live log (a step's output lines and an agent's
// activity, RUN_ROOT/logs/live.jsonl), polled by offset, so an open page
// holds no connection of its own between polls (any number of pages stay
// within the browser's per-site limit); each step's commit and the run's
// whole diff, through the injected Config.Diff (Smith's git).

// liveChunk bounds what one poll of the live log returns.
const liveChunk = 1 << 20

// A liveReply is GET /api/runs/ID/live: the whole lines after the offset
// the page gave, and the offset to ask from next.
type liveReply struct {
	Lines []store.LiveLine `json:"lines"`
	Next  int64            `json:"next"`
}

// apiLive is GET /api/runs/ID/live?after=N[&step=S].
func (s *Server) apiLive(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	st, err := s.readState(id)
	if err != nil {
		httpError(w, err)
		return
	}
	after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
	step := r.URL.Query().Get("step")
	out := liveReply{Lines: []store.LiveLine{}, Next: max(after, 0)}
	dir, err := s.resolveRun(filepath.Join(id, "logs"))
	if err != nil {
		writeJSON(w, out)
		return
	}
	f, err := openIn(dir, store.LiveFile)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			httpError(w, err)
			return
		}
		writeJSON(w, out)
		return
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() < out.Next {
		out.Next = 0 // a new file: start again
	}
	b, err := io.ReadAll(io.NewSectionReader(f, out.Next, liveChunk))
	if err != nil {
		httpError(w, err)
		return
	}
	// Only whole lines: the rest is read at the next poll.
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[:i+1]
	} else {
		b = nil
	}
	out.Next += int64(len(b))
	mask := s.masker(st)
	for line := range bytes.SplitSeq(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		var l store.LiveLine
		if json.Unmarshal(line, &l) != nil || step != "" && l.Step != step {
			continue
		}
		l.Text = mask.Replace(l.Text)
		out.Lines = append(out.Lines, l)
	}
	writeJSON(w, out)
}

// apiStepDiff is GET /api/runs/ID/steps/STEP/diff: the step's commit on
// the run's branch (isolation: git-worktree), `git show` of it.
func (s *Server) apiStepDiff(w http.ResponseWriter, r *http.Request) {
	id, step := r.PathValue("id"), r.PathValue("step")
	st, res, err := s.stepResult(id, step)
	if err != nil {
		httpError(w, err)
		return
	}
	if res.Commit == "" || s.cfg.Diff == nil {
		httpError(w, errNotFound("step '"+step+"' of run '"+id+"' has no commit (it changed nothing, or the run has no worktree)"))
		return
	}
	text, err := s.cfg.Diff(r.Context(), id, res.Commit)
	if err != nil {
		httpError(w, err)
		return
	}
	s.writeText(w, st, []byte(text))
}

// apiRunDiff is GET /api/runs/ID/diff: the run's branch against the commit
// it started from (smithvm diff ID).
func (s *Server) apiRunDiff(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	st, err := s.readState(id)
	if err != nil {
		httpError(w, err)
		return
	}
	if st.WorktreePath == "" || s.cfg.Diff == nil {
		httpError(w, errNotFound("run '"+id+"' has no worktree: it did not run with isolation: git-worktree"))
		return
	}
	text, err := s.cfg.Diff(r.Context(), id, "")
	if err != nil {
		httpError(w, err)
		return
	}
	s.writeText(w, st, []byte(text))
}
