package e2e

// Browser tests of the viewer's actions (stop, retry, a resume whose
// signal is checked) and of many run pages open at once (CONTRACT 13).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestServeBrowserStopRetry stops a running run from its page: the run
// ends interrupted, its driver exits (130) and no process of its step is
// left; the page then offers retry, which runs it to completed in the
// server, without a reload.
func TestServeBrowserStopRetry(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	p.write("review.yaml", strings.Replace(serveFlow, `"wait:WS/release"`, `"pid:WS/build.pid", "wait:WS/release"`, 1))
	ctx0, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	run := p.command(ctx0, baseEnv(), "run", "review.yaml", "--run-id", "stop-1", "--base", p.base)
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- run.Wait() }()
	waited := false
	defer func() {
		// Before the cleanups remove BASE, the run ends by itself: a Build
		// that was not stopped is released and completes (the test may
		// have failed before the stop), and the process is waited for
		// (cancel, deferred first, kills it only after ctx0's timeout).
		p.write("workspace/release", "")
		if !waited {
			<-exited
		}
	}()
	srv := serveRuns(t, p.base)
	ctx := browser(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.url+"/runs/stop-1"),
		waitJS(`(() => { const r = document.querySelector('#steps tr[data-step="Build"]'); return !!r && r.dataset.status === "running" && !!document.querySelector("#stopbtn"); })()`),
		waitJS(`/Build \(attempt 1, running for [0-9.]+s\)/.test(document.querySelector("#summary").textContent)`),
		waitJS(`!!document.querySelector("#graphsvg")`),
	); err != nil {
		t.Fatalf("Build never showed running with a stop button: %v", err)
	}
	evalJS[int](t, ctx, `window.smithNoReload = 1`)
	screenshot(t, ctx, "serve-run-stop")
	if err := chromedp.Do(ctx,
		chromedp.Click(css("#stopbtn")),
		waitJS(`document.querySelector("#runstatus").textContent === "interrupted" && !!document.querySelector("#retrybtn") && !document.querySelector("#stopbtn")`),
	); err != nil {
		t.Fatalf("the run never turned interrupted with a retry button: %v (page says %q)", err, evalJS[string](t, ctx, `document.querySelector("#actionmsg").textContent`))
	}
	select {
	case err := <-exited:
		waited = true
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Errorf("the stopped smithvm run exited with %v, want status 130", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the stopped smithvm run did not exit")
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(p.read("workspace/build.pid")))
	if pid <= 0 {
		t.Fatal("Build wrote no pid")
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("Build's process %d is still there after the stop (kill -0: %v)", pid, err)
	}
	if err := chromedp.Do(ctx, waitJS(`[...document.querySelectorAll('#events tbody tr')].some(r => r.cells[3].textContent === "run_interrupted")`)); err != nil {
		t.Fatalf("run_interrupted never showed in the event log: %v", err)
	}
	screenshot(t, ctx, "serve-run-interrupted")
	p.write("workspace/release", "")
	if err := chromedp.Do(ctx,
		chromedp.Click(css("#retrybtn")),
		waitJS(`document.querySelector("#runstatus").textContent === "completed" && document.querySelector('#steps tr[data-step="Report"]').dataset.status === "completed"`),
	); err != nil {
		t.Fatalf("the retried run never completed: %v (page says %q)", err, evalJS[string](t, ctx, `document.querySelector("#actionmsg").textContent`))
	}
	if !evalJS[bool](t, ctx, `window.smithNoReload === 1`) {
		t.Errorf("the page reloaded; it must update in place")
	}
	var st struct{ Status string }
	r := p.vm("status", "stop-1", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.Status != "completed" {
		t.Errorf("status after the retry = %q (%v), want completed", st.Status, err)
	}
}

// TestServeBrowserResumeSignal resumes a halted run from its page with a
// mistyped signal, which is refused (400, E_UNKNOWN_SIGNAL, a did-you-mean)
// with the run left halted, then with the signal chosen from the offered
// ones, which the run takes.
func TestServeBrowserResumeSignal(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	writeAsk(p)
	if r := p.vm("run", "ask.json", "--run-id", "sig-1"); r.code != 4 {
		t.Fatalf("run: exit %d, want 4\n%s", r.code, r.stderr)
	}
	before := p.read(".orchestrator/runs/sig-1/state.json")
	srv := serveRuns(t, p.base)
	ctx := browser(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.url+"/runs/sig-1"),
		chromedp.WaitVisible(css("#resume")),
		waitJS(`[...document.querySelectorAll("#signalchoices .choice")].map(b => b.dataset.signal).join(",") === "SIGNAL:APPROVED,SIGNAL:NEEDS_CLARIFICATION,SIGNAL:SUCCESS"`),
		chromedp.SendKeys(css("#signal"), "SIGNAL:APROVED"),
		chromedp.Click(css("#resumebtn")),
		waitJS(`document.querySelector("#resumemsg").className === "error"`),
		waitJS(`!!document.querySelector("#graphsvg")`),
	); err != nil {
		t.Fatal(err)
	}
	msg := evalJS[string](t, ctx, `document.querySelector("#resumemsg").textContent`)
	if !strings.Contains(msg, "E_UNKNOWN_SIGNAL") || !strings.Contains(msg, "did you mean 'SIGNAL:APPROVED'?") {
		t.Errorf("a mistyped signal: page says %q, want E_UNKNOWN_SIGNAL with a did-you-mean", msg)
	}
	screenshot(t, ctx, "serve-run-bad-signal")
	if after := p.read(".orchestrator/runs/sig-1/state.json"); after != before {
		t.Errorf("the refused resume changed the run's state.json")
	}
	if err := chromedp.Do(ctx,
		jsDo(`document.querySelector("#signal").value = ""`),
		chromedp.Click(css(`#signalchoices .choice[data-signal="SIGNAL:APPROVED"]`)),
		waitJS(`document.querySelector("#signal").value === "SIGNAL:APPROVED"`),
		chromedp.Click(css("#resumebtn")),
		waitJS(`document.querySelector("#runstatus").textContent === "completed" && !!document.querySelector('#steps tr[data-step="Block:Done"][data-status="completed"]')`),
	); err != nil {
		t.Fatal(err)
	}
}

