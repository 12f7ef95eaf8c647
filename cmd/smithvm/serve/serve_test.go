package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"smith/source"
	"smith/vm"
	"smith/vm/store"
	"smith/workers/confine"
)

// secretValue is API_TOKEN's value in the tests' environment.
const secretValue = "hunter2-very-secret"

// fixture is a BASE with runs made through the run store.
type fixture struct {
	t     testing.TB
	base  string
	store *store.Store
	dirs  confine.Dir
	flow  string
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	base := t.TempDir()
	st, err := store.New(base)
	if err != nil {
		t.Fatal(err)
	}
	dirs, err := confine.New(base)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, base: base, store: st, dirs: dirs, flow: filepath.Join(base, "flow.yaml")}
	flow, err := os.ReadFile(filepath.Join("testdata", "flow.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.flow, flow, 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// run makes run id with status, its Prep step completed, and events
// 1..nEvents.
func (f *fixture) run(id, status string, started time.Time, nEvents int) {
	f.t.Helper()
	r, err := f.store.Create(id)
	if err != nil {
		f.t.Fatal(err)
	}
	defer r.Close()
	st := vm.State{RunID: id, WorkflowName: "demo", WorkflowPath: f.flow, Status: status,
		StartedAt: started.UTC().Format(time.RFC3339Nano), CurrentStep: "Build", Context: map[string]any{},
		Steps: map[string]*vm.StepResult{"Prep": {Status: "completed", Attempts: 1, Output: "prepared", Duration: 0.5}}}
	if status == vm.StatusRunning {
		st.Steps["Build"] = &vm.StepResult{Status: vm.StepRunning}
	}
	if err := r.WriteSnapshot(&st); err != nil {
		f.t.Fatal(err)
	}
	for i := 1; i <= nEvents; i++ {
		if err := r.AppendEvent(vm.Event{RunID: id, Seq: i, Level: "INFO", Kind: "step_started", Step: fmt.Sprintf("S%d", i), Time: started}); err != nil {
			f.t.Fatal(err)
		}
	}
}

// write writes text to rel under BASE.
func (f *fixture) write(rel, text string) {
	f.t.Helper()
	p := filepath.Join(f.base, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// server returns the fixture's Server with cfg's other fields.
func (f *fixture) server(cfg Config) *Server {
	f.t.Helper()
	cfg.Store, cfg.Dirs = f.store, f.dirs
	if cfg.Env == nil {
		cfg.Env = func(k string) (string, bool) {
			if k == "API_TOKEN" {
				return secretValue, true
			}
			return "", false
		}
	}
	s, err := New(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

// get serves a GET of target with headers (key, value pairs).
func get(s http.Handler, target string, headers ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", target, nil)
	req.Host = "127.0.0.1:8377"
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1]
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	return w
}

func TestCheckAddr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, addr, token string
		refused           bool
	}{
		{"default", DefaultAddr, "", false},
		{"localhost", "localhost:9000", "", false},
		{"ipv6 loopback", "[::1]:9000", "", false},
		{"other loopback", "127.0.0.2:9000", "", false},
		{"all interfaces", "0.0.0.0:8377", "", true},
		{"empty host", ":8377", "", true},
		{"lan address", "192.168.1.5:8377", "", true},
		{"all interfaces with token", "0.0.0.0:8377", "t0k", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckAddr(tt.addr, tt.token)
			var ae *AddrError
			if got := errors.As(err, &ae); got != tt.refused {
				t.Fatalf("CheckAddr(%q, %q) = %v, want refused=%v", tt.addr, tt.token, err, tt.refused)
			}
			if tt.refused && ae.ErrCode() != source.EServeNoToken {
				t.Errorf("code = %s, want E_SERVE_NO_TOKEN", ae.ErrCode())
			}
		})
	}
}

func TestAuth(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.run("r1", "completed", time.Now(), 1)
	open := f.server(Config{})
	locked := f.server(Config{Token: "s3cret"})
	tests := []struct {
		name    string
		s       http.Handler
		target  string
		headers []string
		want    int
	}{
		{"loopback without token", open, "/", nil, 200},
		{"api without token", open, "/api/runs/r1", nil, 200},
		{"foreign Host without token (DNS rebinding)", open, "/api/runs", []string{"Host", "evil.example:8377"}, 403},
		{"no token", locked, "/api/runs", nil, 401},
		{"no token, page", locked, "/runs/r1", nil, 401},
		{"no token, asset", locked, "/assets/run.js", nil, 401},
		{"no token, events", locked, "/api/runs/r1/events", nil, 401},
		{"wrong bearer", locked, "/api/runs", []string{"Authorization", "Bearer nope"}, 401},
		{"bearer", locked, "/api/runs", []string{"Authorization", "Bearer s3cret"}, 200},
		{"bearer scheme in lower case", locked, "/api/runs", []string{"Authorization", "bearer s3cret"}, 200},
		{"cookie", locked, "/api/runs/r1", []string{"Cookie", TokenCookie + "=s3cret"}, 200},
		{"wrong cookie", locked, "/api/runs/r1", []string{"Cookie", TokenCookie + "=s3cre"}, 401},
		{"token link sets the cookie", locked, "/?token=s3cret", nil, 303},
		{"wrong token link", locked, "/?token=nope", nil, 401},
		{"token in query elsewhere is not enough", locked, "/api/runs?token=s3cret", nil, 401},
		{"any Host with a token", locked, "/api/runs", []string{"Host", "box.lan:8377", "Authorization", "Bearer s3cret"}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := get(tt.s, tt.target, tt.headers...)
			if w.Code != tt.want {
				t.Fatalf("GET %s = %d, want %d\n%s", tt.target, w.Code, tt.want, w.Body)
			}
			if tt.want == 303 {
				c := w.Result().Cookies()
				if len(c) != 1 || c[0].Name != TokenCookie || c[0].Value != "s3cret" || !c[0].HttpOnly || c[0].SameSite != http.SameSiteStrictMode {
					t.Errorf("cookies = %v, want %s=s3cret HttpOnly SameSite=Strict", c, TokenCookie)
				}
			}
		})
	}
}

// post serves a resume POST.
func post(s http.Handler, target, origin, form string, headers ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", target, strings.NewReader(form))
	req.Host = "127.0.0.1:8377"
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	return w
}

func TestResumeChecks(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.run("h1", vm.StatusHalted, time.Now(), 1)
	f.run("done", vm.StatusCompleted, time.Now(), 1)
	var mu sync.Mutex
	var calls []string
	resume := func(id, signal, note string) error {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, id+"|"+signal+"|"+note)
		if note == "locked" {
			return &source.Error{Code: source.ERunLocked, Msg: "run 'h1' is being driven by another smithvm process (pid 7)"}
		}
		return nil
	}
	s := f.server(Config{Resume: resume})
	tok := f.server(Config{Resume: resume, Token: "s3cret"})
	form := url.Values{"signal": {"SIGNAL:APPROVED"}, "note": {"use v2"}}.Encode()
	const self = "http://127.0.0.1:8377"
	tests := []struct {
		name     string
		s        http.Handler
		target   string
		origin   string
		form     string
		headers  []string
		want     int
		wantCall string
		body     string
	}{
		{"no Origin", s, "/api/runs/h1/resume", "", form, nil, 403, "", "Origin"},
		{"other Origin", s, "/api/runs/h1/resume", "http://evil.example", form, nil, 403, "", "Origin"},
		{"other port", s, "/api/runs/h1/resume", "http://127.0.0.1:9999", form, nil, 403, "", "Origin"},
		{"token missing", tok, "/api/runs/h1/resume", self, form, nil, 401, "", "token"},
		{"same Origin", s, "/api/runs/h1/resume", self, form, nil, 202, "h1|SIGNAL:APPROVED|use v2", `"ok":true`},
		{"same Origin with token", tok, "/api/runs/h1/resume", self, form, []string{"Authorization", "Bearer s3cret"}, 202, "h1|SIGNAL:APPROVED|use v2", `"ok":true`},
		{"locked", s, "/api/runs/h1/resume", self, "note=locked", nil, 409, "h1||locked", "E_RUN_LOCKED"},
		{"signal without its prefix", s, "/api/runs/h1/resume", self, "signal=APPROVED", nil, 400, "", "E_UNKNOWN_SIGNAL: signal 'APPROVED' is not one that 'Build' accepts"},
		{"mistyped signal", s, "/api/runs/h1/resume", self, "signal=SIGNAL:APROVED", nil, 400, "", "did you mean 'SIGNAL:APPROVED'?"},
		{"completed run", s, "/api/runs/done/resume", self, form, nil, 409, "", "already completed"},
		{"unknown run", s, "/api/runs/nope/resume", self, form, nil, 404, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			calls = nil
			mu.Unlock()
			w := post(tt.s, tt.target, tt.origin, tt.form, tt.headers...)
			if w.Code != tt.want || !strings.Contains(w.Body.String(), tt.body) {
				t.Errorf("POST %s = %d %q, want %d containing %q", tt.target, w.Code, w.Body, tt.want, tt.body)
			}
			mu.Lock()
			got := strings.Join(calls, ",")
			mu.Unlock()
			if got != tt.wantCall {
				t.Errorf("Resume calls = %q, want %q", got, tt.wantCall)
			}
		})
	}
	if w := get(s, "/api/runs/h1/resume"); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET resume = %d, want 405", w.Code)
	}
}

