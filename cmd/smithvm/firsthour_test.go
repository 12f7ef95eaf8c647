package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFirstHourErrors: every error a newcomer meets in the first hour has a
// message that names the problem and says what to do next.
func TestFirstHourErrors(t *testing.T) {
	tests := []struct {
		name string
		file string // workflow text ("" for none), written to BASE/flow.yaml
		args []string
		env  []string
		code int
		want []string          // substrings of stderr, each required
		fake map[string]string // programs put first on PATH: name to script
	}{
		{
			name: "wrong path",
			args: []string{"run", "flw.yaml"},
			file: okFlow,
			code: 2,
			want: []string{"flw.yaml: error: E_PARSE: cannot read file: no such file or directory (did you mean 'flow.yaml'?)"},
		},
		{
			name: "wrong directory",
			args: []string{"run", "nowhere/flow.yaml"},
			code: 2,
			want: []string{"the directory 'nowhere' does not exist either: check the path"},
		},
		{
			name: "typo in a key",
			args: []string{"run", "flow.yaml"},
			file: strings.Replace(okFlow, "success:", "sucess:", 1),
			code: 2,
			want: []string{"E_SCHEMA: unknown key 'sucess' in on of step 'Hello' (did you mean 'success'?)"},
		},
		{
			name: "missing secret",
			args: []string{"run", "flow.yaml"},
			file: "version: \"1.0\"\nname: t\nsecrets: [SMITH_TEST_KEY]\n" + okSteps,
			code: 2,
			want: []string{"E_SECRET_MISSING: secret 'SMITH_TEST_KEY' is not set in the environment: export it before running"},
		},
		{
			name: "missing CLI binary",
			args: []string{"run", "flow.yaml"},
			file: "version: \"1.0\"\nname: t\nsteps:\n  - name: Ask\n    provider: claude\n    prompt: hi\n    on: {success: {end: true}, failure: {error: \"ask failed\"}}\n",
			env:  []string{"PATH=/nonexistent", "HOME=/nonexistent"},
			code: 1,
			want: []string{"command 'claude' not found: it is not on PATH; install Claude Code's CLI: npm install -g @anthropic-ai/claude-code"},
		},
		{
			// The CLI's own words are passed on whole, naming the provider.
			name: "CLI not logged in",
			args: []string{"run", "flow.yaml"},
			file: "version: \"1.0\"\nname: t\nsteps:\n  - name: Ask\n    provider: claude\n    prompt: hi\n    on: {success: {end: true}, failure: {error: \"ask failed\"}}\n",
			fake: map[string]string{"claude": "#!/bin/sh\ncat >/dev/null\necho '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":true,\"result\":\"Invalid API key · Please run /login\"}'\nexit 1\n"},
			code: 1,
			want: []string{"ERROR: Step 'Ask' failed: ", "claude", "Please run /login", "INFO: Resume with 'smithvm resume "},
		},
		{
			name: "shell variable not escaped",
			args: []string{"run", "flow.yaml"},
			file: "version: \"1.0\"\nname: t\nsteps:\n  - name: Sh\n    command: [\"sh\", \"-c\", \"echo ${HOME}\"]\n    on: {success: {end: true}, failure: {error: \"x\"}}\n",
			code: 2,
			want: []string{"E_VAR_MISSING: unknown variable 'HOME': Smith substitutes ${...} itself; for a shell variable write $${HOME}"},
		},
		{
			name: "shell default",
			args: []string{"run", "flow.yaml"},
			file: "version: \"1.0\"\nname: t\nsteps:\n  - name: Sh\n    command: [\"sh\", \"-c\", \"echo ${NAME:-world}\"]\n    on: {success: {end: true}, failure: {error: \"x\"}}\n",
			code: 2,
			want: []string{"E_PARSE: malformed reference '${NAME:-world}'", "this looks like shell syntax, which Smith does not evaluate: to leave it to a shell write $${NAME:-world}"},
		},
		{
			name: "unknown run id",
			args: []string{"status", "no-such-run"},
			code: 2,
			want: []string{"E_STATE_NOT_FOUND", "smithvm list"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProj(t)
			if tt.file != "" {
				p.write("flow.yaml", tt.file)
			}
			env := baseEnv()
			if tt.env != nil {
				env = append(tt.env, testCacheEnv())
			}
			if tt.fake != nil {
				bin := t.TempDir()
				for name, script := range tt.fake {
					if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
						t.Fatal(err)
					}
				}
				env = baseEnv()
				env[0] = "PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")
			}
			r := p.vmEnv(env, tt.args...)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d\n%s", r.code, tt.code, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
		})
	}
}

const okSteps = `steps:
  - name: Hello
    command: ["echo", "hello"]
    on: {success: {end: true}, failure: {error: "echo failed"}}
`

const okFlow = "version: \"1.0\"\nname: t\n" + okSteps