// TestServeBrowserManyPages opens eight run pages at once in one browser
// (more than its six connections per site) and checks that every one of
// them shows an event appended to its run, without a reload.
func TestServeBrowserManyPages(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	const n = 8
	var files []*os.File
	for i := 0; i < n; i++ {
		files = append(files, fakeRun(t, base, fmt.Sprintf("page-%d", i), 1))
	}
	srv := serveRuns(t, base)
	first := browser(t)
	const seqs = `[...document.querySelectorAll("#events tbody tr")].map(r => r.dataset.seq).join(",")`
	tabs := []context.Context{first}
	for i := 1; i < n; i++ {
		tab, cancel := chromedp.NewContext(first) // a tab of the same browser context
		t.Cleanup(cancel)
		tabs = append(tabs, tab)
	}
	for i, tab := range tabs {
		if err := chromedp.Do(tab, chromedp.Navigate(fmt.Sprintf("%s/runs/page-%d", srv.url, i)), waitJS(seqs+` === "1"`)); err != nil {
			t.Fatalf("page %d: %v", i, err)
		}
	}
	for i := range tabs {
		appendEvent(t, files[i], fmt.Sprintf("page-%d", i), 2)
	}
	for i, tab := range tabs {
		tctx, cancel := context.WithTimeout(tab, 10*time.Second)
		err := chromedp.Do(tctx, waitJS(seqs+` === "1,2" && document.querySelector("#live").textContent === "live"`))
		cancel()
		if err != nil {
			t.Errorf("page %d of %d never showed its new event: %v", i+1, n, err)
		}
	}
}
