package store

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"smith/vm"
)

// saveRun drives run id through Save: its start, a running step and, when
// end is not "", its end.
func saveRun(t testing.TB, s *Store, id, workflow string, started time.Time, end string) {
	t.Helper()
	r, err := s.Create(id)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	st := &vm.State{}
	save := func(d *vm.Delta) {
		st.Apply(d)
		if err := r.Save(d, st); err != nil {
			t.Fatal(err)
		}
	}
	save(&vm.Delta{Seq: 1, CurrentStep: "A", Status: vm.StatusRunning, Start: &vm.RunStart{RunID: id, WorkflowName: workflow, WorkflowPath: "w.yaml", ProgramHash: "h", StartedAt: started.UTC().Format(time.RFC3339Nano)}})
	save(&vm.Delta{Seq: 2, CurrentStep: "B", Status: vm.StatusRunning, Deferred: true,
		Steps: []vm.StepChange{{Name: "B", Result: vm.StepResult{Status: vm.StepRunning, StartedAt: "2026-01-01T00:00:02Z", Attempts: 1}}}})
	if end != "" {
		save(&vm.Delta{Seq: 3, CurrentStep: "B", Status: end, EndedAt: "2026-01-01T00:00:03Z",
			Steps: []vm.StepChange{{Name: "B", Result: vm.StepResult{Status: "completed", Attempts: 1}}}})
	}
}

// listText prints summaries one a line.
func listText(sums []Summary) string {
	var b strings.Builder
	for _, s := range sums {
		fmt.Fprintf(&b, "%s|%s|%s|%s|%s\n", s.RunID, s.WorkflowName, s.Status, s.CurrentStep, s.StepStartedAt)
	}
	return b.String()
}