// TestPathsStayInStore tries to name files outside the run store (and
// outside WORKSPACE/artifacts/STEP) through every URL that takes a name:
// '..', encoded slashes, symlinks. None may serve the outside file.
func TestPathsStayInStore(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.run("r1", "completed", time.Now(), 2)
	outside := t.TempDir()
	const leak = "TOP-SECRET-OUTSIDE"
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte(leak), 0o644)
	os.WriteFile(filepath.Join(outside, "state.json"), []byte(`{"run_id":"evil","workflow_name":"`+leak+`","status":"completed","steps":{}}`), 0o644)
	os.MkdirAll(filepath.Join(outside, "logs"), 0o755)
	os.WriteFile(filepath.Join(outside, "logs", "events.jsonl"), []byte(`{"event_seq":1,"event":"`+leak+`"}`+"\n"), 0o644)
	f.write("workspace/artifacts/Prep/prep.txt", "prepared")
	f.write("secret.txt", leak) // in BASE, outside the artifacts
	// A run directory that is a symlink out of the store, and output
	// files that are symlinks.
	if err := os.Symlink(outside, filepath.Join(f.store.RunsDir(), "evil")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(f.base, "workspace/artifacts/Prep/link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(f.base, "workspace/artifacts/Prep/dir")); err != nil {
		t.Fatal(err)
	}
	// A step whose logs are a symlink to the outside.
	os.Remove(filepath.Join(f.store.RunsDir(), "r1", "logs", "Prep-stderr.log"))
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(f.store.RunsDir(), "r1", "logs", "Prep-stderr.log")); err != nil {
		t.Fatal(err)
	}
	s := f.server(Config{})
	targets := []string{
		"/runs/evil",
		"/api/runs/evil",
		"/api/runs/evil/view",
		"/api/runs/evil/events",
		"/api/runs/evil/graph",
		"/api/runs/..%2f..%2f..%2f" + strings.TrimPrefix(outside, "/"),
		"/api/runs/%2e%2e",
		"/api/runs/..%2F..%2Fsecret.txt/view",
		"/runs/..%2f..%2fsecret.txt",
		"/api/runs/r1/steps/..%2f..%2f..%2f..%2fsecret.txt/stderr",
		"/api/runs/r1/steps/Prep/files/..%2f..%2f..%2fsecret.txt",
		"/api/runs/r1/steps/Prep/files/../../../secret.txt",
		"/api/runs/r1/steps/Prep/files/%2e%2e/%2e%2e/%2e%2e/secret.txt",
		"/api/runs/r1/steps/Prep/files/link.txt",
		"/api/runs/r1/steps/Prep/files/dir/secret.txt",
		"/api/runs/r1/steps/Prep/files/" + url.PathEscape(filepath.Join(outside, "secret.txt")),
		"/api/runs/r1/steps/Prep/stderr",
		"/api/runs/r1/steps/%2e%2e/stderr",
		"/assets/..%2f..%2fserver.go",
		"/assets/../server.go",
	}
	for _, target := range targets {
		t.Run(target, func(t *testing.T) {
			w := get(s, target)
			if strings.Contains(w.Body.String(), leak) {
				t.Fatalf("GET %s served the outside file: %d %q", target, w.Code, w.Body)
			}
			if w.Code == 200 && target != "/api/runs/r1/steps/Prep/stderr" {
				t.Errorf("GET %s = 200 %q, want a refusal", target, w.Body)
			}
		})
	}
	// The legitimate file is served.
	if w := get(s, "/api/runs/r1/steps/Prep/files/prep.txt"); w.Code != 200 || w.Body.String() != "prepared" {
		t.Errorf("output file = %d %q, want 200 prepared", w.Code, w.Body)
	}
	// And listed without the symlinks.
	if w := get(s, "/api/runs/r1/view"); !strings.Contains(w.Body.String(), `"prep.txt"`) || strings.Contains(w.Body.String(), "link.txt") {
		t.Errorf("view lists %s", w.Body)
	}
}

