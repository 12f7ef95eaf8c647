package serve

import (
	"fmt"
	"html/template"
	"net/http"
	"time"

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
}

// statuses are the filters of the list, in display order.
var statuses = []string{"running", "halted", "failed", "interrupted", "completed", store.StatusCorrupt}

// runs lists the runs under BASE, newest first. A running run's summary is
// read whole (snapshot plus journal), so its current step is the latest.
func (s *Server) runs() ([]runRow, error) {
	sums, err := s.cfg.Store.List()
	if err != nil {
		return nil, err
	}
	now := s.cfg.Now()
	rows := make([]runRow, 0, len(sums))
	for _, m := range sums {
		row := runRow{RunID: m.RunID, Workflow: m.WorkflowName, Status: m.Status, StartedAt: m.StartedAt,
			EndedAt: m.EndedAt, CurrentStep: m.CurrentStep}
		if m.Status == "running" {
			if st, err := s.readState(m.RunID); err == nil {
				row.Status, row.CurrentStep, row.EndedAt = st.Status, st.CurrentStep, st.EndedAt
			}
		}
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
		rows = append(rows, row)
	}
	return rows, nil
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

// apiRuns is GET /api/runs[?status=S]: the list as JSON.
func (s *Server) apiRuns(w http.ResponseWriter, r *http.Request) {
	rows, err := s.runs()
	if err != nil {
		httpError(w, err)
		return
	}
	writeJSON(w, filterRuns(rows, r.URL.Query().Get("status")))
}

// filterRuns keeps the rows of status ("" keeps all).
func filterRuns(rows []runRow, status string) []runRow {
	if status == "" {
		return rows
	}
	out := rows[:0:0]
	for _, r := range rows {
		if r.Status == status {
			out = append(out, r)
		}
	}
	return out
}

// A filter is one status link above the list.
type filter struct {
	Status string
	Count  int
	On     bool
}

// listPage is GET /: every run, newest first, with a filter by status.
func (s *Server) listPage(w http.ResponseWriter, r *http.Request) {
	rows, err := s.runs()
	if err != nil {
		httpError(w, err)
		return
	}
	want := r.URL.Query().Get("status")
	count := map[string]int{}
	for _, r := range rows {
		count[r.Status]++
	}
	var filters []filter
	for _, st := range statuses {
		if count[st] > 0 || st == want {
			filters = append(filters, filter{Status: st, Count: count[st], On: st == want})
		}
	}
	data := struct {
		Base    string
		Runs    []runRow
		Total   int
		Filters []filter
		Status  string
	}{s.cfg.Store.Base, filterRuns(rows, want), len(rows), filters, want}
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
