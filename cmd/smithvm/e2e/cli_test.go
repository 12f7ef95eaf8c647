package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// failWorkflow is a one-step workflow whose step fails.
var failWorkflow = workflow("fail.yaml")

// TestExitCodes, with the scripts testdata/script/exit*.txtar
// (TestScripts), is every exit status of CONTRACT section 11 (130 is in
// TestProcess). The case here needs Go: a lock held by the test.
func TestExitCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// setup writes the files and returns smithvm's arguments (--base is
		// added).
		setup func(p *proj) []string
		env   []string
		code  int
		// stderr must contain this.
		stderr string
		// after, if set, checks more.
		after func(t *testing.T, p *proj, r result)
	}{
		{"2 run locked", func(p *proj) []string {
			r := p.vm("run", p.write("f.yaml", failWorkflow), "--run-id", "l1")
			want(p.t, r, 1)
			f, err := os.OpenFile(filepath.Join(p.runRoot("l1"), "lock"), os.O_RDWR|os.O_CREATE, 0o644)
			if err != nil {
				p.t.Fatal(err)
			}
			p.t.Cleanup(func() { f.Close() })
			if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
				p.t.Fatal(err)
			}
			return []string{"resume", "l1"}
		}, nil, 2, "E_RUN_LOCKED", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newProj(t)
			args := tt.setup(p)
			r := p.vmEnv(baseEnv(tt.env...), args...)
			want(t, r, tt.code)
			if !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("smithvm %s: stderr lacks %q:\n%s", strings.Join(args, " "), tt.stderr, clip(r.stderr))
			}
			if tt.after != nil {
				tt.after(t, p, r)
			}
		})
	}

}

// TestCommands covers --help and watch (testdata/script/list_status_graph.txtar
// and run_smbc_built_by_smithc.txtar have list, status, graph and .smbc).
func TestCommands(t *testing.T) {
	t.Parallel()

	t.Run("--help of every command", func(t *testing.T) {
		t.Parallel()
		p := newProj(t)
		for _, args := range [][]string{
			{"--help"}, {"help"}, {"run", "--help"}, {"resume", "--help"}, {"run-step", "--help"}, {"watch", "--help"},
			{"list", "--help"}, {"status", "--help"}, {"graph", "--help"}, {"clean", "--help"},
		} {
			cmd := p.command(t.Context(), baseEnv(), args...)
			out, err := cmd.Output()
			if code := exitCode(t, err); code != 0 || !strings.Contains(string(out), "smithvm") {
				t.Errorf("smithvm %s: exit %d, stdout %q; want 0 and a usage", strings.Join(args, " "), code, out)
			}
		}
	})

	t.Run("watch", func(t *testing.T) {
		t.Parallel()
		p := newProj(t)
		p.write("workspace/src/input.txt", "v1\n")
		wf := p.write("w.yaml", workflow("watch.yaml"))
		w := p.start("watch", wf)
		completed := func() int { return strings.Count(w.stderr.String(), " completed.\n") }
		waitFor(t, 20*time.Second, "the first run", func() bool { return completed() == 1 })
		waitFor(t, 5*time.Second, "the watch line", func() bool { return strings.Contains(w.stderr.String(), "Watching") })
		p.write("workspace/src/input.txt", "v2, longer\n")
		waitFor(t, 20*time.Second, "a run after a change in WORKSPACE", func() bool { return completed() == 2 })
		waitFor(t, 5*time.Second, "the watch line", func() bool { return strings.Count(w.stderr.String(), "Watching") == 2 })
		p.write("workspace/artifacts/Build/other.txt", "ignored\n")
		time.Sleep(1500 * time.Millisecond)
		if n := completed(); n != 2 {
			t.Errorf("a change under WORKSPACE/artifacts started a run: %d runs, want 2", n)
		}
		if err := w.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		r := w.wait(t)
		if r.code != 0 && r.code != 130 {
			t.Errorf("watch after SIGINT: exit %d, want 0 or 130\n%s", r.code, r.stderr)
		}
		if n := p.count("build.cnt"); n != 2 {
			t.Errorf("Build ran %d times, want 2", n)
		}
	})
}