// TestReadsLeaveTheLock reads a run that another process drives (the test
// holds its lock): everything is served, and the lock is still held.
// TestErrorsNameTheirCode: a refused read says its code first, as the CLI
// does (an unknown run, a damaged state, a status filter that is none).
func TestErrorsNameTheirCode(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.run("bad", "completed", time.Now(), 1)
	f.write(".orchestrator/runs/bad/state.json", "{garbage")
	os.Remove(filepath.Join(f.store.RunsDir(), "bad", "journal.jsonl"))
	s := f.server(Config{})
	for _, tt := range []struct {
		target string
		code   int
		prefix string
	}{
		{"/api/runs/nope", 404, "E_STATE_NOT_FOUND: no run 'nope'"},
		{"/runs/nope", 404, "E_STATE_NOT_FOUND: no run 'nope'"},
		{"/api/runs/bad", 500, "E_STATE_CORRUPT: state of run 'bad' is corrupt"},
		{"/runs/bad", 500, "E_STATE_CORRUPT: state of run 'bad' is corrupt"},
		{"/api/runs?status=complete", 400, "E_USAGE: unknown status 'complete' (did you mean 'completed'?)"},
		{"/?status=complete", 400, "E_USAGE: unknown status 'complete' (did you mean 'completed'?)"},
	} {
		if w := get(s, tt.target); w.Code != tt.code || !strings.HasPrefix(w.Body.String(), tt.prefix) {
			t.Errorf("GET %s = %d %q, want %d starting with %q", tt.target, w.Code, w.Body, tt.code, tt.prefix)
		}
	}
}

