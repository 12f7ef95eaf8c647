package e2e

// End-to-end tests of session: continue (CONTRACT 12.1) with the real
// claude, gemini and codex against the fake model server: an agent's
// second call carries its first turn and continues the same session, also
// after smithvm is SIGKILLed between the two calls; the iterations of a
// parallel for_each get a session each; a recording replays the same
// sessions and replies with no CLI installed.

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"smith/internal/fakemodel"
	"smith/workers/provider"
)

// sessionState is the part of state.json these tests read.
type sessionState struct {
	Status   string `json:"status"`
	Sessions map[string]struct {
		Provider string `json:"provider"`
		ID       string `json:"id"`
		Turns    int    `json:"turns"`
	} `json:"sessions"`
	Steps map[string]struct {
		Status string `json:"status"`
		Output string `json:"output"`
		Tokens int    `json:"tokens"`
	} `json:"steps"`
}

func (p *cliProj) sessionState(id string) sessionState {
	p.t.Helper()
	var st sessionState
	if err := json.Unmarshal([]byte(p.read(filepath.Join(".orchestrator/runs", id, "state.json"))), &st); err != nil {
		p.t.Fatal(err)
	}
	return st
}

// sessionWorkflow (testdata/workflows/clis/sessions.yaml): the engineer
// asks twice, smithvm is killed between the two calls (the first time
// only), then two parallel iterations work.
func sessionWorkflow(p *cliProj, c cliCase) string {
	return p.put("sessions.yaml", p.header("sessions")+p.fill("sessions.yaml", map[string]any{
		"cli": c.name, "model": c.model, "helper": built.helper, "mark": filepath.Join(p.base, "crash.mark")}))
}

func sessionRules() []fakemodel.Rule {
	return []fakemodel.Rule{
		{Match: "first question ONE", Reply: fakemodel.Reply{Text: "answer one"}},
		{Match: "second question TWO", Reply: fakemodel.Reply{Text: "answer two"}},
		{Match: "work on item-a", Reply: fakemodel.Reply{Text: "did a"}},
		{Match: "work on item-b", Reply: fakemodel.Reply{Text: "did b"}},
	}
}

// TestCLISession: each CLI in both home modes.
func TestCLISession(t *testing.T) {
	needCLIs(t, "claude", "gemini", "codex")
	eachCLI(t, func(t *testing.T, c cliCase, mode string) {
		p := newCLIProj(t, mode, sessionRules()...)
		wf := sessionWorkflow(p, c)
		rec := filepath.Join(p.base, "rec")
		r := p.run("run", wf, "--run-id", "s1", "--record", rec)
		if r.code != 137 {
			t.Fatalf("run: exit %d, want 137 (killed between the calls)\n%s", r.code, r.stderr)
		}
		r = p.run("resume", "s1", "--record", rec)
		if r.code != 0 {
			t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
		}
		st := p.sessionState("s1")
		eng := st.Sessions["eng"]
		if eng.ID == "" || eng.Turns != 2 || eng.Provider != c.name {
			t.Errorf("after resume: session %+v, want the first call's at turn 2", eng)
		}
		// One session of the engineer's own (and one per iteration): the
		// resumed call continued the first.
		events := p.read(".orchestrator/runs/s1/logs/events.jsonl")
		if n := strings.Count(events, `"event":"session_started","message":"agent 'eng' started session `+eng.ID); n != 1 {
			t.Errorf("%d session_started events of %s, want 1:\n%s", n, eng.ID, events)
		}
		if got := st.Steps["Two"].Output; got != "answer two" {
			t.Errorf("Two: output %q", got)
		}
		if got := st.Steps["Two"].Tokens; got != 15 {
			t.Errorf("Two: tokens %d, want 15 (the call's own: 10 in, 5 out)", got)
		}
		// The second request carries the first turn: the question and its answer.
		var second, work []fakemodel.Logged
		for _, l := range p.requests(c.proto) {
			switch {
			case strings.Contains(l.Prompt, "second question TWO"):
				second = append(second, l)
			case strings.Contains(l.Prompt, "work on item-"):
				work = append(work, l)
			}
		}
		if len(second) != 1 {
			t.Fatalf("%d requests of the second question, want 1", len(second))
		}
		for _, s := range []string{"first question ONE", "answer one"} {
			if !strings.Contains(second[0].Body, s) {
				t.Errorf("the second request does not carry %q of the first turn:\n%s", s, head(second[0].Body))
			}
		}
		// Parallel iterations: a session each, none carrying another's turns.
		a, b := st.Sessions["eng[0]"], st.Sessions["eng[1]"]
		if a.ID == "" || b.ID == "" || a.ID == b.ID || a.ID == eng.ID || b.ID == eng.ID {
			t.Errorf("parallel sessions: eng %q, eng[0] %q, eng[1] %q: want three different ones", eng.ID, a.ID, b.ID)
		}
		if len(work) != 2 {
			t.Fatalf("%d work requests, want 2", len(work))
		}
		for _, l := range work {
			for _, s := range []string{"answer one", "did a", "did b"} {
				if strings.Contains(l.Body, s) {
					t.Errorf("the work request %q carries %q of another conversation", head(l.Prompt), s)
				}
			}
		}
		if mode == modeUser {
			p.sessionsSaved(c, eng.ID)
		}
		// Replay: the same sessions and replies, no CLI, no key.
		before := len(p.srv.Requests())
		env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + p.home}
		r2 := p.runEnv(env, "run", wf, "--run-id", "s2", "--replay", rec)
		if r2.code != 0 {
			t.Fatalf("replay: exit %d\n%s", r2.code, r2.stderr)
		}
		if after := len(p.srv.Requests()); after != before {
			t.Errorf("replay made %d requests", after-before)
		}
		st2 := p.sessionState("s2")
		for _, k := range []string{"eng", "eng[0]", "eng[1]"} {
			if st2.Sessions[k] != st.Sessions[k] {
				t.Errorf("replayed session %s = %+v, recorded %+v", k, st2.Sessions[k], st.Sessions[k])
			}
		}
		for _, s := range []string{"One", "Two"} {
			if st2.Steps[s].Output != st.Steps[s].Output {
				t.Errorf("%s: replayed %q, recorded %q", s, st2.Steps[s].Output, st.Steps[s].Output)
			}
		}
	})
}

