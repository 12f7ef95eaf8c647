package e2e

// Browser tests of smithvm serve (CONTRACT section 13): they drive Debian's
// headless Chromium with chromedp against a real `smithvm serve` and real
// runs. Outside CI they skip when /usr/bin/chromium is missing; with
// CI=true they fail instead. With -screenshots they write the screenshots
// of docs/img/ (committed; the README and docs/viewer.md show them).

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"smith/bench"
)

// chromiumPath is Debian's chromium package's launcher.
const chromiumPath = "/usr/bin/chromium"

// browser returns a chromedp context on a new tab, in a browser context of
// its own (its own cookies and storage, as a fresh browser would have),
// of the one headless Chromium the package's tests share; the tab and its
// browser context are closed when the test ends. Sharing saves a Chromium
// start-up (several processes) per test.
func browser(t testing.TB) context.Context {
	t.Helper()
	path := chromiumPath
	if p := os.Getenv("SMITH_CHROMIUM"); p != "" {
		path = p
	}
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("browser tests need Chromium at %s (apt-get install chromium): %v", path, err)
		}
		t.Skipf("skipping: no Chromium at %s (apt-get install chromium; with CI=true this test fails)", path)
	}
	bctx, err := sharedChromium.start(path)
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	ctx, cancelB := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelT(); cancelB() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab in chromium: %v", err)
	}
	return ctx
}

// sharedChromium is the one Chromium of the browser tests, started by the
// first test that needs it and stopped by TestMain.
var sharedChromium chromium

// chromium is a headless Chromium started once.
type chromium struct {
	once   sync.Once
	ctx    context.Context // the browser's chromedp context
	cancel func()
	err    error
}

// start starts Chromium at path the first time and returns its context.
func (c *chromium) start(path string) (context.Context, error) {
	c.once.Do(func() {
		dir, err := os.MkdirTemp("", "smithvm-chromium-")
		if err != nil {
			c.err = err
			return
		}
		opts := []chromedp.ExecAllocatorOption{
			chromedp.ExecPath(path),
			chromedp.UserDataDir(dir),
			chromedp.Flag("headless", true),
			chromedp.Flag("no-sandbox", true),
			chromedp.Flag("disable-gpu", true),
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("no-first-run", true),
			chromedp.Flag("no-default-browser-check", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("disable-dev-shm-usage", true),
			chromedp.WindowSize(1400, 1000),
		}
		actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelB := chromedp.NewContext(actx)
		c.ctx, c.cancel = ctx, func() { cancelB(); cancelA(); os.RemoveAll(dir) }
		c.err = chromedp.Do(ctx) // starts the browser
	})
	return c.ctx, c.err
}

// stop stops Chromium if it was started.
func (c *chromium) stop() {
	c.once.Do(func() {})
	if c.cancel != nil {
		c.cancel()
	}
}

// served is a running `smithvm serve`.
type served struct {
	url string
	cmd *exec.Cmd
}

// serveRuns starts smithvm serve --base base on a free loopback port and
// stops it (SIGINT, then waits) when the test ends.
func serveRuns(t testing.TB, base string, extra ...string) *served {
	t.Helper()
	args := append([]string{"serve", "--base", base, "--addr", "127.0.0.1:0"}, extra...)
	cmd := exec.Command(built.smithvm, args...)
	cmd.Dir = base
	cmd.Env = baseEnv()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stderr)
	addr := regexp.MustCompile(`at (http://127\.0\.0\.1:\d+)/`)
	url := ""
	for lines.Scan() {
		if m := addr.FindStringSubmatch(lines.Text()); m != nil {
			url = m[1]
			break
		}
	}
	if url == "" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("smithvm serve printed no address")
	}
	go io.Copy(io.Discard, stderr)
	s := &served{url: url, cmd: cmd}
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop stops the server (SIGINT) and waits for it; stopping a stopped
// server does nothing.
func (s *served) stop(t testing.TB) {
	if s.cmd == nil {
		return
	}
	cmd := s.cmd
	s.cmd = nil
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Errorf("smithvm serve did not stop on SIGINT")
	}
}

