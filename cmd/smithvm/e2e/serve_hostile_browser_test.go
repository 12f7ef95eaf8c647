package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// hostileHTML is what a hostile model or CLI writes, hoping the viewer
// puts it into the page as HTML: each piece sets window.pwned when it
// runs, and #injected exists if any markup got in.
const hostileHTML = `<script>window.pwned=1</script><img src=x onerror="window.pwned=2">` +
	`<svg onload="window.pwned=3"></svg></textarea></pre><a href="javascript:window.pwned=4">x</a>` +
	`" onmouseover="window.pwned=5" '><b id=injected>{{.}}</b>`

// noInjection is JavaScript that is true when nothing of hostileHTML ran
// or became an element.
const noInjection = `window.pwned === undefined && ` +
	`document.querySelector('#injected, img[src="x"], [onerror], [onload], [onmouseover], a[href^="javascript:"]') === null`

// TestServeBrowserHostileContent: a run's content (step output, stderr, an
// output file, live lines, a CLI's error message, a model's reply in the
// payload) and its workflow's name are shown as text in the viewer, never
// run or parsed as markup.
func TestServeBrowserHostileContent(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	claudeErr, _ := json.Marshal(map[string]any{"type": "result", "subtype": "success", "is_error": true, "result": "API Error: " + hostileHTML})
	flow, _ := json.Marshal(map[string]any{
		"version": "1.0", "name": "hostile " + hostileHTML, "strict_flow": false,
		"providers": map[string]any{"claude": map[string]any{"command": []string{"HELPER", "echo:" + string(claudeErr), "exit:1"}}},
		"steps": []any{
			map[string]any{"name": "Out", "command": []string{"HELPER", "echo:" + hostileHTML, "err:" + hostileHTML}, "output_file": "out.txt"},
			map[string]any{"name": "Gen", "provider": "claude", "prompt": "hi"},
		},
	})
	p.write("hostile.yaml", string(flow)) // JSON is YAML
	if r := p.vm("run", "hostile.yaml", "--run-id", "x1"); r.code != 1 {
		t.Fatalf("run hostile: exit %d, want 1\n%s", r.code, r.stderr)
	}
	reply, _ := json.Marshal([]map[string]string{{"reply": hostileHTML + "\n\nSIGNAL:NEEDS_CLARIFICATION\n"}})
	p.write("ask.json", mfAsk)
	p.write("workspace/mock/ask.json", string(reply))
	p.write("workspace/mock/done.json", `[]`)
	if r := p.vm("run", "ask.json", "--run-id", "x2"); r.code != 4 {
		t.Fatalf("run ask: exit %d, want 4\n%s", r.code, r.stderr)
	}
	srv := serveRuns(t, p.base)
	ctx := browser(t)
	check := func(where string) {
		t.Helper()
		if !evalJS[bool](t, ctx, noInjection) {
			t.Errorf("%s: the run's content got into the page as markup or script (window.pwned = %v)", where, evalJS[any](t, ctx, `window.pwned === undefined ? null : window.pwned`))
		}
	}
	// The failed run: the step table's error, the event log, the live
	// lines, and each log and file opened.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.url+"/runs/x1"),
		waitJS(`!!document.querySelector('#steps tr[data-step="Gen"][data-status="failed"]')`),
		waitJS(`document.querySelector('#steps tr[data-step="Gen"]').textContent.includes("API Error: <script>window.pwned=1</script>")`),
		waitJS(`[...document.querySelectorAll("#events tbody tr")].some(r => r.textContent.includes("<img src=x onerror="))`),
		waitJS(`[...document.querySelectorAll("#livelog tbody tr")].some(r => r.textContent.includes("<svg onload="))`),
	); err != nil {
		t.Fatalf("the failed run's page never showed the hostile text as text: %v", err)
	}
	check("run page")
	for i, title := range []string{"Out · stdout", "Out · stderr", "Out · out.txt"} {
		if err := chromedp.Do(ctx,
			waitJS(fmt.Sprintf(`(() => { const a = document.querySelector('#steps tr[data-step="Out"] a:nth-of-type(%d)'); if (!a) return false; a.click(); return true })()`, i+1)),
			waitJS(fmt.Sprintf(`(document.querySelector("#log h2 span")||{}).textContent === %q`, title)),
		); err != nil {
			t.Fatal(err)
		}
		if got := evalJS[string](t, ctx, `document.querySelector("#log pre").textContent`); !strings.Contains(got, hostileHTML) {
			t.Errorf("%s shows %q, want the hostile text as it was written", title, got)
		}
		check(title)
	}
	// Hovering every row and link (an attribute breakout would add an
	// onmouseover handler).
	evalJS[bool](t, ctx, `(() => { for (const e of document.querySelectorAll("main *")) e.dispatchEvent(new MouseEvent("mouseover", {bubbles: true})); return true })()`)
	check("run page after hovering")
	// The halted run: its flag quotes the last segment, the payload shows
	// the reply.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.url+"/runs/x2"),
		chromedp.WaitVisible(css("#resume")),
		waitJS(`document.querySelector("#flag pre").textContent.includes("</textarea></pre>")`),
		waitJS(`document.querySelector("#payload").textContent.includes("<b id=injected>{{.}}</b>")`),
	); err != nil {
		t.Fatalf("the halted run's page never showed the reply as text: %v", err)
	}
	check("halted run page")
	// The run list, its workflow filter, and the run page's title.
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.url+"/"), chromedp.WaitVisible(css("#runs"))); err != nil {
		t.Fatal(err)
	}
	check("run list")
	if got := evalJS[string](t, ctx, `document.querySelector('#runs tr[data-run="x1"]').cells[2].textContent + "|" + [...document.querySelectorAll("#workflow option")].map(o => o.value).join("|")`); got != "hostile "+hostileHTML+"||ask|hostile "+hostileHTML {
		t.Errorf("run list: workflow cell and filter options = %q, want the name as text", got)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.url+"/runs/x1"), waitJS(`!!document.querySelector('#steps tr[data-step="Gen"]')`)); err != nil {
		t.Fatal(err)
	}
	if got := evalJS[string](t, ctx, `document.title`); !strings.HasPrefix(got, "hostile "+hostileHTML+" · x1") {
		t.Errorf("run page title = %q, want the workflow's name as text", got)
	}
	check("run page title")
}