// sessionsSaved checks that the CLI saved session id where it saves it in
// the user's own configuration (gemini: through its overlay home's link).
func (p *cliProj) sessionsSaved(c cliCase, id string) {
	p.t.Helper()
	dir := map[string]string{"claude": ".claude/projects", "gemini": ".gemini/tmp", "codex": ".codex/sessions"}[c.name]
	found := false
	short := id
	if c.name == "gemini" {
		short = id[:8] // gemini names the file after the id's first part
	}
	_ = filepath.WalkDir(filepath.Join(p.home, dir), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(d.Name(), short) {
			found = true
		}
		return nil
	})
	if !found {
		p.t.Errorf("no file of session %s under ~/%s", id, dir)
	}
}

// TestCLISessionFallback: an agent with session: continue on [claude,
// codex]: claude answers its first call and starts a session; on the
// second call claude's server fails (500), so codex answers, starting a new
// session, and the event log says the claude session did not answer; the
// third call goes straight to codex, the provider that answered, and
// continues its session (its request carries the second turn).
func TestCLISessionFallback(t *testing.T) {
	t.Parallel()
	needCLIs(t, "claude", "codex")
	p := newCLIProj(t, modeUser,
		fakemodel.Rule{Protocol: fakemodel.Anthropic, Match: "first question ONE", Reply: fakemodel.Reply{Text: "answer one"}},
		fakemodel.Rule{Protocol: fakemodel.Anthropic, Reply: fakemodel.Reply{Status: 500}},
		fakemodel.Rule{Protocol: fakemodel.OpenAI, Match: "second question TWO", Reply: fakemodel.Reply{Text: "answer two"}},
		fakemodel.Rule{Protocol: fakemodel.OpenAI, Match: "third question THREE", Reply: fakemodel.Reply{Text: "answer three"}})
	wf := p.put("fallback.yaml", p.header("fallback")+p.fill("session_fallback.yaml", map[string]any{}))
	r := p.run("run", wf, "--run-id", "f1")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	st := p.sessionState("f1")
	eng := st.Sessions["eng"]
	if eng.Provider != "codex" || eng.ID == "" || eng.Turns != 2 {
		t.Errorf("session %+v, want codex's at turn 2", eng)
	}
	if got := len(p.requests(fakemodel.Anthropic)); got != 2 {
		t.Errorf("claude made %d requests, want 2 (the third call goes to codex, which answered the second)", got)
	}
	events := p.read(".orchestrator/runs/f1/logs/events.jsonl")
	if !strings.Contains(events, "on 'claude' did not answer, so the agent's later calls continue on 'codex'") {
		t.Errorf("no session_started event saying the claude session did not answer:\n%s", events)
	}
	var third string
	for _, l := range p.requests(fakemodel.OpenAI) {
		if strings.Contains(l.Prompt, "third question THREE") {
			third = l.Body
		}
	}
	if !strings.Contains(third, "second question TWO") || !strings.Contains(third, "answer two") {
		t.Errorf("codex's third request does not carry the second turn:\n%s", head(third))
	}
}