// screenshots makes the browser tests write their screenshots to
// docs/img/ (cd cmd/smithvm/e2e && go test -run TestServeBrowser -screenshots);
// without it they go to a temporary folder, so a test run leaves the
// checkout clean.
var screenshots = flag.Bool("screenshots", false, "write the browser tests' screenshots to docs/img/")

// screenshot saves the page as NAME.png: in docs/img/ with -screenshots.
func screenshot(t testing.TB, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	dir := t.TempDir()
	if *screenshots {
		dir = filepath.Join("..", "..", "..", "docs", "img")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitJS is an action that polls the JavaScript expression expr until it
// is true.
func waitJS(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Poll[bool](expr, chromedp.WithPollingInterval(25*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second))(ctx, t)
		if err != nil {
			return fmt.Errorf("wait for %s: %w", expr, err)
		}
		return nil
	})
}

// evalJS evaluates expr.
func evalJS[T any](t testing.TB, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// css is a CSS selector.
func css(sel string) chromedp.CSS { return chromedp.CSS(sel) }

var serveFlow = workflow("serve.yaml")

var serveFailFlow = workflow("serve_fail.yaml")

// TestServeBrowserList opens the run list: every run, newest first, with
// its status, workflow and current step; the status filter keeps only the
// failed run.
func TestServeBrowserList(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	p.write("review.yaml", strings.Replace(serveFlow, "wait:WS/release", "sleep:0", 1))
	p.write("lint.yaml", serveFailFlow)
	if r := p.vm("run", "review.yaml", "--run-id", "review-1"); r.code != 0 {
		t.Fatalf("run review: %d\n%s", r.code, r.stderr)
	}
	if r := p.vm("run", "lint.yaml", "--run-id", "lint-1"); r.code != 1 {
		t.Fatalf("run lint: %d, want 1\n%s", r.code, r.stderr)
	}
	writeAsk(p)
	if r := p.vm("run", "ask.json", "--run-id", "ask-1"); r.code != 4 {
		t.Fatalf("run ask: %d, want 4\n%s", r.code, r.stderr)
	}
	srv := serveRuns(t, p.base)
	ctx := browser(t)
	const rowsJS = `[...document.querySelectorAll("#runs tbody tr")].map(r => r.dataset.run + " " + r.dataset.status + " " + r.cells[2].textContent + " " + r.cells[5].textContent).join("\n")`
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.url+"/"), chromedp.WaitVisible(css("#runs"))); err != nil {
		t.Fatal(err)
	}
	want := "ask-1 halted " + askName + " Block:Ask\nlint-1 failed lint Lint\nreview-1 completed review Report"
	if got := evalJS[string](t, ctx, rowsJS); got != want {
		t.Errorf("run list (newest first) =\n%s\nwant\n%s", got, want)
	}
	screenshot(t, ctx, "serve-list")
	if err := chromedp.Do(ctx,
		chromedp.Click(css(`#filters a[data-status="failed"]`)),
		chromedp.WaitVisible(css(`#filters a.on[data-status="failed"]`)),
	); err != nil {
		t.Fatal(err)
	}
	if got := evalJS[string](t, ctx, rowsJS); got != "lint-1 failed lint Lint" {
		t.Errorf("filter failed: rows %q, want only lint-1", got)
	}
	// A new failed run shows up in the open list without a reload.
	evalJS[int](t, ctx, `window.smithNoReload = 1`)
	if r := p.vm("run", "lint.yaml", "--run-id", "lint-2"); r.code != 1 {
		t.Fatalf("run lint: %d, want 1\n%s", r.code, r.stderr)
	}
	if err := chromedp.Do(ctx, waitJS(`!!document.querySelector('#runs tr[data-run="lint-2"]') && window.smithNoReload === 1`)); err != nil {
		t.Errorf("the new run lint-2 never showed in the open list: %v", err)
	}
}

// askName is the workflow name of mfAsk (a manifest without a name).
const askName = "ask"

