package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// vmIn runs smithvm args... in dir with env, adding nothing.
func vmIn(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, built.smithvm, args...)
	cmd.Dir, cmd.Env = dir, env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return result{code: exitCode(t, err), stdout: out.String(), stderr: errb.String()}
}

// printedCommand is the command of the console line with this prefix.
func printedCommand(t *testing.T, r result, re string) []string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + re + `$`).FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("no line matching %q:\n%s", re, r.stderr)
	}
	return strings.Fields(m[1])
}

// TestRunSaysWhereThingsAre: at the end of a run the console names the run
// folder, the artifacts folder and the next command, with --base exactly
// when BASE is not the current directory; the printed command works as
// printed from where it was printed.
func TestRunSaysWhereThingsAre(t *testing.T) {
	t.Parallel()
	p := newProj(t)
	ok := p.write("ok.yaml", okFlow)
	fail := p.write("fail.yaml", workflow("boom.yaml"))

	// From BASE itself: no --base needed.
	r := vmIn(t, p.base, baseEnv(), "run", ok, "--run-id", "here")
	want(t, r, 0)
	for _, line := range []string{
		"INFO: Run folder: " + p.runRoot("here"),
		"INFO: Artifacts: " + filepath.Join(p.ws, "artifacts"),
		"INFO: Next: smithvm status here",
	} {
		if !r.has(line) {
			t.Errorf("stderr lacks the line %q:\n%s", line, r.stderr)
		}
	}

	// From elsewhere: the commands carry --base, and work as printed.
	other := t.TempDir()
	r = vmIn(t, other, baseEnv(), "run", ok, "--base", p.base, "--run-id", "there")
	want(t, r, 0)
	if !r.has("INFO: Next: smithvm status there --base " + p.base) {
		t.Errorf("stderr lacks the status command with --base:\n%s", r.stderr)
	}
	next := printedCommand(t, r, `INFO: Next: (.*)`)
	if s := vmIn(t, other, baseEnv(), next[1:]...); s.code != 0 || !strings.Contains(s.stdout, "completed") {
		t.Errorf("%v as printed: exit %d\n%s%s", next, s.code, s.stdout, s.stderr)
	}

	r = vmIn(t, other, baseEnv(), "run", fail, "--base", p.base, "--run-id", "broken")
	want(t, r, 1)
	if !r.has("INFO: Resume with 'smithvm resume broken --base " + p.base + "' once the cause is fixed.") {
		t.Errorf("stderr lacks the resume command with --base:\n%s", r.stderr)
	}
	resume := printedCommand(t, r, `INFO: Resume with '(.*)' once the cause is fixed\.`)
	if s := vmIn(t, other, baseEnv(), resume[1:]...); s.code != 1 || !strings.Contains(s.stderr, "Step 'Boom' starting") {
		t.Errorf("%v as printed: exit %d, want the step run again and fail (1)\n%s", resume, s.code, s.stderr)
	}
}

// TestFindBase: status and resume started from another directory find the
// run's BASE among the recent bases when the id is unique there, and say
// exactly what to pass when it is not.
func TestFindBase(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "XDG_CACHE_HOME=" + cache}
	a, b := newProj(t), newProj(t)
	fail := a.write("fail.yaml", workflow("boom.yaml"))
	want(t, vmIn(t, a.base, env, "run", fail, "--run-id", "r1"), 1)
	want(t, vmIn(t, b.base, env, "run", b.write("ok.yaml", okFlow), "--run-id", "r2"), 0)
	index, err := os.ReadFile(filepath.Join(cache, "smith", "bases"))
	if err != nil || string(index) != a.base+"\n"+b.base+"\n" {
		t.Fatalf("the index of recent bases = %q (%v), want A then B", index, err)
	}

	elsewhere := t.TempDir()
	r := vmIn(t, elsewhere, env, "status", "r1")
	want(t, r, 0)
	if !r.has("INFO: Found run r1 under "+a.base+".") || !strings.Contains(r.stdout, "failed") {
		t.Errorf("status r1 from elsewhere: want it found under A:\n%s%s", r.stdout, r.stderr)
	}
	r = vmIn(t, elsewhere, env, "resume", "r1")
	if r.code != 1 || !strings.Contains(r.stderr, "Step 'Boom' starting") {
		t.Errorf("resume r1 from elsewhere: exit %d, want the run resumed (and failing again, 1)\n%s", r.code, r.stderr)
	}

	r = vmIn(t, elsewhere, env, "status", "nope")
	want(t, r, 2)
	if !strings.Contains(r.stderr, "E_STATE_NOT_FOUND: no run 'nope' under "+elsewhere) || !strings.Contains(r.stderr, "pass --base DIR") {
		t.Errorf("status of an unknown id: want what to pass:\n%s", r.stderr)
	}

	// The same id under two bases: ambiguous.
	if err := os.CopyFS(filepath.Join(b.base, ".orchestrator", "runs", "r1"), os.DirFS(a.runRoot("r1"))); err != nil {
		t.Fatal(err)
	}
	r = vmIn(t, elsewhere, env, "status", "r1")
	want(t, r, 2)
	for _, s := range []string{"smithvm status: E_USAGE: run 'r1' exists under 2 recent bases; pass one with --base:", "  --base " + a.base, "  --base " + b.base} {
		if !r.has(s) {
			t.Errorf("ambiguous id: stderr lacks %q:\n%s", s, r.stderr)
		}
	}
}

var okFlow = workflow("hello.yaml")
