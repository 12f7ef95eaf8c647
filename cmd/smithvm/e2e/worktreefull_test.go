package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorktreeAddOnAFullDisk: an isolated run whose worktree cannot be
// made (BASE/.orchestrator/worktrees is a small file system that the
// repository's files do not fit in: git worktree add fails writing them)
// fails before it starts (exit 1) and leaves nothing half made: no run
// folder, no worktree or git record of it, and neither the branch
// smith/<run_id> nor the base ref it had just made. Once there is room, the
// same run id starts.
func TestWorktreeAddOnAFullDisk(t *testing.T) {
	t.Parallel()
	p := gitProj(t)
	p.write("workspace/big.txt", strings.Repeat("0123456789abcdef\n", 16384)) // 272 KiB
	gitIn(t, p.ws, "add", "big.txt")
	gitIn(t, p.ws, "commit", "-q", "-m", "big")
	smallDisk(t, filepath.Join(p.base, ".orchestrator", "worktrees"), "128k")
	wf := p.write("iso.yaml", `version: "1.0"
name: iso
isolation: git-worktree
strict_flow: false
steps:
  - name: Edit
    command: ["HELPER", "write:notes.txt:hello"]
`)
	r := p.vm("run", wf, "--run-id", "r1")
	want(t, r, 1)
	if !strings.Contains(r.stderr, "git worktree add") {
		t.Errorf("the run's error does not name git worktree add:\n%s", r.stderr)
	}
	if p.exists(".orchestrator/runs/r1") {
		t.Error("the run folder of a run that never started remains")
	}
	if p.exists(".orchestrator/worktrees/r1") {
		t.Error("a half-made worktree remains")
	}
	recs, _ := filepath.Glob(filepath.Join(p.ws, ".git", "worktrees", "*"))
	if len(recs) > 0 {
		t.Errorf("git's worktree records remain: %v", recs)
	}
	if refs := gitIn(t, p.ws, "for-each-ref", "--format=%(refname)"); strings.Contains(refs, "r1") {
		t.Errorf("refs of the run remain:\n%s", refs)
	}
	// Room made: the same run id starts and commits on its branch.
	if out, err := exec.Command("mount", "-o", "remount,size=4m", filepath.Join(p.base, ".orchestrator", "worktrees")).CombinedOutput(); err != nil {
		t.Fatalf("remount: %v: %s", err, out)
	}
	r = p.vm("run", wf, "--run-id", "r1")
	want(t, r, 0)
	if got := gitIn(t, p.ws, "log", "--format=%s", "-1", "smith/r1"); !strings.Contains(got, "smith: Edit") {
		t.Errorf("after room was made, smith/r1 is at %q", got)
	}
}