func TestReadsLeaveTheLock(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.run("r1", vm.StatusRunning, time.Now(), 3)
	r, err := f.store.Open("r1")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	lockBefore, _ := os.ReadFile(filepath.Join(r.Root(), "lock"))
	s := f.server(Config{})
	for _, target := range []string{"/", "/runs/r1", "/api/runs", "/api/runs/r1", "/api/runs/r1/view", "/api/runs/r1/graph", "/api/runs/r1/steps/Prep/stdout"} {
		if w := get(s, target); w.Code != 200 {
			t.Errorf("GET %s while locked = %d %s", target, w.Code, w.Body)
		}
	}
	var se *source.Error
	if _, err := f.store.Open("r1"); !errors.As(err, &se) || se.Code != source.ERunLocked {
		t.Errorf("the run's lock was released by a read: Open = %v, want E_RUN_LOCKED", err)
	}
	lockAfter, _ := os.ReadFile(filepath.Join(r.Root(), "lock"))
	if string(lockBefore) != string(lockAfter) {
		t.Errorf("lock file changed: %q -> %q", lockBefore, lockAfter)
	}
}

// A run whose state says running but that no process drives (its driver
// was SIGKILLed) is shown cut off, as status and list print it; one that
// is driven is not.
func TestCutOffRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.run("dead", vm.StatusRunning, time.Now(), 1)
	f.run("live", vm.StatusRunning, time.Now(), 1)
	r, err := f.store.Open("live")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s := f.server(Config{})
	for id, want := range map[string]string{"dead": store.CutOffNote, "live": ""} {
		var v struct {
			Driven bool   `json:"driven"`
			CutOff string `json:"cut_off"`
		}
		w := get(s, "/api/runs/"+id+"/view")
		if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
			t.Fatalf("GET /api/runs/%s/view: %v\n%s", id, err, w.Body)
		}
		if v.CutOff != want || v.Driven != (want == "") {
			t.Errorf("view of %s: cut_off %q, driven %v; want %q, %v", id, v.CutOff, v.Driven, want, want == "")
		}
	}
	page := get(s, "/").Body.String()
	if n := strings.Count(page, "("+store.CutOffNote+")"); n != 1 {
		t.Errorf("list page shows %d runs cut off, want 1 (dead):\n%s", n, page)
	}
	var rows []struct {
		RunID  string `json:"run_id"`
		CutOff string `json:"cut_off"`
	}
	if err := json.Unmarshal(get(s, "/api/runs").Body.Bytes(), &rows); err != nil || len(rows) != 2 {
		t.Fatalf("GET /api/runs: %v, %d rows, want 2", err, len(rows))
	}
	for _, row := range rows {
		if want := map[string]string{"dead": store.CutOffNote}[row.RunID]; row.CutOff != want {
			t.Errorf("/api/runs row %s: cut_off %q, want %q", row.RunID, row.CutOff, want)
		}
	}
}

