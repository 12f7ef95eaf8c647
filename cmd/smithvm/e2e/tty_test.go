package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// onTerminal runs smithvm args under script(1), so that its stdin and
// stderr are a terminal, feeding input to it. It returns what the terminal
// showed.
func onTerminal(t *testing.T, p *proj, input string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("script"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("script(1) from util-linux is required")
		}
		t.Skip("script(1) not installed")
	}
	// script runs its command line through the shell; the test's paths hold
	// no spaces or quotes (t.TempDir and the built binary).
	line := built.smithvm + " " + strings.Join(args, " ") + " --base " + p.base
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "script", "-qec", line, "/dev/null")
	cmd.Dir = p.base
	cmd.Env = baseEnv("TERM=dumb")
	cmd.Stdin = strings.NewReader(input)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("script %s: %v\n%s", line, err, out.String())
	}
	return out.String()
}

var ttyWorkflow = workflow("tty.yaml")

// TestTerminal: on a terminal smithvm draws a progress line (step i of n,
// elapsed) and asks once before adding .orchestrator/ to .gitignore; the
// piped runs of the other tests see neither.
func TestTerminal(t *testing.T) {
	t.Parallel()
	t.Run("progress line and yes", func(t *testing.T) {
		t.Parallel()
		p := newProj(t)
		p.gitWorkTree()
		wf := p.write("tty.yaml", ttyWorkflow)
		screen := onTerminal(t, p, "y\n", "run", wf)
		if !strings.Contains(screen, "[step 1 of 1] Wait") {
			t.Errorf("terminal shows no progress line [step 1 of 1] Wait:\n%q", screen)
		}
		if !strings.Contains(screen, "Add .orchestrator/ (run state and logs) to .gitignore? [y/N]") {
			t.Errorf("terminal shows no .gitignore question:\n%q", screen)
		}
		if got := p.read(".gitignore"); got != ".orchestrator/\n" {
			t.Errorf(".gitignore after answering y = %q, want %q", got, ".orchestrator/\n")
		}
		if !strings.Contains(screen, "INFO: Step 'Wait' completed successfully in") {
			t.Errorf("terminal lacks the completion line:\n%q", screen)
		}
	})
	t.Run("loop steps count once", func(t *testing.T) {
		t.Parallel()
		p := newProj(t)
		p.write(".gitignore", ".orchestrator/\n")
		wf := p.write("loop.yaml", workflow("terminal.yaml"))
		screen := onTerminal(t, p, "", "run", wf)
		re := regexp.MustCompile(`\[step (\d+) of (\d+)\]`)
		all := re.FindAllStringSubmatch(screen, -1)
		if len(all) == 0 {
			t.Fatalf("terminal shows no progress line:\n%q", screen)
		}
		for _, m := range all {
			i, _ := strconv.Atoi(m[1])
			n, _ := strconv.Atoi(m[2])
			if i > n || n != 2 {
				t.Errorf("progress %q: want i <= n and n = 2 (two steps)", m[0])
			}
		}
	})
	t.Run("live last line of output", func(t *testing.T) {
		t.Parallel()
		p := newProj(t)
		p.write(".gitignore", ".orchestrator/\n")
		wf := p.write("out.yaml", workflow("terminal_out.yaml"))
		screen := onTerminal(t, p, "", "run", wf)
		if !regexp.MustCompile(`\[step 1 of 2\] Compile \d+\.\ds \| compiling widgets`).MatchString(screen) {
			t.Errorf("the progress line lacks the step's last line of output:\n%q", screen)
		}
		if strings.Contains(screen, "\x1b[2J") || strings.Contains(screen, "\x1b[31m") {
			t.Errorf("the step's escape sequences reached the terminal:\n%q", screen)
		}
		if regexp.MustCompile(`\[step 2 of 2\] Done [^\r\n]*compiling`).MatchString(screen) {
			t.Errorf("the next step's progress line shows the previous step's output:\n%q", screen)
		}
		// Not a terminal: no progress, and without -v no step output.
		r := p.vm("run", wf)
		want(t, r, 0)
		if strings.Contains(r.stderr, "compiling widgets") || strings.Contains(r.stderr, "[step ") || strings.Contains(r.stderr, "\r") {
			t.Errorf("piped stderr has progress or step output:\n%q", r.stderr)
		}
	})
	t.Run("no", func(t *testing.T) {
		t.Parallel()
		p := newProj(t)
		p.gitWorkTree()
		p.write(".gitignore", "bin/\n")
		wf := p.write("tty.yaml", ttyWorkflow)
		screen := onTerminal(t, p, "n\n", "run", wf)
		if !strings.Contains(screen, "to .gitignore? [y/N]") {
			t.Errorf("terminal shows no .gitignore question:\n%q", screen)
		}
		if got := p.read(".gitignore"); got != "bin/\n" {
			t.Errorf(".gitignore after answering n = %q, want it unchanged", got)
		}
		// Asked once: the second run in this BASE does not ask again.
		screen = onTerminal(t, p, "", "run", wf)
		if strings.Contains(screen, ".gitignore?") {
			t.Errorf("second run asked again:\n%q", screen)
		}
	})
}
