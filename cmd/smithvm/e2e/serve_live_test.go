package e2e

// Browser tests of CONTRACT 13's "watch a step while it runs" and "see
// what the agents did and what it cost": live output lines, a real
// claude's tool calls, a step's diff, tokens and cost, in headless
// Chromium against a real smithvm serve.

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"smith/internal/fakemodel"
)

// slowFlow prints a line, waits to be released, prints another.
var slowFlow = workflow("slow.yaml")

// liveRow is the JS that finds a row of the live panel by step and text.
func liveRow(step, kind, text string) string {
	return fmt.Sprintf(`[...document.querySelectorAll('#livelog tbody tr')].some(r => r.dataset.step === %q && r.dataset.kind === %q && r.cells[3].textContent.includes(%q))`, step, kind, text)
}

// stepRow is the JS that tells whether the steps table shows a step's row.
func stepRow(step string) string {
	return fmt.Sprintf(`!!document.querySelector('#steps tr[data-step=%q]')`, step)
}

// TestServeBrowserLiveOutput: the lines a running command step writes
// (stdout and stderr) reach the open page while the step still runs, and
// the next one arrives within a second of being written, without a reload.
func TestServeBrowserLiveOutput(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	p.write("slow.yaml", slowFlow)
	ctx0, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	run := p.command(ctx0, baseEnv(), "run", "slow.yaml", "--run-id", "slow-1", "--base", p.base)
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
		chromedp.Navigate(srv.url+"/runs/slow-1"),
		waitJS(liveRow("Build", "stdout", "compiling part one")+" && "+liveRow("Build", "stderr", "warning: part one is slow")),
	); err != nil {
		dbg := evalJS[string](t, ctx, `document.querySelector("#steps").textContent + " LIVE " + document.querySelector("#livesec").textContent`)
		t.Fatalf("the running step's lines never reached the page: %v\n%s", err, dbg)
	}
	// The live panel (/live) and the steps table (/view) are drawn from
	// two fetches: the lines can show before the table does.
	if err := chromedp.Do(ctx, waitJS(stepRow("Build"))); err != nil {
		t.Fatalf("the steps table never showed Build: %v", err)
	}
	if st := evalJS[string](t, ctx, `document.querySelector('#steps tr[data-step="Build"]').dataset.status`); st != "running" {
		t.Errorf("Build is %q when its first lines show, want running", st)
	}
	evalJS[int](t, ctx, `window.smithNoReload = 1`)
	evalJS[bool](t, ctx, `(document.querySelector("#steps").scrollIntoView(), true)`)
	screenshot(t, ctx, "serve-live-output")
	p.write("workspace/release", "")
	released = true
	start := time.Now()
	if err := chromedp.Do(ctx, waitJS(liveRow("Build", "stdout", "linking part two"))); err != nil {
		t.Fatalf("the line written after the release never showed: %v", err)
	}
	// The step writes the line as soon as it sees the file (20 ms polls);
	// the page polls every 500 ms.
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the new line took %s to reach the page, want about a second", d)
	}
	if err := chromedp.Do(ctx, waitJS(`document.querySelector("#runstatus").textContent === "completed" && `+liveRow("After", "stdout", "done"))); err != nil {
		t.Fatalf("the run's end or After's line never showed: %v", err)
	}
	if !evalJS[bool](t, ctx, `window.smithNoReload === 1`) {
		t.Errorf("the page reloaded; it must update in place")
	}
	if n := evalJS[int](t, ctx, `[...document.querySelectorAll('#livelog tbody tr')].filter(r => r.cells[3].textContent.includes("compiling part one")).length`); n != 1 {
		t.Errorf("the first line shows %d times, want once", n)
	}
}