// writeAsk writes the halting manifest mfAsk as ask.json, with its mock
// replies.
func writeAsk(p *proj) {
	p.write("ask.json", mfAsk)
	p.write("workspace/mock/ask.json", `[{"reply": "Which API version?\n\nSIGNAL:NEEDS_CLARIFICATION\n"}]`)
	p.write("workspace/mock/done.json", `[]`)
}

// TestServeBrowserLive opens a run while its step Build runs, sees Build
// running in the step table and the graph, then, without a reload, sees it
// complete (and the run with it) once the step is released; the event log
// and the step's logs and output file show too.
func TestServeBrowserLive(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	p.write("review.yaml", serveFlow)
	ctx0, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	run := p.command(ctx0, baseEnv(), "run", "review.yaml", "--run-id", "live-1", "--base", p.base)
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	released := false
	defer func() {
		if !released {
			p.write("workspace/release", "")
		}
		run.Wait()
	}()
	srv := serveRuns(t, p.base)
	ctx := browser(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.url+"/runs/live-1"),
		waitJS(`(() => { const r = document.querySelector('#steps tr[data-step="Build"]'); return !!r && r.dataset.status === "running"; })()`),
		waitJS(`!!document.querySelector("#graphsvg") && `+graphFill("b1")+` === "lightskyblue"`),
	); err != nil {
		t.Fatalf("Build never showed as running in the table and the graph: %v", err)
	}
	evalJS[int](t, ctx, `window.smithNoReload = 1`)
	screenshot(t, ctx, "serve-run-running")
	p.write("workspace/release", "")
	released = true
	if err := chromedp.Do(ctx,
		waitJS(`document.querySelector('#steps tr[data-step="Build"]').dataset.status === "completed" && document.querySelector("#runstatus").textContent === "completed"`),
	); err != nil {
		t.Fatalf("Build never turned completed: %v", err)
	}
	if !evalJS[bool](t, ctx, `window.smithNoReload === 1`) {
		t.Errorf("the page reloaded; it must update in place")
	}
	if err := chromedp.Do(ctx,
		waitJS(graphFill("b1")+` === "palegreen" && [...document.querySelectorAll('#events tbody tr')].some(r => r.cells[3].textContent === "run_completed")`),
	); err != nil {
		t.Fatalf("graph or event log not updated: %v", err)
	}
	// The step's stdout, stderr and output file.
	logOf := func(link int, title string) string {
		t.Helper()
		if err := chromedp.Do(ctx,
			// Clicked by script: the live page may re-render the row between a
			// node's lookup and a synthetic mouse click (a stale node id).
			waitJS(fmt.Sprintf(`(() => { const a = document.querySelector('#steps tr[data-step="Fetch"] a:nth-of-type(%d)'); if (!a) return false; a.click(); return true })()`, link)),
			waitJS(fmt.Sprintf(`(document.querySelector("#log h2 span")||{}).textContent === %q`, title)),
		); err != nil {
			t.Fatal(err)
		}
		return evalJS[string](t, ctx, `document.querySelector("#log pre").textContent`)
	}
	if got := logOf(1, "Fetch · stdout"); !strings.Contains(got, "fetched 3 files") {
		t.Errorf("stdout of Fetch = %q", got)
	}
	if got := logOf(2, "Fetch · stderr"); got != "--- attempt 1 ---\nwarning: cache miss\n" {
		t.Errorf("stderr of Fetch = %q", got)
	}
	if got := logOf(3, "Fetch · fetch.txt"); !strings.Contains(got, "fetched 3 files") {
		t.Errorf("output file of Fetch = %q", got)
	}
	screenshot(t, ctx, "serve-run-completed")
}

// graphFill is JavaScript for the fill colour of DOT node id in the drawn
// graph.
func graphFill(id string) string {
	return fmt.Sprintf(`(() => { const g = [...document.querySelectorAll("#graphsvg g.node")].find(g => g.querySelector("title").textContent === %q); const s = g && g.querySelector("polygon, path"); return s ? s.getAttribute("fill") : ""; })()`, id)
}

