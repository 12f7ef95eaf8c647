package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// msgName is the name run id gives its message seq ("0001") called name:
// NNNN-TAG-name, TAG 8 hex digits of the SHA-256 of the run id.
func msgName(id, seq, name string) string {
	sum := sha256.Sum256([]byte(id))
	return seq + "-" + hex.EncodeToString(sum[:4]) + "-" + name
}

// consumedOf returns the messages (inbox paths) each step of run id
// consumed, from its state.json, threads' steps included after the join.
func consumedOf(t *testing.T, p *proj, id string) map[string][]string {
	t.Helper()
	var st struct {
		Steps map[string]struct {
			Consumed []struct{ From string } `json:"consumed"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(p.read(filepath.Join(".orchestrator/runs", id, "state.json"))), &st); err != nil {
		t.Fatalf("state.json of %s: %v", id, err)
	}
	out := map[string][]string{}
	for name, s := range st.Steps {
		for _, c := range s.Consumed {
			out[name] = append(out[name], c.From)
		}
	}
	return out
}

var acrossWorkflow = workflow("across.yaml")

// TestMessagesAcrossThreads: messages belong to the run, not to a thread.
// An engineer in one parallel branch waits for QA's answer sent from the
// other branch, in a plain run and in an isolated one (where each branch
// works in a worktree of its own); the names are numbered by the branch,
// not by which branch was first.
func TestMessagesAcrossThreads(t *testing.T) {
	t.Parallel()
	for _, isolated := range []bool{false, true} {
		t.Run(fmt.Sprintf("isolated=%v", isolated), func(t *testing.T) {
			t.Parallel()
			var p *proj
			wf := strings.Replace(acrossWorkflow, "ISOLATION", "", 1)
			ws := ""
			if isolated {
				p = gitProj(t)
				wf = strings.Replace(acrossWorkflow, "ISOLATION", "isolation: git-worktree", 1)
				ws = filepath.Join(".orchestrator/worktrees/ra")
			} else {
				p = newProj(t)
				ws = "workspace"
			}
			r := p.vm("run", p.write("across.yaml", wf), "--run-id", "ra")
			want(t, r, 0)
			q, a := msgName("ra", "0001", "engineer.1-q.md"), msgName("ra", "0001", "qa.1-a.md")
			if got := p.read(filepath.Join(ws, "agents/qa/processed", q)); got != "what is the answer?" {
				t.Errorf("qa's processed/%s = %q", q, got)
			}
			if got := p.read(filepath.Join(ws, "agents/eng/processed", a)); got != "the answer is 42" {
				t.Errorf("eng's processed/%s = %q", a, got)
			}
			st := p.state("ra")
			if got := st.Steps["GetAnswer"].Output; !strings.Contains(got, "the answer is 42") {
				t.Errorf("GetAnswer's prompt lacks the answer: %q", got)
			}
			c := consumedOf(t, p, "ra")
			if !slices.Equal(c["GetAnswer"], []string{"agents/eng/inbox/" + a}) || !slices.Equal(c["GetQuestion"], []string{"agents/qa/inbox/" + q}) {
				t.Errorf("consumed = %v", c)
			}
		})
	}
}

var twoConsumersWorkflow = workflow("two_consumers.yaml")

// TestMessagesTwoConsumers: two branches waiting with consume: true on one
// inbox never both take the same message (the claim is atomic), under
// random delays; every message is consumed exactly once.
func TestMessagesTwoConsumers(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	wf := p.write("two.yaml", twoConsumersWorkflow)
	for i := range 4 {
		id := fmt.Sprintf("two%d", i)
		d := func() string { return fmt.Sprintf("d=%.3f", rand.Float64()*0.04) }
		args := []string{"run", wf, "--run-id", id}
		for k := 1; k <= 4; k++ {
			args = append(args, "--context", strings.Replace(d(), "d=", fmt.Sprintf("d%d=", k), 1))
		}
		want(t, p.vm(args...), 0)
		c := consumedOf(t, p, id)
		var all []string
		for _, s := range []string{"TakeA", "TakeB", "Rest"} {
			all = append(all, c[s]...)
		}
		slices.Sort(all)
		var sent []string
		for k := 1; k <= 3; k++ {
			sent = append(sent, "agents/eng/inbox/"+msgName(id, "0001", fmt.Sprintf("sender.%d-m.md", k)))
		}
		if !slices.Equal(all, sent) {
			t.Errorf("run %s: consumed %v (TakeA %v, TakeB %v, Rest %v), want each of %v once", id, all, c["TakeA"], c["TakeB"], c["Rest"], sent)
		}
	}
	if n := len(ls(t, filepath.Join(p.ws, "agents/eng/processed"))); n != 12 {
		t.Errorf("processed holds %d messages, want 12", n)
	}
	if names := ls(t, filepath.Join(p.ws, "agents/eng/inbox")); len(names) != 0 {
		t.Errorf("inbox holds %v", names)
	}
}

var sharedWorkflow = workflow("shared.yaml")

// TestMessagesSharedWorkspace: runs that share a WORKSPACE (here 10 at once,
// sending messages of the same name under random delays) never overwrite
// each other's messages, and each consumes its own three, never another
// run's.
func TestMessagesSharedWorkspace(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	wf := p.write("shared.yaml", sharedWorkflow)
	const runs = 10
	var wg sync.WaitGroup
	res := make([]result, runs)
	for i := range runs {
		wg.Go(func() {
			res[i] = p.vm("run", wf, "--run-id", fmt.Sprintf("s%d", i),
				"--context", fmt.Sprintf("d1=%.3f", rand.Float64()*0.05), "--context", fmt.Sprintf("d2=%.3f", rand.Float64()*0.05))
		})
	}
	wg.Wait()
	for i, r := range res {
		if r.code != 0 {
			t.Fatalf("run s%d: exit %d\n%s", i, r.code, r.stderr)
		}
		id := fmt.Sprintf("s%d", i)
		got := consumedOf(t, p, id)["Take"]
		var wantMsgs []string
		for k, seq := range []string{"0001", "0002", "0003"} {
			name := msgName(id, seq, "design.md")
			wantMsgs = append(wantMsgs, "agents/eng/inbox/"+name)
			body := p.read(filepath.Join("workspace/agents/eng/processed", name))
			if w := []string{"one", "two", "three"}[k] + " " + id; body != w {
				t.Errorf("processed/%s = %q, want %q", name, body, w)
			}
		}
		if !slices.Equal(got, wantMsgs) {
			t.Errorf("run %s consumed %v, want its own %v", id, got, wantMsgs)
		}
	}
	if n := len(ls(t, filepath.Join(p.ws, "agents/eng/processed"))); n != 3*runs {
		t.Errorf("processed holds %d messages, want %d", n, 3*runs)
	}
	if _, err := os.Stat(filepath.Join(p.ws, "agents/eng/inbox")); err != nil {
		t.Fatal(err)
	}
}
