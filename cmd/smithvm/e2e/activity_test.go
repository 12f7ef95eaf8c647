package e2e

// The agent's activity as each real CLI streams it (CONTRACT 13, "watch a
// step while it runs"): the claude, gemini and codex presets read their
// CLI's stream of events (claude and gemini stream-json, codex exec
// --json) into RUN_ROOT/logs/live.jsonl, one JSON object per thing the
// agent did, masked, while the reply, the failure classification and the
// tokens stay as CONTRACT 5 says (clis_test.go).

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"smith/internal/fakemodel"
)

// liveLine is one line of RUN_ROOT/logs/live.jsonl.
type liveLine struct {
	Time string `json:"time"`
	Step string `json:"step"`
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// liveLines reads a run's live log.
func (p *cliProj) liveLines(id string) []liveLine {
	p.t.Helper()
	var out []liveLine
	for _, l := range strings.Split(strings.TrimSpace(p.read(filepath.Join(".orchestrator/runs", id, "logs", "live.jsonl"))), "\n") {
		if l == "" {
			continue
		}
		var x liveLine
		if err := json.Unmarshal([]byte(l), &x); err != nil {
			p.t.Fatalf("live.jsonl line %q: %v", l, err)
		}
		out = append(out, x)
	}
	return out
}

// TestCLIActivity: each CLI, in both home modes, writes a file with a tool
// call and answers; its activity is an edit naming the file, then the
// agent's message, in that order, each with a time and the step; a key in
// the message is masked; the reply and the tokens are as before. `smithvm
// logs RUN STEP` prints the same lines.
func TestCLIActivity(t *testing.T) {
	t.Parallel()
	eachCLI(t, func(t *testing.T, c cliCase, mode string) {
		needCLIs(t, c.name)
		key := "fake-key-" + c.name + "-0123456789"
		p := newCLIProj(t, mode,
			fakemodel.Rule{Match: "ACT-WRITE", Reply: fakemodel.Reply{WriteFile: &fakemodel.WriteFile{Path: "act.txt", Content: "from the agent\n"},
				Text: "done writing; the key was " + key}})
		wf := p.put("wf.yaml", p.workflow("act.yaml", c, cliCase{}))
		r := p.run("run", wf, "--run-id", "act")
		if r.code != 0 {
			t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
		}
		if got := p.read("workspace/act.txt"); got != "from the agent\n" {
			t.Errorf("act.txt = %q", got)
		}
		st := p.state(r)
		if s := st.Steps["Act"]; s.Output != "done writing; the key was ***" || st.Stats.Tokens != 30 {
			t.Errorf("Act output %q, tokens %d; want the masked reply and 30 tokens", s.Output, st.Stats.Tokens)
		}
		lines := p.liveLines("act")
		edit, msg := -1, -1
		for i, l := range lines {
			if l.Step != "Act" || l.Time == "" {
				t.Errorf("line %d has step %q time %q", i, l.Step, l.Time)
			}
			if strings.Contains(l.Text, key) {
				t.Errorf("the key is in the live log: %+v", l)
			}
			switch {
			case l.Kind == "edit" && strings.Contains(l.Text, "act.txt") && edit < 0:
				edit = i
			case l.Kind == "message" && l.Text == "done writing; the key was ***":
				msg = i
			}
		}
		if edit < 0 || msg < 0 || edit > msg {
			t.Errorf("live log lacks the edit of act.txt before the message (edit %d, message %d):\n%+v", edit, msg, lines)
		}
		lg := p.run("logs", "act", "Act")
		if lg.code != 0 || !strings.Contains(lg.stdout, "Act  edit") || !strings.Contains(lg.stdout, "act.txt") ||
			!strings.Contains(lg.stdout, "Act  message done writing; the key was ***") {
			t.Errorf("smithvm logs act Act: exit %d\n%s%s", lg.code, lg.stdout, lg.stderr)
		}
	})
}