func TestSecretsMasked(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.run("r1", "completed", time.Now(), 0)
	root := filepath.Join(f.store.RunsDir(), "r1")
	os.WriteFile(filepath.Join(root, "logs", "Prep-stderr.log"), []byte("token="+secretValue+"\n"), 0o644)
	os.WriteFile(filepath.Join(root, "logs", "events.jsonl"), []byte(`{"event_seq":1,"event":"debug","message":"sent `+secretValue+`"}`+"\n"), 0o644)
	f.write("workspace/artifacts/Prep/prep.txt", "key "+secretValue)
	s := f.server(Config{})
	for _, target := range []string{"/api/runs/r1/steps/Prep/stderr", "/api/runs/r1/steps/Prep/files/prep.txt"} {
		w := get(s, target)
		if w.Code != 200 || strings.Contains(w.Body.String(), secretValue) || !strings.Contains(w.Body.String(), "***") {
			t.Errorf("GET %s = %d %q, want the secret masked", target, w.Code, w.Body)
		}
	}
	ev := readEvents(t, httptest.NewServer(s), "/api/runs/r1/events", "", 1)
	if strings.Contains(ev, secretValue) || !strings.Contains(ev, "sent ***") {
		t.Errorf("events = %q, want the secret masked", ev)
	}
}

// readEvents reads the event stream at path until it has seen n events,
// and returns their id and data lines.
func readEvents(t *testing.T, ts *httptest.Server, path, lastID string, n int) string {
	t.Helper()
	defer ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+path, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	var out []string
	sc := bufio.NewScanner(resp.Body)
	seen := 0
	for seen < n && sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "id: ") || strings.HasPrefix(l, "data: ") {
			out = append(out, l)
		}
		if strings.HasPrefix(l, "id: ") {
			seen++
		}
		if l == "" && seen >= n {
			break
		}
	}
	// Read the data line of the last event.
	if sc.Scan() {
		out = append(out, sc.Text())
	}
	return strings.Join(out, "\n")
}

// TestEventsReconnect: the stream's ids are event_seq; Last-Event-ID gets
// exactly the events after it, then new ones as they are appended, and a
// torn last line waits for its newline.
func TestEventsReconnect(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.run("r1", vm.StatusRunning, time.Now(), 5)
	s := f.server(Config{Poll: 10 * time.Millisecond})
	events := filepath.Join(f.store.RunsDir(), "r1", "logs", "events.jsonl")
	go func() {
		time.Sleep(100 * time.Millisecond)
		fh, err := os.OpenFile(events, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return
		}
		defer fh.Close()
		io.WriteString(fh, `{"event_seq":6,"event":"step_`)
		time.Sleep(60 * time.Millisecond)
		io.WriteString(fh, `completed"}`+"\n")
	}()
	got := readEvents(t, httptest.NewServer(s), "/api/runs/r1/events", "3", 3)
	var ids []string
	for _, l := range strings.Split(got, "\n") {
		if id, ok := strings.CutPrefix(l, "id: "); ok {
			ids = append(ids, id)
		}
	}
	if strings.Join(ids, ",") != "4,5,6" {
		t.Errorf("after Last-Event-ID 3 got ids %v, want 4,5,6\n%s", ids, got)
	}
	if !strings.Contains(got, `data: {"event_seq":6,"event":"step_completed"}`) {
		t.Errorf("event 6 not whole:\n%s", got)
	}
	// Without Last-Event-ID: everything from the first event.
	all := readEvents(t, httptest.NewServer(s), "/api/runs/r1/events", "", 6)
	if !strings.HasPrefix(all, "id: 1\n") {
		t.Errorf("fresh stream starts %q, want id: 1", all[:min(len(all), 40)])
	}
}

