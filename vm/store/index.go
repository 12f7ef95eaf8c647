package store

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/tidwall/gjson"
)

// The index of runs, BASE/.orchestrator/runs-index.jsonl, lets List read
// one file instead of every run's state.json. It is a cache, never the
// truth: one line per change of a run's status (its start, a resume, its
// end), appended with one O_APPEND write by the process driving the run
// (Run.Save), not synced; the last line of a run wins. Each line records
// the size and modification time state.json had when it was written, so
// List checks each run with one stat and reads the state of a run whose
// line is missing or stale (a run of an older smithvm, a crash between the
// snapshot and the line, a line lost to a concurrent rewrite), and the
// state plus the journal of a running run (its current step moves). List
// rewrites the index, compacted, when it found it stale or twice as long
// as it needs to be; a missing index is rebuilt so.
const indexFile = "runs-index.jsonl"

// indexLine is one line of the index.
type indexLine struct {
	Summary
	size  int64
	mtime int64 // ns
}

// indexPath is BASE/.orchestrator/runs-index.jsonl.
func (s *Store) indexPath() string {
	return filepath.Join(s.Base, ".orchestrator", indexFile)
}

// appendLine encodes l as one JSON line.
func (l *indexLine) appendLine(b []byte) []byte {
	b = append(b, `{"run_id":`...)
	b = strconv.AppendQuote(b, l.RunID)
	for _, kv := range [...]struct{ k, v string }{
		{"workflow_name", l.WorkflowName}, {"status", l.Status}, {"started_at", l.StartedAt},
		{"ended_at", l.EndedAt}, {"current_step", l.CurrentStep}, {"step_started_at", l.StepStartedAt},
	} {
		if kv.v != "" {
			b = append(b, `,"`+kv.k+`":`...)
			b = strconv.AppendQuote(b, kv.v)
		}
	}
	b = append(b, `,"size":`...)
	b = strconv.AppendInt(b, l.size, 10)
	b = append(b, `,"mtime":`...)
	b = strconv.AppendInt(b, l.mtime, 10)
	return append(b, "}\n"...)
}

// parseIndexLine reads one line; ok is false for a line that is not one.
func parseIndexLine(b []byte) (indexLine, bool) {
	if !gjson.ValidBytes(b) {
		return indexLine{}, false
	}
	var l indexLine
	ok := true
	gjson.ParseBytes(b).ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "run_id":
			l.RunID = v.Str
		case "workflow_name":
			l.WorkflowName = v.Str
		case "status":
			l.Status = v.Str
		case "started_at":
			l.StartedAt = v.Str
		case "ended_at":
			l.EndedAt = v.Str
		case "current_step":
			l.CurrentStep = v.Str
		case "step_started_at":
			l.StepStartedAt = v.Str
		case "size":
			l.size = v.Int()
		case "mtime":
			l.mtime = v.Int()
		}
		return true
	})
	return l, ok && ValidRunID(l.RunID)
}

// stateStat is the size and modification time (ns) of run id's
// state.json; ok is false when it cannot be read.
func (s *Store) stateStat(id string) (size, mtime int64, ok bool) {
	fi, err := os.Stat(filepath.Join(s.root(id), stateFile))
	if err != nil || !fi.Mode().IsRegular() {
		return 0, 0, false
	}
	return fi.Size(), fi.ModTime().UnixNano(), true
}

// appendIndex records sum in the index at path, with the state.json at
// statePath as it is now. Errors are ignored: the index is a cache that
// List repairs.
func appendIndex(path, statePath string, sum Summary) {
	l := indexLine{Summary: sum}
	if fi, err := os.Stat(statePath); err == nil {
		l.size, l.mtime = fi.Size(), fi.ModTime().UnixNano()
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	f.Write(l.appendLine(nil))
	f.Close()
}

// readIndex returns the last line of each run in the index, and how many
// lines it has.
func (s *Store) readIndex() (map[string]indexLine, int) {
	b, err := os.ReadFile(s.indexPath())
	if err != nil {
		return nil, 0
	}
	m := map[string]indexLine{}
	n := 0
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break // a line being appended
		}
		if l, ok := parseIndexLine(b[:i]); ok {
			m[l.RunID] = l
			n++
		}
		b = b[i+1:]
	}
	return m, n
}

// writeIndex replaces the index with one line per summary, atomically
// (not synced: it is a cache). A line a driver appended to the old file
// meanwhile is lost, and its run's next List reads its state.
func (s *Store) writeIndex(lines []indexLine) {
	var b []byte
	for i := range lines {
		b = lines[i].appendLine(b)
	}
	tmp := s.indexPath() + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return
	}
	if os.Rename(tmp, s.indexPath()) != nil {
		os.Remove(tmp)
	}
}

// A ListOptions selects a page of runs: those of Status and Workflow
// ("" for any), newest first, Limit of them (0 for all) after skipping
// Offset.
type ListOptions struct {
	Status, Workflow string
	Offset, Limit    int
}

// A Page is a part of the list of runs.
type Page struct {
	Runs []Summary
	// Total is how many runs match the filters; Counts how many runs of
	// the workflow filter have each status (for the status links).
	Total  int
	Counts map[string]int
	// Workflows lists the workflow names of every run, sorted.
	Workflows []string
}

