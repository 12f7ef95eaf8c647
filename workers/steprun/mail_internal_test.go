package steprun

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"smith/workers/confine"
	"smith/workers/step"
)

// mailReq is a request of claimant c in a project whose agent eng's inbox
// holds the messages names.
func mailReq(t *testing.T, base string, c string) *step.Request {
	t.Helper()
	d, err := confine.New(base)
	if err != nil {
		t.Fatal(err)
	}
	return &step.Request{Dirs: d, Mail: &step.Mail{Workspace: d.Workspace,
		Folders: []string{"agents/eng/inbox", "agents/eng/processed"}, Tag: step.RunTag("r"), Claimant: c}}
}

// TestClaimConcurrent: of several steps claiming the same messages at
// once, under random delays, exactly one holds each message; a claim given
// back lets another step take it; a step sees its own claims again (a
// crash and resume), never another's.
func TestClaimConcurrent(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	inbox := filepath.Join(base, "workspace", "agents", "eng", "inbox")
	if err := os.MkdirAll(inbox, 0o755); err != nil {
		t.Fatal(err)
	}
	var all []string
	for i := range 30 {
		f := filepath.Join(inbox, step.MessageName(i+1, step.RunTag("r"), "", 0, "m.md"))
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		all = append(all, f)
	}
	const claimants = 8
	held := make([][]string, claimants)
	var wg sync.WaitGroup
	for c := range claimants {
		wg.Go(func() {
			req := mailReq(t, base, fmt.Sprintf("r/Take[%d]", c))
			order := slices.Clone(all)
			rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			for _, f := range order {
				time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
				held[c] = append(held[c], claim(req, []string{f})...)
			}
		})
	}
	wg.Wait()
	var got []string
	for _, h := range held {
		got = append(got, h...)
	}
	slices.Sort(got)
	if !slices.Equal(got, all) {
		t.Fatalf("claims hold %d messages (%v), want each of the %d exactly once", len(got), got, len(all))
	}
	owner := slices.IndexFunc(held, func(h []string) bool { return len(h) > 0 })
	f := held[owner][0]
	other := (owner + 1) % claimants
	req := mailReq(t, base, fmt.Sprintf("r/Take[%d]", other))
	if h := claim(req, []string{f}); len(h) != 0 {
		t.Errorf("claimant %d took %s, held by %d", other, f, owner)
	}
	if m, _ := globFiles(req, "agents/eng/inbox/*"); slices.Contains(m, f) {
		t.Errorf("claimant %d sees %s, claimed by %d", other, f, owner)
	}
	mine := mailReq(t, base, fmt.Sprintf("r/Take[%d]", owner))
	if h := claim(mine, []string{f}); !slices.Equal(h, []string{f}) {
		t.Errorf("claimant %d does not hold its own claim on %s again: %v", owner, f, h)
	}
	Release(mine, []string{f})
	if h := claim(req, []string{f}); !slices.Equal(h, []string{f}) {
		t.Errorf("after the release claimant %d could not take %s: %v", other, f, h)
	}
}

// TestForeignMessages: a step sees its run's messages and those no run
// sent (a person's), never another run's.
func TestForeignMessages(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	inbox := filepath.Join(base, "workspace", "agents", "eng", "inbox")
	if err := os.MkdirAll(inbox, 0o755); err != nil {
		t.Fatal(err)
	}
	names := []string{step.MessageName(1, step.RunTag("r"), "", 0, "a.md"), step.MessageName(1, step.RunTag("other"), "", 0, "a.md"), "note.md"}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(inbox, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, serr := globFiles(mailReq(t, base, "r/S"), "agents/eng/inbox/*")
	if serr != nil {
		t.Fatal(serr)
	}
	var got []string
	for _, f := range m {
		got = append(got, filepath.Base(f))
	}
	want := []string{names[0], "note.md"}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("globFiles = %v, want %v", got, want)
	}
}