// TestCLISessionKillInCall: smithvm is SIGKILLed while the CLI answers the
// agent's second call (the server holds that request); resume runs the
// call again into the session the first call saved: the same session id,
// the request carries the first turn, and no second session starts.
func TestCLISessionKillInCall(t *testing.T) {
	for _, c := range cliCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			needCLIs(t, c.name)
			p := newCLIProj(t, modeUser,
				fakemodel.Rule{Match: "first question ONE", Reply: fakemodel.Reply{Text: "answer one"}},
				fakemodel.Rule{Match: "second question TWO", Times: 1, Reply: fakemodel.Reply{Hang: true}},
				fakemodel.Rule{Match: "second question TWO", Reply: fakemodel.Reply{Text: "answer two"}})
			wf := p.put("kill.yaml", p.workflow("kill_in_call.yaml", c, cliCase{}))
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := p.command(ctx, p.env(), "run", wf, "--run-id", "k1", "--base", p.base)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Kill smithvm once the second request reached the server: the
			// CLI is in the middle of the call.
			for !p.asked(c.proto, "second question TWO") {
				if ctx.Err() != nil {
					t.Fatal("the second request never came")
				}
				time.Sleep(50 * time.Millisecond)
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			// The raw reply of the CLI still running (gemini's stdout
			// file) has no name in the run folder.
			tmp := filepath.Join(p.base, ".orchestrator/runs/k1/tmp")
			if ents, _ := os.ReadDir(tmp); slices.ContainsFunc(ents, func(e os.DirEntry) bool { return strings.Contains(e.Name(), "-stdout-") }) {
				t.Errorf("a raw reply file is in RUN_ROOT/tmp after the kill: %v", ents)
			}
			// gemini's call has an overlay home (a copy of the user's
			// settings, links to their files) that the kill left.
			overlays := filepath.Join(p.base, ".orchestrator/runs/k1/providers/overlays")
			if ents, _ := os.ReadDir(overlays); c.name == "gemini" && len(ents) == 0 {
				t.Errorf("no overlay home in %s after the kill: the check below proves nothing", overlays)
			}
			// The CLI cut off by the crash still runs; resume kills it
			// before it calls again (run checks that nothing is left).
			r := p.run("resume", "k1")
			if r.code != 0 {
				t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
			}
			if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
				t.Errorf("RUN_ROOT/tmp holds %v after resume, want nothing", ents)
			}
			if ents, _ := os.ReadDir(overlays); len(ents) != 0 {
				t.Errorf("RUN_ROOT/providers/overlays holds %v after resume, want nothing (the killed call's overlay)", ents)
			}
			st := p.sessionState("k1")
			eng := st.Sessions["eng"]
			if eng.ID == "" || eng.Turns != 2 || eng.Provider != c.name {
				t.Errorf("after resume: session %+v, want the first call's at turn 2", eng)
			}
			if got := st.Steps["Two"].Output; got != "answer two" {
				t.Errorf("Two: output %q", got)
			}
			var again []fakemodel.Logged
			for _, l := range p.requests(c.proto) {
				if strings.Contains(l.Prompt, "second question TWO") {
					again = append(again, l)
				}
			}
			if len(again) != 2 {
				t.Fatalf("%d requests of the second question, want 2 (the killed one and the resumed one)", len(again))
			}
			for _, s := range []string{"first question ONE", "answer one"} {
				if !strings.Contains(again[1].Body, s) {
					t.Errorf("the resumed request does not carry %q of the first turn:\n%s", s, head(again[1].Body))
				}
			}
			// The killed call's prompt may be in the CLI's session already
			// (the CLI saves the question before the answer comes).
			t.Logf("the resumed request carries the second question %d times", strings.Count(again[1].Body, "second question TWO"))
			events := p.read(".orchestrator/runs/k1/logs/events.jsonl")
			if n := strings.Count(events, `"event":"session_started"`); n != 1 || !strings.Contains(events, "started session "+eng.ID) {
				t.Errorf("%d session_started events, want 1 (the resumed call continued the first session):\n%s", n, events)
			}
		})
	}
}

// asked reports whether a request of proto carrying prompt reached the
// server.
func (p *cliProj) asked(proto, prompt string) bool {
	for _, l := range p.requests(proto) {
		if strings.Contains(l.Prompt, prompt) {
			return true
		}
	}
	return false
}