// runsFixture makes n runs, some of every status.
func runsFixture(t testing.TB, n int) *fixture {
	f := newFixture(t)
	statuses := []string{"completed", "failed", "halted", "running", "interrupted"}
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	// One run of each status is made by the store; the others are copies
	// of its state.json with their own id and start (the list reads
	// nothing else), written without the store's fsyncs, which made this
	// fixture take seconds.
	for i := range n {
		id, started := fmt.Sprintf("run-%04d", i), t0.Add(time.Duration(i)*time.Minute)
		if i < len(statuses) {
			f.run(id, statuses[i], started, 0)
			continue
		}
		model, err := os.ReadFile(filepath.Join(f.store.RunsDir(), fmt.Sprintf("run-%04d", i%len(statuses)), "state.json"))
		if err != nil {
			t.Fatal(err)
		}
		var fields map[string]any
		if err := json.Unmarshal(model, &fields); err != nil {
			t.Fatal(err)
		}
		fields["run_id"], fields["started_at"] = id, started.UTC().Format(time.RFC3339Nano)
		data, err := json.Marshal(fields)
		root := filepath.Join(f.store.RunsDir(), id)
		if err == nil {
			err = os.Mkdir(root, 0o755)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(root, "state.json"), data, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// TestListPages: the list of 1,000 runs comes in pages of 100, newest
// first, with the status filter's counts over all runs, links to the
// next page, and the same pages and filters in /api/runs.
func TestListPages(t *testing.T) {
	t.Parallel()
	f := runsFixture(t, 1000)
	s := f.server(Config{})
	w := get(s, "/")
	body := w.Body.String()
	if w.Code != 200 || strings.Count(body, "<tr data-run=") != 100 {
		t.Fatalf("GET / = %d with %d rows, want 100", w.Code, strings.Count(body, "<tr data-run="))
	}
	if i, j := strings.Index(body, `data-run="run-0999"`), strings.Index(body, `data-run="run-0900"`); i < 0 || j < i || strings.Contains(body, `data-run="run-0899"`) {
		t.Errorf("first page: want run-0999 to run-0900, newest first")
	}
	for _, want := range []string{`all (1000)`, `failed (200)`, `runs 1–100 of 1000`, `href="/?offset=100" id="next"`} {
		if !strings.Contains(body, want) {
			t.Errorf("GET / lacks %q", want)
		}
	}
	w = get(s, "/?offset=100")
	if b := w.Body.String(); !strings.Contains(b, `data-run="run-0899"`) || !strings.Contains(b, `id="prev"`) || strings.Contains(b, `data-run="run-0900"`) {
		t.Errorf("second page: want run-0899 on, and a link back")
	}
	w = get(s, "/?status=failed")
	if n := strings.Count(w.Body.String(), "<tr data-run="); n != 100 || strings.Contains(w.Body.String(), `data-status="completed"><td>`) {
		t.Errorf("filter failed: %d rows, want 100 failed ones", n)
	}
	tests := []struct {
		target string
		rows   int
		total  string
	}{
		{"/api/runs", 100, "1000"},
		{"/api/runs?limit=0", 1000, "1000"},
		{"/api/runs?status=failed&limit=0", 200, "200"},
		{"/api/runs?workflow=demo&offset=950", 50, "1000"},
		{"/api/runs?workflow=other", 0, "0"},
	}
	for _, tt := range tests {
		w := get(s, tt.target)
		var rows []map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &rows); err != nil || len(rows) != tt.rows || w.Header().Get("X-Total-Count") != tt.total {
			t.Errorf("GET %s = %d rows (X-Total-Count %s), %v; want %d (%s)", tt.target, len(rows), w.Header().Get("X-Total-Count"), err, tt.rows, tt.total)
		}
	}
}

// BenchmarkListPage5000 renders the first page of the run list of 5,000
// runs (1,000 of them running, read with their journal) and reports the
// median (-benchtime 11x: the median of 11).
func BenchmarkListPage5000(b *testing.B) {
	f := runsFixture(b, 5000)
	s := f.server(Config{})
	get(s, "/") // the index is built
	var ms []float64
	for b.Loop() {
		t0 := time.Now()
		if w := get(s, "/"); w.Code != 200 {
			b.Fatal(w.Code)
		}
		ms = append(ms, float64(time.Since(t0).Microseconds())/1000)
	}
	sort.Float64s(ms)
	b.ReportMetric(ms[len(ms)/2], "ms-median")
}

// BenchmarkListPage1000 renders the run list of 1,000 runs (reading every
// state.json); CONTRACT 13 wants it well under 300 ms.
func BenchmarkListPage1000(b *testing.B) {
	f := runsFixture(b, 1000)
	s := f.server(Config{})
	for b.Loop() {
		if w := get(s, "/"); w.Code != 200 {
			b.Fatal(w.Code)
		}
	}
}

// TestStepUsage: a step's tokens and cost are the sums over all its
// events (every visit, iteration and thread), runs its step_started
// events, and the run's total is the sum of the steps'.
func TestStepUsage(t *testing.T) {
	t.Parallel()
	log := `{"event_seq":1,"step":"A","event":"step_started"}
{"event_seq":2,"step":"A","event":"step_completed","tokens":15,"cost_usd":0.0002}
{"event_seq":3,"step":"B","event":"step_started"}
{"event_seq":4,"step":"B","event":"step_failed","tokens":7}
{"event_seq":5,"step":"A","event":"step_started","thread":"1"}
{"event_seq":6,"step":"A","event":"step_completed","tokens":30,"cost_usd":0.0003,"thread":"1"}
{"event_seq":7,"event":"run_completed"}
`
	steps, total := readUsage(strings.NewReader(log))
	got := fmt.Sprintf("A %+v B %+v total %+v", steps["A"], steps["B"], total)
	want := "A {Runs:2 Tokens:45 Cost:0.0005} B {Runs:1 Tokens:7 Cost:0} total {Runs:0 Tokens:52 Cost:0.0005}"
	if got != want {
		t.Errorf("readUsage = %s, want %s", got, want)
	}
	if FormatCost(0) != "-" || FormatCost(0.00028) != "$0.0003" {
		t.Errorf("FormatCost(0), FormatCost(0.00028) = %q, %q", FormatCost(0), FormatCost(0.00028))
	}
}

// TestStopRetryChecks: stop and retry are POSTs from this server's page,
// each the CLI's: stop says when nothing drives the run, retry refuses a
// completed and a halted run and passes a refusal (E_RUN_LOCKED) on.
func TestStopRetryChecks(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.run("h1", vm.StatusHalted, time.Now(), 1)
	f.run("f1", vm.StatusFailed, time.Now(), 1)
	f.run("done", vm.StatusCompleted, time.Now(), 1)
	f.run("r1", vm.StatusRunning, time.Now(), 1)
	var mu sync.Mutex
	var calls []string
	record := func(c string) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, c)
	}
	s := f.server(Config{
		Resume: func(id, signal, note string) error {
			record("resume " + id + "|" + signal + "|" + note)
			if id == "r1" {
				return &source.Error{Code: source.ERunLocked, Msg: "run 'r1' is being driven by another smithvm process (pid 7)"}
			}
			return nil
		},
		Stop: func(id string) (bool, error) {
			record("stop " + id)
			return id == "r1", nil
		},
	})
	const self = "http://127.0.0.1:8377"
	tests := []struct {
		name, target, origin string
		want                 int
		call, body           string
	}{
		{"stop without Origin", "/api/runs/r1/stop", "", 403, "", "Origin"},
		{"stop a running run", "/api/runs/r1/stop", self, 202, "stop r1", `"ok":true`},
		{"stop a run nothing drives", "/api/runs/f1/stop", self, 409, "stop f1", "is not running (status: failed)"},
		{"stop an unknown run", "/api/runs/nope/stop", self, 404, "", ""},
		{"retry a failed run", "/api/runs/f1/retry", self, 202, "resume f1||", `"ok":true`},
		{"retry a halted run", "/api/runs/h1/retry", self, 400, "", "awaiting a decision"},
		{"retry a completed run", "/api/runs/done/retry", self, 409, "", "already completed"},
		{"retry a locked run", "/api/runs/r1/retry", self, 409, "resume r1||", "E_RUN_LOCKED"},
		{"retry from elsewhere", "/api/runs/f1/retry", "http://evil.example", 403, "", "Origin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			calls = nil
			mu.Unlock()
			w := post(s, tt.target, tt.origin, "")
			if w.Code != tt.want || !strings.Contains(w.Body.String(), tt.body) {
				t.Errorf("POST %s = %d %q, want %d containing %q", tt.target, w.Code, w.Body, tt.want, tt.body)
			}
			mu.Lock()
			got := strings.Join(calls, ",")
			mu.Unlock()
			if got != tt.call {
				t.Errorf("calls = %q, want %q", got, tt.call)
			}
		})
	}
	off := f.server(Config{})
	if w := post(off, "/api/runs/r1/stop", self, ""); w.Code != 403 {
		t.Errorf("stop with no Stop configured = %d, want 403", w.Code)
	}
}