// TestServeBrowserResume resumes a halted manifest run from the page: the
// flag and the form show; while another process holds the run's lock the
// page shows E_RUN_LOCKED; then the signal and note are taken, as
// `smithvm resume --signal --note` does, and the page follows the run to
// its end.
func TestServeBrowserResume(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	writeAsk(p)
	if r := p.vm("run", "ask.json", "--run-id", "h1"); r.code != 4 {
		t.Fatalf("run: exit %d, want 4\n%s", r.code, r.stderr)
	}
	srv := serveRuns(t, p.base)
	ctx := browser(t)
	// Hold the run's lock as a driving smithvm would.
	lock, err := os.OpenFile(filepath.Join(p.runRoot("h1"), "lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.url+"/runs/h1"),
		chromedp.WaitVisible(css("#resume")),
		chromedp.SendKeys(css("#signal"), "SIGNAL:APPROVED"),
		chromedp.SendKeys(css("#note"), "use the v2 API"),
		waitJS(`!!document.querySelector("#graphsvg")`),
	); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "serve-run-halted")
	if err := chromedp.Do(ctx,
		chromedp.Click(css("#resumebtn")),
		waitJS(`document.querySelector("#resumemsg").className === "error"`),
	); err != nil {
		t.Fatal(err)
	}
	if msg := evalJS[string](t, ctx, `document.querySelector("#resumemsg").textContent`); !strings.Contains(msg, "E_RUN_LOCKED") {
		t.Errorf("resume while locked: page says %q, want E_RUN_LOCKED", msg)
	}
	syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if err := chromedp.Do(ctx,
		chromedp.Click(css("#resumebtn")),
		waitJS(`document.querySelector("#runstatus").textContent === "completed" && !!document.querySelector('#steps tr[data-step="Block:Done"][data-status="completed"]')`),
	); err != nil {
		t.Fatal(err)
	}
	if got := evalJS[string](t, ctx, `(document.querySelector("#resumed")||{}).textContent + "|" + !!document.querySelector("#resume")`); !strings.Contains(got, "with SIGNAL:APPROVED") || !strings.HasSuffix(got, "|false") {
		t.Errorf("after the resume the flag says %q, want the resume noted and no form", got)
	}
	if got := evalJS[string](t, ctx, `[...document.querySelectorAll("#payload .seg strong")].map(e => e.textContent).join(",")`); got != "QUESTION,USER_NOTE,AI_RESPONSE" {
		t.Errorf("payload segments on the page = %s, want QUESTION,USER_NOTE,AI_RESPONSE", got)
	}
	var st struct {
		Status  string `json:"status"`
		Payload []struct {
			Type, Content string
		} `json:"payload"`
	}
	r := p.vm("status", "h1", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r.stdout)
	}
	if st.Status != "completed" || len(st.Payload) < 2 || st.Payload[1].Type != "USER_NOTE" || st.Payload[1].Content != "use the v2 API" {
		t.Errorf("state after the page's resume: %+v", st)
	}
	screenshot(t, ctx, "serve-run-resumed")
}