// TestServeBrowserCrossSite: a page on another port of the same host (a
// server a run started, say), opened in the browser that holds the
// viewer's token cookie, can neither act on a halted run (resume, retry,
// stop: by fetch with credentials or by a form) nor read the API.
func TestServeBrowserCrossSite(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	writeAsk(p)
	if r := p.vm("run", "ask.json", "--run-id", "h1"); r.code != 4 {
		t.Fatalf("run: exit %d, want 4\n%s", r.code, r.stderr)
	}
	events := p.read(".orchestrator/runs/h1/logs/events.jsonl")
	srv := serveRuns(t, p.base, "--token", "s3cret-token")
	api := srv.url + "/api/runs/h1/"
	attack := `<!doctype html><html><body><iframe name=sink></iframe>
<form id=f method=post target=sink action="` + api + `resume"><input name=signal value="SIGNAL:APPROVED"><input name=note value=pwned></form>
<script>
(async () => {
  const opts = {method: "POST", mode: "no-cors", credentials: "include"};
  for (const what of ["resume", "retry", "stop"]) {
    try { await fetch("` + api + `" + what, {...opts, body: new URLSearchParams({signal: "SIGNAL:APPROVED"})}); } catch (e) {}
  }
  try { await fetch("` + api + `resume", {method: "POST", credentials: "include", headers: {"Content-Type": "application/json"}, body: '{"signal":"SIGNAL:APPROVED"}'}); } catch (e) {}
  try { const r = await fetch("` + srv.url + `/api/runs", {credentials: "include"}); window.read = await r.text(); } catch (e) { window.read = "refused"; }
  document.getElementById("f").submit();
  setTimeout(() => { window.done = true; }, 500);
})();
</script></body></html>`
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, attack)
	}))
	defer other.Close()
	ctx := browser(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.url+"/?token=s3cret-token"),
		chromedp.WaitVisible(css("#runs")),
		chromedp.Navigate(other.URL+"/"),
		waitJS(`window.done === true`),
	); err != nil {
		t.Fatal(err)
	}
	if got := evalJS[string](t, ctx, `window.read`); got != "refused" {
		t.Errorf("a page on another port read the API: %.200q", got)
	}
	if st := p.state("h1"); st.Status != "halted" || !st.IsHalted {
		t.Errorf("after the other page's requests the run is %s (halted %v), want still halted", st.Status, st.IsHalted)
	}
	if got := p.read(".orchestrator/runs/h1/logs/events.jsonl"); got != events {
		t.Errorf("the other page's requests changed the run's events:\n%s", strings.TrimPrefix(got, events))
	}
}
