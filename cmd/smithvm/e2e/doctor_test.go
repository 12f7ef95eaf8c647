package e2e

// smithvm doctor with the real CLIs (CONTRACT 5): installed (and not),
// logged in (a user's setup) and not, --ping against the fake model server,
// and the providers of a workflow alone.

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"smith/internal/fakemodel"
)

// doctor runs smithvm doctor args... with env.
func (p *cliProj) doctor(env []string, args ...string) result {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := p.command(ctx, env, append([]string{"doctor"}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return result{code: exitCode(p.t, err), stdout: out.String(), stderr: errb.String()}
}

// doctorLine returns the lines of out that start with mark and name preset
// and check.
func doctorLine(out, mark, preset, check string) string {
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= 3 && f[0] == mark && f[1] == preset && f[2] == check {
			return l
		}
	}
	return ""
}

// TestDoctorReady: with the user's setup (keys in the environment, their
// settings and model provider in HOME) every check passes, exit 0; --ping
// sends one request through each preset and prints its reply and tokens.
func TestDoctorReady(t *testing.T) {
	t.Parallel()
	needCLIs(t, "claude", "gemini", "codex")
	p := newCLIProj(t, modeUser, fakemodel.Rule{Match: "pong", Reply: fakemodel.Reply{Text: "pong"}})
	r := p.doctor(p.env(), "--ping")
	p.noSurvivors()
	if r.code != 0 {
		t.Fatalf("doctor: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	versions := map[string]string{"claude": "2.1.330", "gemini": "0.61.0", "codex": "0.169.0"}
	for _, c := range cliCases {
		if l := doctorLine(r.stdout, "ok", c.name, "installed"); !strings.Contains(l, "version "+versions[c.name]+" (the version the presets were tested with)") {
			t.Errorf("%s installed: %q\n%s", c.name, l, r.stdout)
		}
		if l := doctorLine(r.stdout, "ok", c.name, "login"); l == "" {
			t.Errorf("%s login: no ok line\n%s", c.name, r.stdout)
		}
		// The user's settings choose each CLI's model (gemini would
		// otherwise ask a small model to route the request first).
		want, requests := `replied "pong", 15 tokens`, 1
		if l := doctorLine(r.stdout, "ok", c.name, "ping"); !strings.Contains(l, want) {
			t.Errorf("%s ping: %q, want %q\n%s", c.name, l, want, r.stdout)
		}
		if n := len(p.requests(c.proto)); n != requests {
			t.Errorf("%s: %d requests for one ping, want %d", c.name, n, requests)
		}
	}
	if strings.Contains(r.stdout, "fake-key-") {
		t.Errorf("a key was printed:\n%s", r.stdout)
	}
	// The codex line names the key of the user's own model provider.
	if l := doctorLine(r.stdout, "ok", "codex", "login"); !strings.Contains(l, "GATEWAY_API_KEY") {
		t.Errorf("codex login: %q, want the env_key of the user's provider", l)
	}
}

// TestDoctorProblems: a CLI missing from PATH and CLIs with no login and
// no key each get a FAIL line that says what to do; exit 2. With a
// workflow, only the presets it uses are checked, in the home it gives
// them.
func TestDoctorProblems(t *testing.T) {
	t.Parallel()
	needCLIs(t, "claude", "gemini", "codex")
	p := newCLIProj(t, modeUser)
	empty := t.TempDir()
	// PATH: the CLIs without codex (a folder of links to the other two).
	bin := t.TempDir()
	for _, n := range []string{"claude", "gemini"} {
		if err := os.Symlink(clisDir()+"/"+n, bin+"/"+n); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + empty}
	r := p.doctor(env)
	if r.code != 2 {
		t.Fatalf("doctor: exit %d, want 2\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []struct{ mark, preset, check, text string }{
		{"FAIL", "codex", "installed", "not on PATH; install the Codex CLI: npm install -g @openai/codex"},
		{"FAIL", "claude", "login", "run 'claude' once to log in, or set ANTHROPIC_API_KEY (claude's configuration home: " + empty + "/.claude)"},
		{"FAIL", "gemini", "login", "run 'gemini' once to log in, or set GEMINI_API_KEY (gemini's configuration home: " + empty + "/.gemini)"},
		{"ok", "claude", "installed", "version 2.1.330"},
	} {
		if l := doctorLine(r.stdout, want.mark, want.preset, want.check); !strings.Contains(l, want.text) {
			t.Errorf("%s %s %s: %q, want %q\n%s", want.mark, want.preset, want.check, l, want.text, r.stdout)
		}
	}
	if l := doctorLine(r.stdout, "FAIL", "codex", "login"); l != "" {
		t.Errorf("codex's login was checked though codex is not installed: %q", l)
	}

	// A workflow that uses claude alone, isolated: only claude, and only a
	// key counts there (the user's login is not seen).
	wf := p.put("wf.yaml", workflow("doctor_claude_isolated.yaml"))
	r = p.doctor(env, wf)
	if r.code != 2 || strings.Contains(r.stdout, "gemini") || strings.Contains(r.stdout, "codex") {
		t.Fatalf("doctor wf.yaml: exit %d, want 2 and claude alone\n%s%s", r.code, r.stdout, r.stderr)
	}
	if l := doctorLine(r.stdout, "FAIL", "claude", "login"); !strings.Contains(l, "home: isolated") || !strings.Contains(l, "ANTHROPIC_API_KEY") {
		t.Errorf("claude login (isolated): %q", l)
	}
	r = p.doctor(append(env, "ANTHROPIC_API_KEY=fake-key-claude-0123456789"), wf)
	if r.code != 0 || doctorLine(r.stdout, "ok", "claude", "login") == "" {
		t.Errorf("doctor wf.yaml with a key: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