// fakeRun makes run id under base by hand: a state.json and an
// events.jsonl with events 1..n, whose file it returns open for appending.
func fakeRun(t testing.TB, base, id string, n int) *os.File {
	t.Helper()
	root := filepath.Join(base, ".orchestrator", "runs", id)
	if err := os.MkdirAll(filepath.Join(root, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	state := `{"run_id":"` + id + `","workflow_name":"fake","status":"running","started_at":"2026-01-01T00:00:00Z","steps":{}}`
	if err := os.WriteFile(filepath.Join(root, "state.json"), []byte(state), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(root, "logs", "events.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	for i := 1; i <= n; i++ {
		appendEvent(t, f, id, i)
	}
	return f
}

// appendEvent appends event seq to events.jsonl.
func appendEvent(t testing.TB, f *os.File, id string, seq int) {
	t.Helper()
	if _, err := fmt.Fprintf(f, `{"timestamp":%q,"run_id":%q,"event_seq":%d,"level":"INFO","event":"step_started","step":"S%d"}`+"\n",
		time.Now().UTC().Format(time.RFC3339Nano), id, seq, seq); err != nil {
		t.Fatal(err)
	}
}

// TestServeBrowserReconnect: the server goes away while a run page is
// open and events 4 and 5 are appended meanwhile; when a server is back on
// the same address the page's polls go on from the last event_seq shown
// (and the offset read, its ETag) and the page shows exactly events 1 to
// 5, none twice.
func TestServeBrowserReconnect(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	events := fakeRun(t, base, "re-1", 3)
	first := serveRuns(t, base)
	ctx := browser(t)
	const seqs = `[...document.querySelectorAll("#events tbody tr")].map(r => r.dataset.seq).join(",")`
	if err := chromedp.Do(ctx, chromedp.Navigate(first.url+"/runs/re-1"), waitJS(seqs+` === "1,2,3"`)); err != nil {
		t.Fatal(err)
	}
	first.stop(t)
	if err := chromedp.Do(ctx, waitJS(`document.querySelector("#live").textContent === "reconnecting…"`)); err != nil {
		t.Fatal(err)
	}
	appendEvent(t, events, "re-1", 4)
	appendEvent(t, events, "re-1", 5)
	second := serveRuns(t, base, "--addr", strings.TrimPrefix(first.url, "http://"))
	if second.url != first.url {
		t.Fatalf("second server at %s, want %s", second.url, first.url)
	}
	if err := chromedp.Do(ctx, waitJS(`document.querySelector("#live").textContent === "live" && `+seqs+` === "1,2,3,4,5"`)); err != nil {
		t.Fatalf("after the reconnect the page shows events %s, want 1,2,3,4,5: %v", evalJS[string](t, ctx, seqs), err)
	}
	if !evalJS[bool](t, ctx, `window.performance.getEntriesByType("navigation").length === 1`) {
		t.Errorf("the page was reloaded")
	}
}

// BenchmarkServeEventToPage measures how long an event appended to
// events.jsonl takes to show in an open run page (ms, median of b.N
// events): the page notes when each event arrived.
func BenchmarkServeEventToPage(b *testing.B) {
	base := b.TempDir()
	events := fakeRun(b, base, "lat-1", 0)
	srv := serveRuns(b, base)
	ctx := browser(b)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.url+"/runs/lat-1"), chromedp.WaitVisible(css("#events"))); err != nil {
		b.Fatal(err)
	}
	var lat []float64
	b.ResetTimer()
	for i := 1; i <= b.N; i++ {
		sent := time.Now()
		fmt.Fprintf(events, `{"timestamp":%q,"run_id":"lat-1","event_seq":%d,"level":"INFO","event":"step_started","step":"S%d"}`+"\n", sent.UTC().Format(time.RFC3339Nano), i, i)
		if err := chromedp.Do(ctx, waitJS(fmt.Sprintf(`(window.smithLastEvent||{}).seq === %d`, i))); err != nil {
			b.Fatal(err)
		}
		at := evalJS[float64](b, ctx, `window.smithLastEvent.at`)
		lat = append(lat, at-float64(sent.UnixMilli()))
	}
	b.StopTimer()
	sort.Float64s(lat)
	b.ReportMetric(lat[len(lat)/2], "ms-median")
	b.ReportMetric(lat[len(lat)-1], "ms-max")
}

// bigRun makes, under base, a failed run big-1 of bench's 2,000-block
// manifest (40 Nodes of 50 blocks) that stopped after 30 blocks.
func bigRun(t testing.TB, base string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(base, "workspace"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "big.json"), bench.Manifest(40, 50), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(built.smithvm, "run", "big.json", "--run-id", "big-1", "--max-steps", "30", "--base", base)
	cmd.Dir, cmd.Env = base, baseEnv()
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("run big: %v, want exit 1 (step budget)\n%s", err, out)
	}
}

// jsDo is an action that evaluates expr for its effect.
func jsDo(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Evaluate[bool](`(() => { `+expr+`; return true; })()`)(ctx, tg)
		return err
	})
}

// clickNode clicks the drawn graph node whose title is id.
func clickNode(id string) chromedp.Action[chromedp.Void] {
	return jsDo(fmt.Sprintf(`[...document.querySelectorAll("#graphsvg g.node")].find(g => g.querySelector("title").textContent === %q).dispatchEvent(new MouseEvent("click", {bubbles: true}))`, id))
}

