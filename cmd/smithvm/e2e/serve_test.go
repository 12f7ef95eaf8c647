package e2e

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestServeCLI: the flags of smithvm serve; a non-loopback address without
// a token is refused with E_SERVE_NO_TOKEN (exit 2), with --token or
// SMITH_SERVE_TOKEN it starts.
func TestServeCLI(t *testing.T) {
	p := newProj(t)
	tests := []struct {
		name   string
		env    []string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"help", nil, []string{"serve", "--help"}, 0, "--token T", ""},
		{"any interface without token", nil, []string{"serve", "--addr", "0.0.0.0:0"}, 2, "", "smithvm serve: E_SERVE_NO_TOKEN: --addr 0.0.0.0:0 is not a loopback address"},
		{"empty host without token", nil, []string{"serve", "--addr", ":0"}, 2, "", "E_SERVE_NO_TOKEN"},
		{"bad address", nil, []string{"serve", "--addr", "nonsense"}, 2, "", "smithvm serve: E_USAGE: --addr nonsense"},
		{"no port", nil, []string{"serve", "--addr", "localhost"}, 2, "", "smithvm serve: E_USAGE: --addr localhost"},
		{"extra argument", nil, []string{"serve", "x"}, 2, "", "want 0 argument(s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := p.vmEnv(baseEnv(tt.env...), tt.args...)
			if r.code != tt.code || !strings.Contains(r.stdout, tt.stdout) || !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("smithvm %v = %d\nstdout %q\nstderr %q\nwant %d, stdout with %q, stderr with %q", tt.args, r.code, r.stdout, r.stderr, tt.code, tt.stdout, tt.stderr)
			}
		})
	}
	// With a token (flag or environment) any address is served, and every
	// request needs the token.
	for _, how := range [][]string{{"--token", "t0k3n"}, nil} {
		args := append([]string{"--addr", "0.0.0.0:0"}, how...)
		ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
		cmd := p.command(ctx, baseEnv("SMITH_SERVE_TOKEN=t0k3n"), append([]string{"serve", "--base", p.base}, args...)...)
		out, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		stopOnFailure(t, cmd, cancel)
		buf := make([]byte, 4096)
		n, _ := io.ReadAtLeast(out, buf, 10)
		line := string(buf[:n])
		i := strings.Index(line, "http://")
		if i < 0 {
			t.Fatalf("serve %v printed %q", args, line)
		}
		port := strings.TrimSuffix(strings.Fields(line[i:])[0], "/")
		port = port[strings.LastIndex(port, ":")+1:]
		url := "http://127.0.0.1:" + port + "/api/runs"
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "Bearer t0k3n")
		resp2, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp2.Body.Close()
		if resp.StatusCode != 401 || resp2.StatusCode != 200 {
			t.Errorf("serve %v: without token %d (want 401), with token %d (want 200)", args, resp.StatusCode, resp2.StatusCode)
		}
		cmd.Process.Signal(os.Interrupt)
		if err := cmd.Wait(); err != nil {
			t.Errorf("serve %v after SIGINT: %v", args, err)
		}
		cancel()
	}
}

