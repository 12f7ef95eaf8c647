package e2e

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestProcess covers what happens to processes: a smithvm killed by SIGKILL
// or interrupted by SIGINT mid-step, a huge stdout, and the child's exact
// environment (CONTRACT 3.5 and 6).
func TestProcess(t *testing.T) {
	t.Parallel()

	t.Run("kill -9 during a step, then resume", func(t *testing.T) {
		t.Parallel()
		p := newProj(t)
		wf := p.write("five.yaml", workflow("process.yaml"))
		run := p.start("run", wf, "--run-id", "killed")
		child := pidIn(t, filepath.Join(p.ws, "s3.pid"))
		if err := run.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if r := run.wait(t); r.code != 128+int(syscall.SIGKILL) {
			t.Fatalf("smithvm ended with %d, want death by SIGKILL", r.code)
		}
		// The step's process dies with smithvm (its parent-death signal).
		if !gone(child, 5*time.Second) {
			syscall.Kill(child, syscall.SIGKILL)
			t.Fatalf("the step %d outlived the smithvm killed under it", child)
		}

		first := p.start("resume", "killed")
		pidIn(t, filepath.Join(p.ws, "s4.pid"))
		second := p.vm("resume", "killed")
		want(t, second, 2)
		if !strings.Contains(second.stderr, "E_RUN_LOCKED") {
			t.Errorf("a second resume: stderr lacks E_RUN_LOCKED:\n%s", second.stderr)
		}
		p.write("workspace/s4.go", "")
		r := first.wait(t)
		want(t, r, 0)
		for _, tt := range []struct {
			file string
			want int
		}{{"s1.cnt", 1}, {"s2.cnt", 1}, {"s3.cnt", 2}, {"s4.cnt", 1}, {"s5.cnt", 1}} {
			if got := p.count(tt.file); got != tt.want {
				t.Errorf("%s = %d runs, want %d", tt.file, got, tt.want)
			}
		}
		checkEvents(t, p.events("killed"))
		st := p.state("killed")
		if st.Status != "completed" {
			t.Errorf("status = %q, want completed", st.Status)
		}
		for _, s := range []string{"S1", "S2", "S3", "S4", "S5"} {
			if got := st.Steps[s].Status; got != "completed" {
				t.Errorf("steps.%s.status = %q, want completed", s, got)
			}
		}
	})

	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String()+" stops the step and saves the state", func(t *testing.T) {
			t.Parallel()
			p := newProj(t)
			wf := p.write("int.yaml", workflow("process_int.yaml"))
			run := p.start("run", wf, "--run-id", "int")
			step := pidIn(t, filepath.Join(p.ws, "long.pid"))
			grandchild := pidIn(t, filepath.Join(p.ws, "gc.pid"))
			if err := run.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			r := run.wait(t)
			want(t, r, 130)
			for _, pid := range []int{step, grandchild} {
				if !gone(pid, 5*time.Second) {
					t.Errorf("process %d of the step still runs after %s", pid, sig)
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			st := p.state("int")
			if st.Status != "interrupted" || st.CurrentStep != "Long" {
				t.Errorf("state = status %q current_step %q, want interrupted Long", st.Status, st.CurrentStep)
			}
			r = p.vm("resume", "int")
			want(t, r, 0)
			if a, b, c := p.count("before.cnt"), p.count("long.cnt"), p.count("after.cnt"); a != 1 || b != 2 || c != 1 {
				t.Errorf("runs: Before %d Long %d After %d, want 1 2 1", a, b, c)
			}
			checkEvents(t, p.events("int"))
			if st := p.state("int"); st.Status != "completed" {
				t.Errorf("after resume: status %q, want completed", st.Status)
			}
		})
	}

	t.Run("-v streams output live, secrets masked", func(t *testing.T) {
		t.Parallel()
		const secret = "live-SECRET-value-0815"
		p := newProj(t)
		wf := p.write("live.yaml", workflow("process_live.yaml"))
		run := p.startEnv(baseEnv("LIVE_KEY="+secret), "run", wf, "-v")
		// The step waits for talk.go: what it printed so far must be shown now.
		waitFor(t, 20*time.Second, "the step's output on the console while it runs", func() bool {
			return strings.Contains(run.stderr.String(), "first line\n***\nlive!\n")
		})
		p.write("workspace/talk.go", "")
		r := run.wait(t)
		want(t, r, 0)
		if strings.Contains(r.stderr, secret) || !strings.Contains(r.stderr, "live!\nafter\n") {
			t.Errorf("-v output:\n%s", r.stderr)
		}
	})

	t.Run("3 MB of stdout spills", func(t *testing.T) {
		t.Parallel()
		const size = 3 << 20
		p := newProj(t)
		wf := p.write("big.yaml", workflow("process_big.yaml"))
		r := p.vm("run", wf, "--run-id", "big")
		want(t, r, 0)
		spill := filepath.Join(p.runRoot("big"), "logs", "Big-stdout.log")
		data, err := os.ReadFile(spill)
		if err != nil {
			t.Fatalf("spill file: %v", err)
		}
		if len(data) != size {
			t.Errorf("spill file has %d bytes, want %d", len(data), size)
		}
		s := p.state("big").Steps["Big"]
		if want := string(data[:8192]) + "\n[truncated]"; s.Output != want {
			t.Errorf("steps.Big.output has %d bytes ending %q, want the first 8 KiB and %q", len(s.Output), s.Output[max(0, len(s.Output)-20):], "\n[truncated]")
		}
		if !s.Truncated || s.SpillStdoutPath != spill || !filepath.IsAbs(s.SpillStdoutPath) {
			t.Errorf("steps.Big = truncated %v spill_stdout_path %q, want true %q", s.Truncated, s.SpillStdoutPath, spill)
		}
		out, err := os.ReadFile(filepath.Join(p.ws, "artifacts", "Big", "big.txt"))
		if err != nil || len(out) != size || string(out) != string(data) {
			t.Errorf("output_file has %d bytes (err %v), want all %d", len(out), err, size)
		}
	})

	t.Run("the child's environment is exactly the allowlist", func(t *testing.T) {
		t.Parallel()
		p := newProj(t)
		wf := p.write("env.yaml", workflow("process_env.yaml"))
		env := baseEnv("LANG=C.UTF-8", "TZ=UTC", "CANARY_SMITH=leak", "ALLOWED_X=x", "SECRET_K=sk-value", "SECRET_OTHER=so-value", "GOFLAGS=-v")
		r := p.vmEnv(env, "run", wf, "--run-id", "env")
		want(t, r, 0)
		st := p.state("env")
		for _, tt := range []struct {
			step string
			want []string
		}{
			{"All", []string{"ALLOWED_X", "HOME", "LANG", "PATH", "SECRET_K", "SECRET_OTHER", "STEP_V", "TZ"}},
			{"Subset", []string{"ALLOWED_X", "HOME", "LANG", "PATH", "SECRET_OTHER", "TZ"}},
		} {
			var names []string
			for _, l := range strings.Split(st.Steps[tt.step].Output, "\n") {
				if k, _, ok := strings.Cut(l, "="); ok {
					names = append(names, k)
				}
			}
			sort.Strings(names)
			if strings.Join(names, ",") != strings.Join(tt.want, ",") {
				t.Errorf("step %s: the child's environment has %v, want exactly %v", tt.step, names, tt.want)
			}
		}
		if out := st.Steps["All"].Output; !strings.Contains(out, "STEP_V=step value\n") || !strings.Contains(out, "ALLOWED_X=x\n") {
			t.Errorf("step All: environment values wrong:\n%s", out)
		}
	})

	t.Run("the child gets no file smithvm inherited", func(t *testing.T) {
		t.Parallel()
		if _, err := os.Stat("/proc/self/fd"); err != nil {
			t.Skip("no /proc/self/fd")
		}
		p := newProj(t)
		// readlink succeeds only if fd 3, smithvm's inherited pipe, reached the step.
		wf := p.write("fds.yaml", `version: "1.0"
name: fds
steps:
  - name: Fds
    command: ["readlink", "/proc/self/fd/3"]
    on: {success: {error: "the step inherited smithvm's fd 3"}, failure: {goto: _end}}
`)
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		defer w.Close()
		ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
		defer cancel()
		cmd := p.command(ctx, baseEnv(), "run", wf, "--base", p.base)
		cmd.ExtraFiles = []*os.File{w} // fd 3 of smithvm, not close-on-exec
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("smithvm: %v\n%s", err, out)
		}
	})
}