// TestServeBrowserBigGraph: a 2,000-block run opens on the overview, one
// box per Node (40), coloured by state; clicking a box draws that Node's
// 50 blocks; the wheel zooms.
func TestServeBrowserBigGraph(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	bigRun(t, base)
	srv := serveRuns(t, base)
	ctx := browser(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.url+"/runs/big-1"),
		waitJS(`(window.smithGraph||{}).view === "overview"`),
	); err != nil {
		t.Fatal(err)
	}
	if n := evalJS[int](t, ctx, `window.smithGraph.nodes`); n != 40 {
		t.Errorf("overview draws %d boxes, want 40", n)
	}
	if got := evalJS[string](t, ctx, graphFill("c0")+` + " " + `+graphFill("c5")); got != "palegreen none" {
		t.Errorf("overview fills c0 c5 = %q, want palegreen (Node 0 ran) and none (Node 5 did not)", got)
	}
	screenshot(t, ctx, "serve-big-overview")
	before := evalJS[string](t, ctx, `document.querySelector("#graphsvg").style.transform`)
	if err := chromedp.Do(ctx, jsDo(`const b = document.querySelector("#graph"); const r = b.getBoundingClientRect(); b.dispatchEvent(new WheelEvent("wheel", {deltaY: -200, clientX: r.left + 100, clientY: r.top + 100, bubbles: true, cancelable: true}))`)); err != nil {
		t.Fatal(err)
	}
	if after := evalJS[string](t, ctx, `document.querySelector("#graphsvg").style.transform`); after == before {
		t.Errorf("the wheel did not zoom: transform stays %q", after)
	}
	if err := chromedp.Do(ctx, clickNode("c1"), waitJS(`(window.smithGraph||{}).view === "node:1"`)); err != nil {
		t.Fatal(err)
	}
	blocks := evalJS[int](t, ctx, `[...document.querySelectorAll("#graphsvg g.node title")].filter(e => /^b\d+$/.test(e.textContent)).length`)
	if blocks != 50 {
		t.Errorf("Node 1 alone draws %d blocks, want 50", blocks)
	}
	screenshot(t, ctx, "serve-big-node")
}

// BenchmarkServeGraph2000 measures how long the browser takes to draw the
// 2,000-block run's graph: the overview, one Node, and the whole graph
// (ms, as the page measures them around Graphviz; medians of b.N).
func BenchmarkServeGraph2000(b *testing.B) {
	base := b.TempDir()
	bigRun(b, base)
	srv := serveRuns(b, base)
	ctx := browser(b)
	var over, node, full []float64
	for b.Loop() {
		if err := chromedp.Do(ctx, chromedp.Navigate(srv.url+"/runs/big-1"), waitJS(`(window.smithGraph||{}).view === "overview"`)); err != nil {
			b.Fatal(err)
		}
		over = append(over, evalJS[float64](b, ctx, `window.smithGraph.ms`))
		if err := chromedp.Do(ctx, clickNode("c1"), waitJS(`(window.smithGraph||{}).view === "node:1"`)); err != nil {
			b.Fatal(err)
		}
		node = append(node, evalJS[float64](b, ctx, `window.smithGraph.ms`))
		if err := chromedp.Do(ctx, jsDo(`const s = document.querySelector("#graphview"); s.value = "full"; s.dispatchEvent(new Event("change"))`),
			chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				_, err := chromedp.Poll[bool](`(window.smithGraph||{}).view === "full"`, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(120*time.Second))(ctx, tg)
				return err
			})); err != nil {
			b.Fatal(err)
		}
		full = append(full, evalJS[float64](b, ctx, `window.smithGraph.ms`))
	}
	med := func(v []float64) float64 { sort.Float64s(v); return v[len(v)/2] }
	b.ReportMetric(med(over), "ms-overview")
	b.ReportMetric(med(node), "ms-node")
	b.ReportMetric(med(full), "ms-whole")
}