// ListPage returns the runs that opt selects, newest first (see List),
// from the index. Each run of the page is checked against its state.json
// (one stat) and read again when its line is stale, and a running one is
// read whole (its snapshot plus its journal, top-level fields only), so
// its current step is the one running now. The filters and counts trust
// the index's lines: the driver of a run appends one at every change of
// its status, so only a run changed behind the index's back (by an older
// smithvm) is counted by its old status until a list shows it.
func (s *Store) ListPage(opt ListOptions) (*Page, error) {
	all, err := s.listAll()
	if err != nil {
		return nil, err
	}
	p := &Page{Counts: map[string]int{}}
	seen := map[string]bool{}
	var match []*entry
	for _, e := range all {
		sum := &e.line.Summary
		if sum.WorkflowName != "" && !seen[sum.WorkflowName] {
			seen[sum.WorkflowName] = true
			p.Workflows = append(p.Workflows, sum.WorkflowName)
		}
		if opt.Workflow != "" && sum.WorkflowName != opt.Workflow {
			continue
		}
		p.Counts[sum.Status]++
		if opt.Status != "" && sum.Status != opt.Status {
			continue
		}
		match = append(match, e)
	}
	sort.Strings(p.Workflows)
	p.Total = len(match)
	lo := min(max(opt.Offset, 0), len(match))
	hi := len(match)
	if opt.Limit > 0 {
		hi = min(lo+opt.Limit, hi)
	}
	stale := false
	for _, e := range match[lo:hi] {
		if s.check(e) {
			stale = true
		}
		p.Runs = append(p.Runs, e.line.Summary)
	}
	if stale {
		lines := make([]indexLine, len(all))
		for i, e := range all {
			lines[i] = e.line
		}
		s.writeIndex(lines)
	}
	return p, nil
}

// List returns every run under BASE, newest first: by started_at, most
// recent first, then by id. Runs with no valid started_at come last. It
// reads the index of runs, checks each run against its state.json (one
// stat) and reads the state of a run whose line is missing or stale; a
// running run is read with its journal, so its current step is the one
// running now. No lock is taken.
func (s *Store) List() ([]Summary, error) {
	p, err := s.ListPage(ListOptions{})
	if err != nil {
		return nil, err
	}
	return p.Runs, nil
}

// An entry is one run of listAll.
type entry struct {
	line    indexLine
	started time.Time
	ok      bool // started is valid
	fresh   bool // read from the run's files now
}

// check brings e up to date with its state.json when its index line is
// stale; it reports whether it was.
func (s *Store) check(e *entry) bool {
	if e.fresh {
		return false
	}
	size, mtime, ok := s.stateStat(e.line.RunID)
	stale := !ok || size != e.line.size || mtime != e.line.mtime
	if stale || e.line.Status == "running" {
		// A running run's snapshot moves while it runs (Run.Save's
		// catch-up) and its journal holds the latest: read, not a repair.
		running := e.line.Status == "running"
		e.line = indexLine{Summary: readSummary(e.line.RunID, filepath.Join(s.root(e.line.RunID), stateFile)), size: size, mtime: mtime}
		if e.line.Status == "running" {
			s.live(&e.line.Summary)
		}
		stale = stale && !running
	}
	return stale
}

// listAll returns every run, newest first, from the index; a run the
// index lacks is read from its state.json (and the index rewritten).
func (s *Store) listAll() ([]*entry, error) {
	d, err := os.Open(s.RunsDir())
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	idx, nLines := s.readIndex()
	all := make([]*entry, 0, len(names))
	repaired := 0
	for _, id := range names {
		if !ValidRunID(id) {
			continue
		}
		l, have := idx[id]
		e := &entry{line: l}
		if !have {
			size, mtime, ok := s.stateStat(id)
			if !ok {
				if fi, err := os.Stat(s.root(id)); err != nil || !fi.IsDir() {
					continue // not a run's directory
				}
			}
			repaired++
			e.line = indexLine{Summary: readSummary(id, filepath.Join(s.root(id), stateFile)), size: size, mtime: mtime}
			e.fresh = true
			if e.line.Status == "running" {
				s.live(&e.line.Summary)
			}
		}
		e.started, err = time.Parse(time.RFC3339Nano, e.line.StartedAt)
		e.ok = err == nil
		all = append(all, e)
	}
	if repaired > 0 || nLines > 2*len(all)+16 {
		lines := make([]indexLine, len(all))
		for i, e := range all {
			lines[i] = e.line
		}
		s.writeIndex(lines)
	}
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.ok != b.ok {
			return a.ok
		}
		if a.ok && !a.started.Equal(b.started) {
			return a.started.After(b.started)
		}
		if !a.ok && a.line.StartedAt != b.line.StartedAt {
			return a.line.StartedAt > b.line.StartedAt
		}
		return a.line.RunID < b.line.RunID
	})
	return all, nil
}

// live brings the summary of a running run up to its journal: the
// current step, status and end its deltas set since the snapshot (the
// run's own, not its threads').
func (s *Store) live(sum *Summary) {
	b, err := os.ReadFile(filepath.Join(s.root(sum.RunID), journalFile))
	if err != nil {
		return
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		d := gjson.GetBytes(b[:i], "delta")
		b = b[i+1:]
		if !d.Exists() || d.Get("thread").Str != "" {
			continue
		}
		if v := d.Get("current_step"); v.Exists() {
			sum.CurrentStep = v.Str
		}
		if v := d.Get("status"); v.Str != "" {
			sum.Status = v.Str
		}
		if v := d.Get("ended_at"); v.Str != "" {
			sum.EndedAt = v.Str
		}
		if st := d.Get("start"); st.Exists() {
			sum.WorkflowName, sum.StartedAt = st.Get("workflow_name").Str, st.Get("started_at").Str
		}
		d.Get("steps").ForEach(func(_, c gjson.Result) bool {
			if c.Get("name").Str == sum.CurrentStep {
				sum.StepStartedAt = c.Get("result.started_at").Str
			}
			return true
		})
	}
}