// TestListIndex: List reads the index of runs that Save keeps; a running
// run is read with its journal (its current step and when it started); a
// missing index is rebuilt, a stale line (state.json changed behind the
// index's back) is read again, a removed run drops out.
func TestListIndex(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	saveRun(t, s, "done", "w1", t0, vm.StatusCompleted)
	saveRun(t, s, "bad", "w2", t0.Add(time.Minute), vm.StatusFailed)
	saveRun(t, s, "live", "w1", t0.Add(2*time.Minute), "")
	want := "live|w1|running|B|2026-01-01T00:00:02Z\nbad|w2|failed|B|\ndone|w1|completed|B|\n"
	check := func(when string) {
		t.Helper()
		got, err := s.List()
		if err != nil {
			t.Fatal(err)
		}
		if g := listText(got); g != want {
			t.Errorf("List() %s =\n%swant\n%s", when, g, want)
		}
	}
	idx := filepath.Join(s.Base, ".orchestrator", indexFile)
	b, err := os.ReadFile(idx)
	if err != nil {
		t.Fatalf("Save wrote no index: %v", err)
	}
	// done and bad: started, ended; live: started.
	if n := strings.Count(string(b), "\n"); n != 5 {
		t.Errorf("index has %d lines, want 5 (a line per status change):\n%s", n, b)
	}
	check("from the index")
	if err := os.Remove(idx); err != nil {
		t.Fatal(err)
	}
	check("without an index")
	if _, err := os.Stat(idx); err != nil {
		t.Errorf("List did not rebuild the index: %v", err)
	}
	// A state.json changed behind the index's back (an older smithvm).
	p := filepath.Join(s.RunsDir(), "bad", stateFile)
	old, _ := os.ReadFile(p)
	if err := os.WriteFile(p, []byte(strings.Replace(string(old), `"status": "failed"`, `"status": "interrupted"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	want = strings.Replace(want, "bad|w2|failed", "bad|w2|interrupted", 1)
	check("after bad's state.json changed")
	if err := os.RemoveAll(filepath.Join(s.RunsDir(), "done")); err != nil {
		t.Fatal(err)
	}
	want = strings.Replace(want, "done|w1|completed|B|\n", "", 1)
	check("after done was removed")
}

// TestListPage: filters by status and workflow, counts and pages.
func TestListPage(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 7; i++ {
		end := vm.StatusCompleted
		if i%3 == 0 {
			end = vm.StatusFailed
		}
		saveRun(t, s, fmt.Sprintf("r%d", i), []string{"a", "b"}[i%2], t0.Add(time.Duration(i)*time.Minute), end)
	}
	tests := []struct {
		name string
		opt  ListOptions
		want string // ids, total, counts
	}{
		{"all", ListOptions{}, "r6 r5 r4 r3 r2 r1 r0 | 7 | completed=4 failed=3"},
		{"page 2 of 3", ListOptions{Offset: 3, Limit: 3}, "r3 r2 r1 | 7 | completed=4 failed=3"},
		{"past the end", ListOptions{Offset: 9, Limit: 3}, " | 7 | completed=4 failed=3"},
		{"failed", ListOptions{Status: "failed"}, "r6 r3 r0 | 3 | completed=4 failed=3"},
		{"workflow a", ListOptions{Workflow: "a"}, "r6 r4 r2 r0 | 4 | completed=2 failed=2"},
		{"workflow b, failed, first", ListOptions{Workflow: "b", Status: "failed", Limit: 1}, "r3 | 1 | completed=2 failed=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := s.ListPage(tt.opt)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range p.Runs {
				ids = append(ids, r.RunID)
			}
			got := fmt.Sprintf("%s | %d | completed=%d failed=%d", strings.Join(ids, " "), p.Total, p.Counts["completed"], p.Counts["failed"])
			if got != tt.want {
				t.Errorf("ListPage(%+v) = %q, want %q", tt.opt, got, tt.want)
			}
			if w := strings.Join(p.Workflows, ","); w != "a,b" {
				t.Errorf("ListPage(%+v).Workflows = %s, want a,b", tt.opt, w)
			}
		})
	}
}

// BenchmarkListPage5000 lists the first page of 20 runs out of 5,000 (50
// of them running, read live) and reports the median time
// (-benchtime 11x for a median of 11).
func BenchmarkListPage5000(b *testing.B) {
	s := manyRuns(b, 5000)
	b.ResetTimer()
	var ms []float64
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := s.ListPage(ListOptions{Limit: 20}); err != nil {
			b.Fatal(err)
		}
		ms = append(ms, float64(time.Since(t0).Microseconds())/1000)
	}
	sort.Float64s(ms)
	b.ReportMetric(ms[len(ms)/2], "ms-median")
}

// manyRuns makes n runs by writing their state.json (as a finished run
// leaves it; every 100th running, with a journal line), then lists them
// once so the index exists.
func manyRuns(b testing.TB, n int) *Store {
	s := newStore(b)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("run-%05d", i)
		root := filepath.Join(s.RunsDir(), id)
		if err := os.MkdirAll(filepath.Join(root, "logs"), 0o755); err != nil {
			b.Fatal(err)
		}
		status, ended := "completed", `"2026-01-02T00:00:00Z"`
		if i%100 == 0 {
			status, ended = "running", `""`
			line := `{"seq":8,"delta":{"current_step":"Step9","phase":"start","status":"running","event_seq":20,"steps":[{"name":"Step9","result":{"status":"running","started_at":"2026-01-01T00:00:09Z","attempts":1}}]}}` + "\n"
			if err := os.WriteFile(filepath.Join(root, journalFile), []byte(line), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		var steps strings.Builder
		for j := 0; j < 10; j++ {
			fmt.Fprintf(&steps, `%s"Step%d": {"status": "completed", "exit_code": 0, "output": "ok", "duration": 0.1, "attempts": 1, "started_at": "2026-01-01T00:00:0%dZ"}`, map[bool]string{true: "", false: ", "}[j == 0], j, j)
		}
		state := fmt.Sprintf(`{"run_id": %q, "workflow_name": "w%d", "workflow_path": "/p/w.yaml", "status": %q, "started_at": %q, "ended_at": %s, "current_step": "Step9", "context": {"a": "b"}, "steps": {%s}, "journal_seq": 7}`,
			id, i%7, status, t0.Add(time.Duration(i)*time.Second).Format(time.RFC3339Nano), ended, steps.String())
		if err := os.WriteFile(filepath.Join(root, stateFile), []byte(state), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.List(); err != nil {
		b.Fatal(err)
	}
	return s
}