// TestPollEvents: a poll returns the events after `after` at once, with
// the offset read up to as its ETag; sent back, it gets 304 until a line
// is appended, then only the new line.
func TestPollEvents(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.run("p1", vm.StatusRunning, time.Now(), 3)
	s := f.server(Config{})
	w := get(s, "/api/runs/p1/events?poll=1&after=1")
	if w.Code != 200 || strings.Count(w.Body.String(), "\n") != 2 || !strings.Contains(w.Body.String(), `"event_seq":2`) {
		t.Fatalf("poll after 1 = %d %q, want events 2 and 3", w.Code, w.Body)
	}
	tag := w.Header().Get("ETag")
	req := httptest.NewRequest("GET", "/api/runs/p1/events?poll=1&after=3", nil)
	req.Host = "127.0.0.1:8377"
	req.Header.Set("If-None-Match", tag)
	w = httptest.NewRecorder()
	s.ServeHTTP(w, req)
	if w.Code != http.StatusNotModified {
		t.Errorf("poll with the ETag and nothing new = %d, want 304", w.Code)
	}
	r, err := f.store.Open("p1")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.AppendEvent(vm.Event{RunID: "p1", Seq: 4, Level: "INFO", Kind: "step_started", Step: "S4", Time: time.Now()}); err != nil {
		t.Fatal(err)
	}
	r.Close()
	w = httptest.NewRecorder()
	s.ServeHTTP(w, req)
	if w.Code != 200 || strings.Count(w.Body.String(), "\n") != 1 || !strings.Contains(w.Body.String(), `"event_seq":4`) {
		t.Errorf("poll after an append = %d %q, want event 4 alone", w.Code, w.Body)
	}
}

