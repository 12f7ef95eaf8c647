package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var messagesWorkflow = workflow("messages.yaml")

// TestMessages: agents' folders exist from the start; send delivers
// numbered messages atomically; instructions (inline and from a file) come
// first in every prompt of the agent; wait_for with consume: true moves what
// it took to processed/ exactly once (a resume after the moves were cut
// short finishes them without running the step again), so the next wait
// sees only new messages; events say so; clean-processed empties processed/.
func TestMessages(t *testing.T) {
	p := newProj(t)
	wf := p.write("msgs.yaml", messagesWorkflow)
	p.write("workspace/prompts/eng.md", "You are the engineer.\n")
	r := p.vm("run", wf, "--context", "gate=3")
	if r.code != 1 {
		t.Fatalf("run: exit %d, want 1 (Gate fails)\n%s", r.code, r.stderr)
	}
	id := r.runID()
	design, note := msgName(id, "0001", "design.md"), msgName(id, "0002", "note.txt")
	for _, dir := range []string{"architect/inbox", "architect/processed", "qa/inbox", "qa/processed", "engineer/processed"} {
		if fi, err := os.Stat(filepath.Join(p.ws, "agents", dir)); err != nil || !fi.IsDir() {
			t.Errorf("agents/%s is not a folder: %v", dir, err)
		}
	}
	st := readState(t, p, id)
	if got := st.Steps["Design"].Output; !strings.HasPrefix(got, "You are the architect.\n\nWrite a design.") {
		t.Errorf("Design output %q does not start with the agent's instructions, an empty line and the prompt", got)
	}
	if got := st.Steps["HandOff"].Output; got != "agents/engineer/inbox/"+design {
		t.Errorf("HandOff output %q, want agents/engineer/inbox/%s", got, design)
	}
	if got := st.Steps["Note"].Output; got != "agents/engineer/inbox/"+note {
		t.Errorf("Note output %q, want agents/engineer/inbox/%s", got, note)
	}
	impl := st.Steps["Implement"].Output
	if !strings.HasPrefix(impl, "You are the engineer.\n\n") || !strings.HasSuffix(impl, "Implement.") || !strings.Contains(impl, design) || !strings.Contains(impl, note) {
		t.Errorf("Implement prompt %q lacks the instructions file first or the injected messages", impl)
	}
	if got := p.read("workspace/agents/engineer/processed/" + note); got != "also: tests for qa" {
		t.Errorf("processed/0002-note.txt = %q", got)
	}
	if got := p.read("workspace/agents/engineer/processed/" + design); !strings.Contains(got, "Write a design.") {
		t.Errorf("processed/0001-design.md = %q, want the design", got)
	}
	if names := ls(t, filepath.Join(p.ws, "agents/engineer/inbox")); len(names) != 0 {
		t.Errorf("inbox after consume holds %v", names)
	}
	evs := events(t, p, id)
	if n := count(evs, "message_sent"); n != 2 {
		t.Errorf("%d message_sent events, want 2", n)
	}
	if n := count(evs, "message_consumed"); n != 2 {
		t.Errorf("%d message_consumed events, want 2", n)
	}
	if !r.has("INFO: Step 'HandOff' sent agents/engineer/inbox/" + design + " to 'engineer'.") {
		t.Errorf("console lacks the message_sent line:\n%s", r.stderr)
	}

	// A crash after Implement's completion was saved but before its moves:
	// put the messages back; resume finishes the moves, Implement does not run again.
	for _, n := range []string{design, note} {
		if err := os.Rename(filepath.Join(p.ws, "agents/engineer/processed", n), filepath.Join(p.ws, "agents/engineer/inbox", n)); err != nil {
			t.Fatal(err)
		}
	}
	p.write("msgs.yaml", strings.Replace(messagesWorkflow, `"exit:${context.gate}"`, `"exit:0"`, 1))
	r = p.vm("resume", id)
	if r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	if names := ls(t, filepath.Join(p.ws, "agents/engineer/inbox")); len(names) != 0 {
		t.Errorf("resume left %v in the inbox", names)
	}
	if r.has("INFO: Step 'Implement' starting.") {
		t.Errorf("resume ran Implement again:\n%s", r.stderr)
	}
	st = readState(t, p, id)
	if w := st.Steps["Wait2"]; w == nil || w.Status != "failed" {
		t.Errorf("Wait2 = %+v, want failed: the consumed messages must not satisfy the next wait", w)
	}

	r = p.vm("clean-processed", "--older-than", "1h")
	if r.code != 0 || !r.has("INFO: Removed 0 processed message(s) under "+p.ws+".") {
		t.Errorf("clean-processed --older-than 1h: exit %d\n%s", r.code, r.stderr)
	}
	r = p.vm("clean-processed")
	if r.code != 0 || !r.has("INFO: Removed 2 processed message(s) under "+p.ws+".") {
		t.Errorf("clean-processed: exit %d\n%s", r.code, r.stderr)
	}
	if names := ls(t, filepath.Join(p.ws, "agents/engineer/processed")); len(names) != 0 {
		t.Errorf("processed/ still holds %v", names)
	}
}

type stateView struct {
	Steps map[string]*struct {
		Status string `json:"status"`
		Output string `json:"output"`
	} `json:"steps"`
}

func readState(t *testing.T, p *proj, id string) stateView {
	t.Helper()
	r := p.vm("status", id, "--json")
	var st stateView
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("status --json: %v\n%s%s", err, r.stdout, r.stderr)
	}
	return st
}

func events(t *testing.T, p *proj, id string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for l := range strings.SplitSeq(strings.TrimSpace(p.read(filepath.Join(".orchestrator/runs", id, "logs/events.jsonl"))), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("events.jsonl line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func count(evs []map[string]any, kind string) int {
	return len(slices.DeleteFunc(slices.Clone(evs), func(m map[string]any) bool { return m["event"] != kind }))
}

func ls(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}
