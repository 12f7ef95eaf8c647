package serve

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"smith/source"
	"smith/vm/store"
)

// funcs are the template functions of the pages.
var funcs = template.FuncMap{}

// A runRow is one run in the list.
type runRow struct {
	RunID       string `json:"run_id"`
	Workflow    string `json:"workflow_name"`
	Status      string `json:"status"`
	StartedAt   string `json:"started_at"`
	EndedAt     string `json:"ended_at"`
	CurrentStep string `json:"current_step"`
	// Duration is ended_at (or now, for a running run) minus started_at,
	// in seconds; Started is started_at for people.
	Duration float64 `json:"duration"`
	Started  string  `json:"-"`
	Took     string  `json:"-"`
	// StepStartedAt is when the current step started, while it runs;
	// StepTook how long it has run, for people.
	StepStartedAt string `json:"step_started_at,omitempty"`
	StepTook      string `json:"-"`
	// CutOff says why a run whose status says running is not (no process
	// drives it); empty otherwise.
	CutOff string `json:"cut_off,omitempty"`
}

// statuses are the filters of the list, in display order.
var statuses = []string{"running", "halted", "failed", "interrupted", "completed", store.StatusCorrupt}

// CheckStatus checks a status filter (of the list page, /api/runs and
// smithvm list): "" (any) or a status a run can have. A misspelt one is
// E_USAGE, not an empty list.
func CheckStatus(status string) error {
	if status == "" || slices.Contains(statuses, status) {
		return nil
	}
	return source.Errorf(source.EUsage, "unknown status '%s'%s: want one of %s", status, source.DidYouMean(status, statuses), strings.Join(statuses, ", "))
}

// pageSize is how many runs the list page and /api/runs show by default.
const pageSize = 100

// listOptions reads the query's filters and page: status, workflow,
// offset, limit (default pageSize; 0 for all).
func listOptions(r *http.Request) store.ListOptions {
	q := r.URL.Query()
	opt := store.ListOptions{Status: q.Get("status"), Workflow: q.Get("workflow"), Limit: pageSize}
	if n, err := strconv.Atoi(q.Get("offset")); err == nil && n > 0 {
		opt.Offset = n
	}
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n >= 0 {
		opt.Limit = n
	}
	return opt
}

// runs lists a page of the runs under BASE, newest first, from the
// store's index (store.ListPage): a running run's current step is the
// one running now.
func (s *Server) runs(opt store.ListOptions) ([]runRow, *store.Page, error) {
	page, err := s.cfg.Store.ListPage(opt)
	if err != nil {
		return nil, nil, err
	}
	now := s.cfg.Now()
	rows := make([]runRow, 0, len(page.Runs))
	for _, m := range page.Runs {
		row := runRow{RunID: m.RunID, Workflow: m.WorkflowName, Status: m.Status, StartedAt: m.StartedAt,
			EndedAt: m.EndedAt, CurrentStep: m.CurrentStep, StepStartedAt: m.StepStartedAt}
		if t0, err := time.Parse(time.RFC3339Nano, row.StartedAt); err == nil {
			row.Started = t0.UTC().Format("2006-01-02 15:04:05")
			t1 := now
			if e, err := time.Parse(time.RFC3339Nano, row.EndedAt); err == nil {
				t1 = e
			} else if row.Status != "running" {
				t1 = t0
			}
			row.Duration = t1.Sub(t0).Seconds()
			row.Took = took(t1.Sub(t0))
		}
		if s.cfg.Store.CutOff(m.RunID, m.Status) {
			row.CutOff = store.CutOffNote
		} else if t, err := time.Parse(time.RFC3339Nano, m.StepStartedAt); err == nil && row.Status == "running" {
			row.StepTook = took(now.Sub(t))
		}
		rows = append(rows, row)
	}
	return rows, page, nil
}

// took prints a duration for people: 4.2s, 3m07s, 2h05m.
func took(d time.Duration) string {
	switch {
	case d < 0:
		return ""
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// apiRuns is GET /api/runs[?status=S&workflow=W&offset=N&limit=N]: a
// page of the list as JSON (limit 100 unless given; 0 for all), with
// X-Total-Count (the runs the filters match).
func (s *Server) apiRuns(w http.ResponseWriter, r *http.Request) {
	opt := listOptions(r)
	if err := CheckStatus(opt.Status); err != nil {
		http.Error(w, codedMessage(err), http.StatusBadRequest)
		return
	}
	rows, page, err := s.runs(opt)
	if err != nil {
		httpError(w, err)
		return
	}
	w.Header().Set("X-Total-Count", strconv.Itoa(page.Total))
	writeJSON(w, rows)
}

// A filter is one status link above the list.
type filter struct {
	Status string
	Count  int
	On     bool
	URL    string
}

// listPage is GET /: a page of runs, newest first, with filters by status
// and workflow and links to the previous and next pages.
func (s *Server) listPage(w http.ResponseWriter, r *http.Request) {
	opt := listOptions(r)
	if err := CheckStatus(opt.Status); err != nil {
		http.Error(w, codedMessage(err), http.StatusBadRequest)
		return
	}
	rows, page, err := s.runs(opt)
	if err != nil {
		httpError(w, err)
		return
	}
	link := func(status string, offset int) string {
		q := url.Values{}
		if status != "" {
			q.Set("status", status)
		}
		if opt.Workflow != "" {
			q.Set("workflow", opt.Workflow)
		}
		if offset > 0 {
			q.Set("offset", strconv.Itoa(offset))
		}
		if opt.Limit != pageSize {
			q.Set("limit", strconv.Itoa(opt.Limit))
		}
		if len(q) == 0 {
			return "/"
		}
		return "/?" + q.Encode()
	}
	total := 0
	var filters []filter
	for _, st := range statuses {
		total += page.Counts[st]
		if page.Counts[st] > 0 || st == opt.Status {
			filters = append(filters, filter{Status: st, Count: page.Counts[st], On: st == opt.Status, URL: link(st, 0)})
		}
	}
	data := struct {
		Base      string
		Runs      []runRow
		Total     int
		Filters   []filter
		Status    string
		Workflow  string
		Workflows []string
		AllURL    string
		From, To  int
		Matching  int
		Prev      string
		Next      string
	}{Base: s.cfg.Store.Base, Runs: rows, Total: total, Filters: filters, Status: opt.Status, Workflow: opt.Workflow,
		Workflows: page.Workflows, AllURL: link("", 0), From: opt.Offset + 1, To: opt.Offset + len(rows), Matching: page.Total}
	if opt.Offset > 0 {
		data.Prev = link(opt.Status, max(opt.Offset-max(opt.Limit, 1), 0))
	}
	if opt.Limit > 0 && opt.Offset+len(rows) < page.Total {
		data.Next = link(opt.Status, opt.Offset+opt.Limit)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := s.pages.ExecuteTemplate(w, "list.html", data); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// runPage is GET /runs/ID: the shell of the run page; run.js draws it from
// /api/runs/ID/view and keeps it current from the events stream.
func (s *Server) runPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	st, err := s.readState(id)
	if err != nil {
		httpError(w, err)
		return
	}
	data := struct {
		RunID, Workflow, Status string
	}{st.RunID, st.WorkflowName, st.Status}
	if data.RunID == "" {
		data.RunID = id
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := s.pages.ExecuteTemplate(w, "run.html", data); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}