// TestServeBrowserAgentActivity: the real claude CLI against the fake model
// server writes a file with a tool call in each of two steps of a run with
// isolation: git-worktree. The page shows each tool call as an edit (with
// its path) and the agent's message, each step's tokens and cost (claude's
// total_cost_usd), the run's, the step's diff and the run's whole diff;
// smithvm status agrees, with the lines the agents wrote.
func TestServeBrowserAgentActivity(t *testing.T) {
	t.Parallel()
	needCLIs(t, "claude")
	if _, err := exec.LookPath("git"); err != nil {
		if inCI() {
			t.Fatal("git is not installed")
		}
		t.Skip("git is not installed")
	}
	p := newCLIProj(t, modeUser,
		fakemodel.Rule{Match: "WRITE-NOTES", Reply: fakemodel.Reply{WriteFile: &fakemodel.WriteFile{Path: "notes.txt", Content: "first line\nsecond line\n"}, Text: "I wrote notes.txt"}},
		fakemodel.Rule{Match: "WRITE-MORE", Reply: fakemodel.Reply{WriteFile: &fakemodel.WriteFile{Path: "more.txt", Content: "third line\n"}, Text: "I wrote more.txt"}})
	p.put("workspace/README.md", "start\n")
	gitIn(t, p.ws, "init", "-q", "-b", "main")
	gitIn(t, p.ws, "add", "-A")
	gitIn(t, p.ws, "commit", "-q", "-m", "start")
	wf := p.put("wf.yaml", p.workflow("agents.yaml", cliCase{}, cliCase{}))
	r := p.run("run", wf, "--run-id", "agents-1")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	srv := serveRuns(t, p.base)
	ctx := browser(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.url+"/runs/agents-1"),
		waitJS(liveRow("Write", "edit", "Write notes.txt")+" && "+liveRow("Write", "message", "I wrote notes.txt")+" && "+liveRow("More", "edit", "Write more.txt")),
	); err != nil {
		t.Fatalf("claude's tool call and message never showed in the live panel: %v", err)
	}
	// The steps table and the summary come from /view, fetched apart from
	// /live: the live rows can show before them (under load, they do).
	// The run had ended before the page opened, so the first table drawn
	// is the final one.
	if err := chromedp.Do(ctx, waitJS(stepRow("Write")+" && "+stepRow("More"))); err != nil {
		t.Fatalf("the steps table never showed Write and More: %v", err)
	}
	cell := func(step, cls string) string {
		return evalJS[string](t, ctx, fmt.Sprintf(`document.querySelector('#steps tr[data-step=%q] td.%s').textContent`, step, cls))
	}
	// The fake server reports 10 in + 5 out per request; claude makes two
	// requests per step here (the tool call, then the answer).
	if got := cell("Write", "tokens"); got != "30" {
		t.Errorf("Write's tokens = %q, want 30", got)
	}
	if got := cell("Write", "cost"); !regexp.MustCompile(`^\$0\.\d{4}$`).MatchString(got) {
		t.Errorf("Write's cost = %q, want claude's total_cost_usd as $0.NNNN", got)
	}
	if got := evalJS[string](t, ctx, `document.querySelector("#summary").textContent`); !strings.Contains(got, "tokens60") || !strings.Contains(got, "lines written3") {
		t.Errorf("summary = %q, want 60 tokens and 3 lines written", got)
	}
	evalJS[bool](t, ctx, `(document.querySelector("#steps").scrollIntoView(), true)`)
	screenshot(t, ctx, "serve-agent-activity")
	if err := chromedp.Do(ctx,
		waitJS(`(() => { const a = document.querySelector('#steps tr[data-step="Write"] a.diff'); if (!a) return false; a.click(); return true })()`),
		waitJS(`(document.querySelector("#log h2 span")||{}).textContent === "Write · diff"`),
		waitJS(`document.querySelector("#log pre").textContent.includes("+second line")`),
	); err != nil {
		t.Fatalf("Write's diff never showed: %v", err)
	}
	if got := evalJS[string](t, ctx, `document.querySelector("#log pre").textContent`); strings.Contains(got, "third line") {
		t.Errorf("Write's diff holds More's change:\n%s", got)
	}
	evalJS[bool](t, ctx, `(document.querySelector("#steps").scrollIntoView(), true)`)
	screenshot(t, ctx, "serve-step-diff")
	if err := chromedp.Do(ctx,
		waitJS(`(() => { const a = document.querySelector('#rundiff'); if (!a) return false; a.click(); return true })()`),
		waitJS(`(document.querySelector("#log h2 span")||{}).textContent === "the run's whole diff"`),
		waitJS(`document.querySelector("#log pre").textContent.includes("+second line") && document.querySelector("#log pre").textContent.includes("+third line")`),
	); err != nil {
		t.Fatalf("the run's whole diff never showed: %v", err)
	}
	st := p.run("status", "agents-1")
	for _, re := range []string{
		`(?m)^stats: +60 tokens, cost \$0\.\d{4}, 3 lines written$`,
		`(?m)^changes: +2 files changed, 3 insertions\(\+\)`,
		`(?m)^Write +completed +1 +1 +\d+\.\ds +0 +claude +30 +\$0\.\d{4} +[0-9a-f]{10}$`,
	} {
		if !regexp.MustCompile(re).MatchString(st.stdout) {
			t.Errorf("status lacks %s:\n%s", re, st.stdout)
		}
	}
	d := p.run("status", "agents-1", "--diff")
	if !strings.Contains(d.stdout, "=== step Write (commit ") || !strings.Contains(d.stdout, "=== run agents-1") || strings.Count(d.stdout, "+third line") != 2 {
		t.Errorf("status --diff lacks the step commits and the run's diff:\n%s", d.stdout)
	}
}