// The stdout of a step is the spill file its result names (a loop
// iteration's own, logs/<Step>.<i>-stdout.log), else the kept output.
func TestStdoutReadsTheRecordedSpill(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r, err := f.store.Create("r1")
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(f.store.RunsDir(), "r1")
	spill := filepath.Join(root, "logs", "Big.1-stdout.log")
	st := vm.State{RunID: "r1", WorkflowName: "demo", WorkflowPath: f.flow, Status: vm.StatusCompleted, Context: map[string]any{},
		Steps: map[string]*vm.StepResult{"Big": {Status: "completed", Attempts: 1, Output: "the first 8 KiB", Truncated: true, SpillStdoutPath: spill}}}
	if err := r.WriteSnapshot(&st); err != nil {
		t.Fatal(err)
	}
	r.Close()
	os.WriteFile(spill, []byte("the whole stream"), 0o600)
	s := f.server(Config{})
	if w := get(s, "/api/runs/r1/steps/Big/stdout"); w.Code != 200 || w.Body.String() != "the whole stream" {
		t.Errorf("GET stdout = %d %q, want the spill file", w.Code, w.Body)
	}
}

// TestLiveWaitsForTheLineEnd: a poll of the live log while a line is being
// appended returns the whole lines before it and an offset at its start,
// never a broken or empty row; the next poll returns the line once whole.
func TestLiveWaitsForTheLineEnd(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.run("l1", vm.StatusRunning, time.Now(), 1)
	r, err := f.store.Open("l1")
	if err != nil {
		t.Fatal(err)
	}
	path := r.LiveLog()
	r.Close()
	first := `{"time":"2026-01-02T03:04:05Z","step":"Write","kind":"edit","text":"Write notes.txt"}` + "\n"
	second := `{"time":"2026-01-02T03:04:06Z","step":"Write","kind":"message","text":"I wrote notes.txt"}` + "\n"
	cut := len(second) / 2
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(first+second[:cut]), 0o644); err != nil {
		t.Fatal(err)
	}
	s := f.server(Config{})
	poll := func(after int64) liveReply {
		t.Helper()
		w := get(s, fmt.Sprintf("/api/runs/l1/live?after=%d", after))
		var rep liveReply
		if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &rep) != nil {
			t.Fatalf("live after %d = %d %q", after, w.Code, w.Body)
		}
		if strings.Contains(w.Body.String(), "null") {
			t.Errorf("live after %d holds a null: %s", after, w.Body)
		}
		return rep
	}
	rep := poll(0)
	if len(rep.Lines) != 1 || rep.Lines[0].Text != "Write notes.txt" || rep.Next != int64(len(first)) {
		t.Fatalf("with the second line half written: %+v, want the first line alone and next %d", rep, len(first))
	}
	if again := poll(rep.Next); len(again.Lines) != 0 || again.Next != rep.Next {
		t.Fatalf("polled again before the line's end: %+v, want nothing new at %d", again, rep.Next)
	}
	lf, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lf.WriteString(second[cut:]); err != nil {
		t.Fatal(err)
	}
	lf.Close()
	rep = poll(rep.Next)
	if len(rep.Lines) != 1 || rep.Lines[0] != (store.LiveLine{Time: "2026-01-02T03:04:06Z", Step: "Write", Kind: "message", Text: "I wrote notes.txt"}) || rep.Next != int64(len(first+second)) {
		t.Fatalf("once the line is whole: %+v, want it alone and next %d", rep, len(first+second))
	}
}