// TestMockSessionKillInCall: the mock's part of the test above. smithvm is
// SIGKILLed in the middle of the agent's second call (the mock blocks
// reading its script, a FIFO nobody writes); resume answers that call again
// in the session the first call saved: the script sees turn 2, and no
// second session starts.
func TestMockSessionKillInCall(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	p.write("workspace/one.yaml", `[{"turn": 1, "reply": "reply 1 in a new session"}]`)
	fifo := filepath.Join(p.ws, "two.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	wf := p.write("kill.yaml", workflow("mock_session_kill.yaml"))
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := p.command(ctx, baseEnv(), "run", wf, "--run-id", "k1", "--base", p.base)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	// The FIFO opens for writing once the mock opened it for reading:
	// the second call is under way. Kill smithvm there.
	var w *os.File
	for {
		f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			w = f
			break
		}
		select {
		case <-exited:
			t.Fatalf("smithvm ended before the second call read its script:\n%s", p.read(".orchestrator/runs/k1/logs/events.jsonl"))
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	w.Close()
	if err := os.Remove(fifo); err != nil {
		t.Fatal(err)
	}
	p.write("workspace/two.yaml", `[{"turn": 2, "reply": "reply 2, continued"}, {"reply": "not the session's second turn"}]`)
	if r := p.vm("resume", "k1"); r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	var st sessionState
	if err := json.Unmarshal([]byte(p.read(".orchestrator/runs/k1/state.json")), &st); err != nil {
		t.Fatal(err)
	}
	if got := st.Steps["Two"].Output; got != "reply 2, continued" {
		t.Errorf("Two: output %q, want the session's second turn", got)
	}
	eng := st.Sessions["eng"]
	if eng.ID == "" || eng.Turns != 2 {
		t.Errorf("session %+v, want turn 2", eng)
	}
	events := p.read(".orchestrator/runs/k1/logs/events.jsonl")
	if n := strings.Count(events, `"event":"session_started"`); n != 1 || !strings.Contains(events, "started session "+eng.ID) {
		t.Errorf("%d session_started events, want 1, of %s:\n%s", n, eng.ID, events)
	}
}

// TestTeamSessionNote: examples/team as shipped, switched to claude by its
// provider: line, against the fake server answering from the example's mock
// scripts: each branch's note to QA continues the branch's session, so its
// prompt carries neither the design nor the code, yet the request the
// model gets holds both (the conversation so far); the same for the
// architect's answer (its design) and QA's verdict (its question).
// bench/sessioncost measures the bytes and tokens this saves.
func TestTeamSessionNote(t *testing.T) {
	t.Parallel()
	needCLIs(t, "claude")
	var rules []fakemodel.Rule
	for _, s := range []string{"architect", "engineer", "qa"} {
		entries, err := provider.ParseScript(readRepoFile(t, "examples/team/project/team-mock/"+s+".script"))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			rules = append(rules, fakemodel.Rule{Match: e.Match, Reply: fakemodel.Reply{Text: e.Reply}})
		}
	}
	p := newCLIProj(t, modeUser, rules...)
	repo := teamRepo(t)
	const line = "provider: &ai mock "
	wf := p.put("team.yaml", strings.Replace(readRepoFile(t, "examples/team/team.yaml"), line, "provider: &ai claude ", 1))
	env := p.env()
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} { // the test step's go, warm
		if out, err := exec.Command("go", "env", k).Output(); err == nil {
			env = append(env, k+"="+strings.TrimSpace(string(out)))
		}
	}
	if r := p.runWith(env, "run", wf, "--workspace", repo, "--run-id", "team"); r.code != 4 {
		t.Fatalf("run: exit %d, want 4 (the halt for approval)\n%s", r.code, r.stderr)
	}
	notes, later := 0, 0
	for _, l := range p.requests(fakemodel.Anthropic) {
		// The architect's answer and QA's verdict continue their own
		// conversations: the design and the question are there, not in
		// the prompt.
		for _, c := range [][2]string{{"Answer QA", "Two independent tasks"}, {"give your verdict", "should Goodbye end with"}} {
			if strings.Contains(l.Prompt, c[0]) {
				later++
				if strings.Contains(l.Prompt, c[1]) || !strings.Contains(l.Body, c[1]) {
					t.Errorf("the request of %q: its prompt carries %q, or its conversation lacks it:\n%s", c[0], c[1], l.Prompt)
				}
			}
		}
		const note = "note on task '"
		i := strings.Index(l.Prompt, note)
		if i < 0 {
			continue
		}
		notes++
		code := "func Goodbye"
		if strings.HasPrefix(l.Prompt[i+len(note):], "hello") {
			code = "func Hello"
		}
		for _, s := range []string{"Two independent tasks", code} {
			if strings.Contains(l.Prompt, s) {
				t.Errorf("the note's prompt carries %q:\n%s", s, l.Prompt)
			}
			if !strings.Contains(l.Body, s) {
				t.Errorf("the note's request does not hold %q of the branch's conversation:\n%s", s, head(l.Body))
			}
		}
	}
	if notes != 2 || later != 2 {
		t.Errorf("%d note requests and %d of the answer and the verdict, want 2 each", notes, later)
	}
}

// readRepoFile returns the contents of a file of the repository.
func readRepoFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(repoFile(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