// TestServeAPIMatchesCLI: /api/runs/ID is the state as `status --json`
// prints it and /api/runs/ID/graph the DOT of `smithvm graph`.
func TestServeAPIMatchesCLI(t *testing.T) {
	p := newProj(t)
	p.write("review.yaml", strings.Replace(serveFlow, "wait:WS/release", "sleep:0", 1))
	if r := p.vm("run", "review.yaml", "--run-id", "api-1"); r.code != 0 {
		t.Fatalf("run: %d\n%s", r.code, r.stderr)
	}
	writeAsk(p)
	if r := p.vm("run", "ask.json", "--run-id", "api-2"); r.code != 4 {
		t.Fatalf("run ask: %d\n%s", r.code, r.stderr)
	}
	srv := serveRuns(t, p.base)
	fetch := func(path string) string {
		t.Helper()
		resp, err := http.Get(srv.url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s = %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	for _, id := range []string{"api-1", "api-2"} {
		if got, want := fetch("/api/runs/"+id), p.vm("status", id, "--json").stdout; got != want {
			t.Errorf("/api/runs/%s differs from status --json:\n%s\nwant\n%s", id, got, want)
		}
		if got, want := fetch("/api/runs/"+id+"/graph"), p.vm("graph", id).stdout; got != want {
			t.Errorf("/api/runs/%s/graph differs from smithvm graph:\n%s\nwant\n%s", id, got, want)
		}
	}
	list := fetch("/api/runs")
	if !strings.Contains(list, `"run_id": "api-1"`) || !strings.Contains(list, `"run_id": "api-2"`) {
		t.Errorf("/api/runs = %s, want both runs", list)
	}
}

// TestServeSecrets: a run whose steps print a secret on stdout and stderr
// (some of it spilled to a file) and into an output_file; nothing the
// viewer serves contains the value, whether or not the server's own
// environment has it. A file a step writes itself is masked when the
// server's environment has the secret, or the value of a preset's key
// variable (ANTHROPIC_API_KEY), masked like a secret everywhere.
func TestServeSecrets(t *testing.T) {
	const secret, presetKey = "s3cr3t-VALUE-0815", "sk-ant-serve-PRESET-42"
	p := newProj(t)
	p.write("secrets.yaml", workflow("serve_secrets.yaml")) // its Leak step writes the secret
	if r := p.vmEnv(baseEnv("MY_KEY="+secret), "run", "secrets.yaml", "--run-id", "sec-1"); r.code != 0 {
		t.Fatalf("run: %d\n%s", r.code, r.stderr)
	}
	for _, env := range [][]string{nil, {"MY_KEY=" + secret, "ANTHROPIC_API_KEY=" + presetKey}} {
		ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
		cmd := p.command(ctx, baseEnv(env...), "serve", "--base", p.base, "--addr", "127.0.0.1:0")
		out, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		stopOnFailure(t, cmd, cancel)
		buf := make([]byte, 4096)
		n, _ := io.ReadAtLeast(out, buf, 10)
		line := string(buf[:n])
		i := strings.Index(line, "http://")
		if i < 0 {
			t.Fatalf("serve printed %q", line)
		}
		base := strings.TrimSuffix(strings.Fields(line[i:])[0], "/")
		paths := []string{"/api/runs/sec-1", "/api/runs/sec-1/view", "/api/runs/sec-1/steps/Leak/stdout", "/api/runs/sec-1/steps/Leak/stderr",
			"/api/runs/sec-1/steps/Key/stdout", "/api/runs/sec-1/steps/Key/files/key.txt", "/api/runs/sec-1/events",
			"/api/runs", "/api/runs/sec-1/live", "/api/runs/sec-1/graph"}
		if env != nil {
			// A file the step wrote itself holds what it wrote; only a server
			// that knows the value can mask it.
			paths = append(paths, "/api/runs/sec-1/steps/Leak/files/own.txt", "/api/runs/sec-1/steps/Leak/files/preset.txt")
		}
		for _, path := range paths {
			rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
			req, _ := http.NewRequestWithContext(rctx, "GET", base+path, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var body []byte
			if strings.HasSuffix(path, "/events") {
				// The stream stays open: read it up to the run's last event.
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					body = append(append(body, sc.Bytes()...), '\n')
					if strings.Contains(sc.Text(), `"event":"run_completed"`) {
						break
					}
				}
			} else {
				body, _ = io.ReadAll(resp.Body)
			}
			resp.Body.Close()
			rcancel()
			if strings.HasSuffix(path, "/events") && !strings.Contains(string(body), "run_completed") {
				t.Errorf("events stream (server env %v) ended before run_completed:\n%s", env, body)
			}
			if resp.StatusCode != 200 || strings.Contains(string(body), secret) || strings.Contains(string(body), presetKey) {
				t.Errorf("GET %s (server env %v) = %d, shows the secret: %v, the preset's key: %v", path, env, resp.StatusCode,
					strings.Contains(string(body), secret), strings.Contains(string(body), presetKey))
			}
			if strings.Contains(path, "/files/") && strings.TrimSpace(string(body)) != "***" {
				t.Errorf("output file served as %q, want ***", body)
			}
		}
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		cancel()
	}
}

// stopOnFailure makes sure that a smithvm serve the test started and stops
// itself (SIGINT, then Wait) is stopped and waited for also when the test
// ends before that, on a failure: before the cleanups remove BASE, and
// before cancel (its command's context, whose end kills it).
func stopOnFailure(t *testing.T, cmd *exec.Cmd, cancel func()) {
	t.Cleanup(func() {
		if cmd.ProcessState == nil { // not waited for
			cmd.Process.Signal(os.Interrupt)
			cmd.Wait()
		}
		cancel()
	})
}
