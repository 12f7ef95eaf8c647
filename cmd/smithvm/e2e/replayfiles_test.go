package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var replayFilesWorkflow = workflow("replay_files.yaml")

// TestReplayRestoresFiles (CONTRACT 5.2): --record keeps what each provider
// call changed in the run's worktree; --replay, with the provider's program
// gone, applies it where the CLI would have run, so the replayed run's
// branch has the same trees as the recorded one, step by step, and the same
// results. A change that no longer applies fails the step with
// E_REPLAY_MISS naming the file.
func TestReplayRestoresFiles(t *testing.T) {
	t.Parallel()
	rec := gitProj(t)
	wf := strings.ReplaceAll(replayFilesWorkflow, "CODER", "HELPER")
	dir := filepath.Join(t.TempDir(), "rec")
	want(t, rec.vm("run", rec.write("rf.yaml", wf), "--run-id", "r", "--record", dir), 0)
	if b, err := os.ReadFile(filepath.Join(dir, "Edit-1.json")); err != nil || !strings.Contains(string(b), `"path": "README.md"`) {
		t.Fatalf("the recording of Edit lacks its file changes: %v\n%s", err, b)
	}

	// Replay in another repository with the same start, the program gone.
	rep := gitProj(t)
	wf = strings.ReplaceAll(replayFilesWorkflow, "CODER", filepath.Join(t.TempDir(), "no-such-cli"))
	want(t, rep.vm("run", rep.write("rf.yaml", wf), "--run-id", "r", "--replay", dir), 0)
	treesOf := func(p *proj) string {
		var out []string
		for _, c := range strings.Fields(gitIn(t, p.ws, "rev-list", "--reverse", "smith/r")) {
			out = append(out, gitIn(t, p.ws, "show", "-s", "--format=%s", c)+"\n"+gitIn(t, p.ws, "ls-tree", "-r", c))
		}
		return strings.Join(out, "\n")
	}
	if a, b := treesOf(rec), treesOf(rep); a != b {
		t.Errorf("replayed branch differs from the recorded one:\nrecorded:\n%s\nreplayed:\n%s", a, b)
	}
	if a, b := rec.state("r").Steps["Check"].Output, rep.state("r").Steps["Check"].Output; a != b || a != "edited" {
		t.Errorf("Check output: recorded %q, replayed %q", a, b)
	}

	// A change that no longer applies: README.md is not as it was.
	miss := gitProj(t)
	miss.write("workspace/README.md", "someone else's\n")
	gitIn(t, miss.ws, "add", "README.md")
	gitIn(t, miss.ws, "commit", "-q", "-m", "readme")
	r := miss.vm("run", miss.write("rf.yaml", wf), "--run-id", "r", "--replay", dir)
	if r.code == 0 || !strings.Contains(r.stderr, "E_REPLAY_MISS") || !strings.Contains(r.stderr, "README.md") {
		t.Errorf("replay onto a changed README.md: exit %d, want E_REPLAY_MISS naming README.md\n%s", r.code, r.stderr)
	}
}

var replayShapesWorkflow = workflow("replay_shapes.yaml")

// TestReplayLinksAndFolders (CONTRACT 5.2): calls that make a symbolic
// link, point it elsewhere, replace a folder by a file and a file by a
// folder are replayed, with the program gone, into a branch with the same
// trees, commit by commit, as the recorded run's.
func TestReplayLinksAndFolders(t *testing.T) {
	t.Parallel()
	rec := gitProj(t)
	dir := filepath.Join(t.TempDir(), "rec")
	wf := strings.ReplaceAll(replayShapesWorkflow, "CODER", "HELPER")
	want(t, rec.vm("run", rec.write("rs.yaml", wf), "--run-id", "r", "--record", dir), 0)
	rep := gitProj(t)
	wf = strings.ReplaceAll(replayShapesWorkflow, "CODER", filepath.Join(t.TempDir(), "no-such-cli"))
	r := rep.vm("run", rep.write("rs.yaml", wf), "--run-id", "r", "--replay", dir)
	if r.code != 0 {
		t.Fatalf("replay: exit %d\n%s", r.code, r.stderr)
	}
	treesOf := func(p *proj) string {
		var out []string
		for _, c := range strings.Fields(gitIn(t, p.ws, "rev-list", "--reverse", "smith/r")) {
			out = append(out, gitIn(t, p.ws, "show", "-s", "--format=%s", c)+"\n"+gitIn(t, p.ws, "ls-tree", "-r", c))
		}
		return strings.Join(out, "\n")
	}
	a, b := treesOf(rec), treesOf(rep)
	if a != b || !strings.Contains(a, "120000 blob") || !strings.Contains(a, "old.txt/inside.txt") {
		t.Errorf("replayed branch differs from the recorded one (or lacks the link):\nrecorded:\n%s\nreplayed:\n%s", a, b)
	}
}
