package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKillAnywhere SIGKILLs smithvm at pseudo-random instants (mid-step,
// mid-journal append, mid-snapshot, between a step's exit and its journal
// entry) and resumes until the run completes. Invariants: no resume finds a
// corrupt state; every step runs; a step runs again only when a kill hit it
// before its result was durable, so each kill causes at most one extra run
// (two kills in a row may hit the same step) and the extra runs of all
// steps together are at most the kills.
func TestKillAnywhere(t *testing.T) {
	t.Parallel()
	const steps, items = 30, 12
	// testdata/workflows/kill_anywhere.yaml: S0 ... S29, then a loop over
	// i0 ... i11.
	type step struct {
		N    int
		Next string
	}
	var chain []step
	for i := 0; i < steps; i++ {
		next := fmt.Sprintf("S%d", i+1)
		if i == steps-1 {
			next = "Loop"
		}
		chain = append(chain, step{i, next})
	}
	var names []string
	for i := 0; i < items; i++ {
		names = append(names, fmt.Sprintf("i%d", i))
	}
	text := fillWorkflow(t, "kill_anywhere.yaml", map[string]any{"steps": chain, "items": strings.Join(names, ", ")})

	p := newProj(t)
	wf := p.write("chaos.yaml", text)
	const seed = 20261122
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("kill delays from seed %d", seed)

	journal := filepath.Join(p.runRoot("chaos"), "journal.jsonl")
	kills := 0
	args := []string{"run", wf, "--run-id", "chaos"}
	for round := 0; round < 20; round++ {
		run := p.start(args...)
		if round == 0 {
			// The first kill only once the run exists on disk.
			waitFor(t, 20*time.Second, "the run's journal", func() bool {
				fi, err := os.Stat(journal)
				return err == nil && fi.Size() > 0
			})
		}
		time.Sleep(time.Duration(5+rng.IntN(75)) * time.Millisecond)
		run.cmd.Process.Signal(syscall.SIGKILL)
		r := run.wait(t)
		switch r.code {
		case 0:
			// It finished before the kill landed.
		case 128 + int(syscall.SIGKILL):
			kills++
		default:
			t.Fatalf("round %d: smithvm exit %d, want 0 or killed:\n%s", round, r.code, r.stderr)
		}
		if r.code == 0 {
			break
		}
		args = []string{"resume", "chaos"}
	}
	// Finish without kills; a completed run answers 0 with nothing to do.
	final := p.vm("resume", "chaos")
	want(t, final, 0)

	if st := p.state("chaos"); st.Status != "completed" {
		t.Fatalf("final status %q, want completed", st.Status)
	}
	reruns := 0
	check := func(name string) {
		n := p.count(name)
		if n == 0 {
			t.Errorf("%s: the step never ran", name)
			return
		}
		reruns += n - 1
	}
	for i := 0; i < steps; i++ {
		check(fmt.Sprintf("s%d.cnt", i))
	}
	for i := 0; i < items; i++ {
		check(fmt.Sprintf("loop-i%d.cnt", i))
	}
	if reruns > kills {
		t.Errorf("%d extra runs after %d kills: a step whose result was durable was run again", reruns, kills)
	}
	t.Logf("%d kills, %d extra runs", kills, reruns)
}

// chaosManifest has a pure CALL (payload saved and restored), AI blocks on
// mock scripts and command blocks slow enough to be killed in.
var chaosManifest = workflow("chaos_manifest.json")

// payloadOf is a run's final payload as TYPE:content lines.
func payloadOf(t *testing.T, p *proj, id string) string {
	t.Helper()
	var st struct {
		Status  string `json:"status"`
		Payload []struct {
			Type    string `json:"type"`
			Content string `json:"content"`
		} `json:"payload"`
	}
	if err := json.Unmarshal([]byte(p.read(filepath.Join(".orchestrator/runs", id, "state.json"))), &st); err != nil {
		t.Fatalf("state of %s: %v", id, err)
	}
	if st.Status != "completed" {
		t.Fatalf("run %s: status %q, want completed", id, st.Status)
	}
	var b strings.Builder
	for _, s := range st.Payload {
		fmt.Fprintf(&b, "%s:%s\n", s.Type, s.Content)
	}
	return b.String()
}

// TestKillAnywhereManifest: a manifest with a pure CALL and AI blocks,
// SIGKILLed at pseudo-random instants and resumed until done, ends with
// exactly the payload of an uninterrupted run.
func TestKillAnywhereManifest(t *testing.T) {
	t.Parallel()
	setup := func() (*proj, string) {
		p := newProj(t)
		p.write("workspace/ask.yaml", "- reply: the answer\n- reply: a second answer\n")
		p.write("workspace/think.yaml", "- reply: a thought\n- reply: another thought\n")
		return p, p.write("chaos.json", chaosManifest)
	}
	clean, wf := setup()
	want(t, clean.vm("run", wf, "--run-id", "clean"), 0)
	wantPayload := payloadOf(t, clean, "clean")
	if !strings.Contains(wantPayload, "THOUGHT:a thought") || !strings.Contains(wantPayload, "ANSWER:the answer") {
		t.Fatalf("uninterrupted payload lacks the replies:\n%s", wantPayload)
	}

	const seed = 1122
	rng := rand.New(rand.NewPCG(seed, 2))
	kills := 0
	for trial := 0; trial < 4; trial++ {
		p, wf := setup()
		journal := filepath.Join(p.runRoot("m"), "journal.jsonl")
		args := []string{"run", wf, "--run-id", "m"}
		for round := 0; round < 10; round++ {
			run := p.start(args...)
			if round == 0 {
				waitFor(t, 20*time.Second, "the run's journal", func() bool {
					fi, err := os.Stat(journal)
					return err == nil && fi.Size() > 0
				})
			}
			time.Sleep(time.Duration(5+rng.IntN(40)) * time.Millisecond)
			run.cmd.Process.Signal(syscall.SIGKILL)
			if r := run.wait(t); r.code == 0 {
				break
			} else if r.code != 128+int(syscall.SIGKILL) {
				t.Fatalf("trial %d round %d: exit %d:\n%s", trial, round, r.code, r.stderr)
			}
			kills++
			args = []string{"resume", "m"}
		}
		want(t, p.vm("resume", "m"), 0)
		if got := payloadOf(t, p, "m"); got != wantPayload {
			t.Errorf("trial %d: payload after kills and resumes =\n%s\nwant (uninterrupted)\n%s", trial, got, wantPayload)
		}
	}
	if kills == 0 {
		t.Fatal("no kill landed before the runs completed: the test tested nothing")
	}
	t.Logf("%d kills over 4 trials", kills)
}
