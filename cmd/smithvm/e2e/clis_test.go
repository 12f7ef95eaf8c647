package e2e

// End-to-end tests of the claude, gemini and codex presets against the real
// CLIs (the versions pinned in testdata/clis, installed by .ci/run) talking
// to the fake model server (internal/fakemodel) on 127.0.0.1 (CONTRACT 5).
// SMITH_CLIS_BIN names the directory holding the three programs (default
// ~/.cache/smith-clis/node_modules/.bin). Outside CI a missing CLI skips the
// test with how to install it; with CI=true it fails.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"smith/internal/fakemodel"
)

// A cliCase is one agent CLI as the tests point it at the fake server.
type cliCase struct {
	name    string // the preset
	proto   string // the fake server protocol it speaks
	model   string // model: the tests ask for (codex: one without code mode, so it offers exec_command)
	keyVar  string
	baseVar string
	suffix  string // added to the server URL for baseVar
}

var cliCases = []cliCase{
	{"claude", fakemodel.Anthropic, "claude-fake-1", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", ""},
	{"gemini", fakemodel.Gemini, "gemini-2.5-pro", "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL", ""},
	{"codex", fakemodel.OpenAI, "gpt-fake", "OPENAI_API_KEY", "OPENAI_BASE_URL", "/v1"},
}

// next is the CLI a fallback hands over to.
func (c cliCase) next() cliCase {
	for i, x := range cliCases {
		if x.name == c.name {
			return cliCases[(i+1)%len(cliCases)]
		}
	}
	panic(c.name)
}

// clisDir is where the CLIs are installed.
func clisDir() string {
	if d := os.Getenv("SMITH_CLIS_BIN"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "smith-clis", "node_modules", ".bin")
}

// needCLIs skips (fails with CI=true) unless the named CLIs and node are
// installed.
func needCLIs(t *testing.T, names ...string) {
	t.Helper()
	dir := clisDir()
	var missing []string
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			missing = append(missing, n)
		}
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing = append(missing, "node")
	}
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("%s not installed in %s (SMITH_CLIS_BIN); install the pinned CLIs with: "+
		"mkdir -p ~/.cache/smith-clis && cp testdata/clis/package.json testdata/clis/package-lock.json ~/.cache/smith-clis/ && "+
		"(cd ~/.cache/smith-clis && npm ci)   (node and npm: apt-get install nodejs npm), or run .ci/run",
		strings.Join(missing, ", "), dir)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// The two ways a preset runs its CLI (CONTRACT 5): with the user's own
// HOME and configuration (the default), and with home: isolated.
const (
	modeUser     = "user"
	modeIsolated = "isolated"
)

var homeModes = []string{modeUser, modeIsolated}

// deadURL is a server nobody answers on: the user's own configuration
// points there in isolated tests, so a run that read it would fail.
const deadURL = "http://127.0.0.1:9"

// A cliProj is a project whose workflows use the real CLIs against a fake
// server of its own, with a HOME set up the way a user sets each CLI up.
type cliProj struct {
	*proj
	srv  *fakemodel.Server
	mode string // modeUser or modeIsolated
	home string // HOME of smithvm and the CLIs: it also marks their processes
}

func newCLIProj(t *testing.T, mode string, rules ...fakemodel.Rule) *cliProj {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := fakemodel.Start(ctx, rules, fakemodel.Options{})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); srv.Close() })
	p := &cliProj{proj: newProj(t), srv: srv, mode: mode, home: t.TempDir()}
	url := srv.URL
	if mode == modeIsolated {
		url = deadURL // the user's setup must not be seen
	}
	userSetup(t, p.home, url)
	return p
}

// userSetup sets the three CLIs up in home the way their users do, all
// talking to the model server at url:
//   - claude: ~/.claude/settings.json, its env block naming the server
//     (the key is ANTHROPIC_API_KEY in the terminal's environment);
//   - gemini: ~/.gemini/settings.json choosing API-key auth and a model
//     (the key and GOOGLE_GEMINI_BASE_URL in the environment);
//   - codex: ~/.codex/config.toml with a model and a model provider of the
//     user's (a gateway) whose key is GATEWAY_API_KEY.
func userSetup(t *testing.T, home, url string) {
	t.Helper()
	files := map[string]string{
		".claude/settings.json": `{"env": {"ANTHROPIC_BASE_URL": "` + url + `"}, "permissions": {"allow": []}}` + "\n",
		".gemini/settings.json": `{"security": {"auth": {"selectedType": "gemini-api-key"}}, "model": {"name": "gemini-2.5-pro"}, "ui": {"theme": "Default"}}` + "\n",
		".codex/config.toml": "model = \"gpt-fake\"\nmodel_provider = \"gateway\"\n\n[model_providers.gateway]\nname = \"Team gateway\"\nbase_url = \"" + url + "/v1\"\n" +
			"env_key = \"GATEWAY_API_KEY\"\nwire_api = \"responses\"\n",
	}
	for rel, text := range files {
		path := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// put writes text to rel (relative to BASE) as it is and returns its
// path (proj.write would expand BASE in ANTHROPIC_BASE_URL).
func (p *cliProj) put(rel, text string) string {
	p.t.Helper()
	path := filepath.Join(p.base, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		p.t.Fatal(err)
	}
	return path
}

// header is a workflow's start (testdata/workflows/clis/header.yaml). It
// has no secrets:, env_allow: or provider env: lines: a preset's own
// variables pass by themselves; in isolated tests each preset's entry says
// home: isolated and nothing else.
func (p *cliProj) header(name string) string {
	return p.fill("header.yaml", map[string]any{"name": name})
}

// workflow is the workflow testdata/workflows/clis/FILE after its header
// (named FILE without .yaml), for preset c and, in a fallback, its second
// preset next: a text/template that says {{.cli}}, {{.model}} and
// {{.next}}.
func (p *cliProj) workflow(file string, c, next cliCase) string {
	return p.header(strings.TrimSuffix(file, ".yaml")) + p.fill(file, map[string]any{"cli": c.name, "model": c.model, "next": next.name})
}

// fill is the template testdata/workflows/clis/FILE filled with data,
// which also says whether the presets run with home: isolated (isolated)
// and names them all (presets).
func (p *cliProj) fill(file string, data map[string]any) string {
	p.t.Helper()
	data["isolated"] = p.mode == modeIsolated
	var presets []string
	for _, c := range cliCases {
		presets = append(presets, c.name)
	}
	data["presets"] = presets
	return fillWorkflow(p.t, "clis/"+file, data)
}

// keys are the fake keys the tests give the CLIs, as a user's terminal
// has them.
func keys() []string {
	var env []string
	for _, c := range cliCases {
		env = append(env, c.keyVar+"=fake-key-"+c.name+"-0123456789")
	}
	return append(env, "GATEWAY_API_KEY=fake-key-gateway-0123456789")
}

// env is smithvm's environment, as a user's terminal has it: PATH with the
// CLIs, the test's HOME, the keys; gemini's server in the environment (its
// settings file cannot name one). With home: isolated the user's
// configuration is not read, so every server comes from the environment.
func (p *cliProj) env() []string {
	env := append([]string{"PATH=" + clisDir() + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + p.home,
		"GOOGLE_GEMINI_BASE_URL=" + p.srv.URL}, keys()...)
	if p.mode == modeIsolated {
		env = append(env, "ANTHROPIC_BASE_URL="+p.srv.URL, "OPENAI_BASE_URL="+p.srv.URL+"/v1")
	}
	return env
}

// run runs smithvm with the CLIs and checks that no CLI process is left.
func (p *cliProj) run(args ...string) result {
	p.t.Helper()
	return p.runWith(p.env(), args...)
}

// runWith runs smithvm with env and checks that no CLI process is left.
func (p *cliProj) runWith(env []string, args ...string) result {
	p.t.Helper()
	r := p.runEnv(env, args...)
	p.noSurvivors()
	return r
}

func (p *cliProj) runEnv(env []string, args ...string) result {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := p.command(ctx, env, append(args, "--base", p.base)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return result{code: exitCode(p.t, err), stdout: out.String(), stderr: errb.String()}
}

// noSurvivors fails when a process of this test (its environment holds the
// test's own HOME) still runs: nothing a step started outlives it.
func (p *cliProj) noSurvivors() {
	p.t.Helper()
	want := []byte("HOME=" + p.home + "\x00")
	// A process killed as its step ended may take a moment to go on a
	// loaded machine: wait up to 10 s for the marked ones to disappear.
	var alive []string
	for deadline := time.Now().Add(10 * time.Second); ; {
		alive = alive[:0]
		procs, _ := filepath.Glob("/proc/[0-9]*/environ")
		for _, f := range procs {
			b, err := os.ReadFile(f)
			if err == nil && bytes.Contains(b, want) {
				cmdline, _ := os.ReadFile(filepath.Join(filepath.Dir(f), "cmdline"))
				alive = append(alive, fmt.Sprintf("process %s (%s)", filepath.Base(filepath.Dir(f)), bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
			}
		}
		if len(alive) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, a := range alive {
		p.t.Errorf("%s outlived its step", a)
	}
}

// eachCLI runs f for every CLI in both home modes, in parallel.
func eachCLI(t *testing.T, f func(t *testing.T, c cliCase, mode string)) {
	for _, c := range cliCases {
		for _, mode := range homeModes {
			t.Run(c.name+"/"+mode, func(t *testing.T) {
				t.Parallel()
				f(t, c, mode)
			})
		}
	}
}

// requests are the server's logged requests of one protocol.
func (p *cliProj) requests(proto string) []fakemodel.Logged {
	var out []fakemodel.Logged
	for _, l := range p.srv.Requests() {
		if l.Protocol == proto {
			out = append(out, l)
		}
	}
	return out
}

// cliState is the part of state.json these tests read.
type cliState struct {
	Status string `json:"status"`
	Stats  struct {
		Tokens int `json:"totalTokensUsed"`
	} `json:"stats"`
	Payload []struct {
		Type    string `json:"type"`
		Content string `json:"content"`
	} `json:"payload"`
	Steps map[string]struct {
		Status    string         `json:"status"`
		ExitCode  int            `json:"exit_code"`
		Output    string         `json:"output"`
		JSON      any            `json:"json"`
		Provider  string         `json:"provider"`
		Attempts  int            `json:"attempts"`
		Visits    int            `json:"visits"`
		Error     *stepErrorJSON `json:"error"`
		Truncated bool           `json:"truncated"`
		Spill     string         `json:"spill_stdout_path"`
	} `json:"steps"`
}

func (p *cliProj) state(r result) cliState {
	p.t.Helper()
	id := r.runID()
	if id == "" {
		p.t.Fatalf("no run id in:\n%s", r.stderr)
	}
	var st cliState
	if err := json.Unmarshal([]byte(p.read(filepath.Join(".orchestrator/runs", id, "state.json"))), &st); err != nil {
		p.t.Fatal(err)
	}
	return st
}

// keysInHome fails when a key was written anywhere under HOME.
func (p *cliProj) keysInHome() {
	p.t.Helper()
	noSecretUnder(p.t, p.home, "fake-key-")
}

// bigPrompt is a prompt of n bytes that starts like an option.
func bigPrompt(tag string, n int) string {
	var b strings.Builder
	b.WriteString("--version -p " + tag + "\n- a markdown list item\n")
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %06d of the long prompt, with words to carry it along\n", i)
	}
	return b.String()
}

// bigReply is a reply of n bytes.
func bigReply(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "reply line %06d: the model keeps talking for a while\n", i)
	}
	return b.String() + "END OF REPLY"
}

func head(s string) string { return s[:min(len(s), 60)] }
func tail(s string) string { return s[max(0, len(s)-60):] }

// TestCLIManifest: an AI block of a workflows.json manifest with no
// secrets, env_allow or provider env reaches the server through the
// user's own setup (claude with a login token instead of a key) or, with
// home: isolated, through the preset's variables alone; the reply reaches
// the payload and the tokens stats.
func TestCLIManifest(t *testing.T) {
	t.Parallel()
	eachCLI(t, func(t *testing.T, c cliCase, mode string) {
		needCLIs(t, c.name)
		p := newCLIProj(t, mode, fakemodel.Rule{Match: "greeting", Reply: fakemodel.Reply{Text: "MANIFEST-REPLY from " + c.name}})
		wf := p.put("workflows.json", p.fill("manifest.json", map[string]any{"cli": c.name, "model": c.model}))
		env := p.env()
		if c.name == "claude" && mode == modeUser {
			// A subscription's login token instead of a key: the user's
			// terminal has CLAUDE_CODE_OAUTH_TOKEN (claude setup-token).
			env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "ANTHROPIC_API_KEY=") })
			env = append(env, "CLAUDE_CODE_OAUTH_TOKEN=fake-oauth-token-0123456789")
		}
		r := p.runWith(env, "run", wf)
		if r.code != 0 {
			t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
		}
		st := p.state(r)
		found := false
		for _, s := range st.Payload {
			if strings.Contains(s.Content, "MANIFEST-REPLY from "+c.name) {
				found = true
			}
		}
		if !found {
			t.Errorf("the reply is not in the payload: %+v", st.Payload)
		}
		if st.Stats.Tokens != 15 {
			t.Errorf("totalTokensUsed = %d, want 15", st.Stats.Tokens)
		}
	})
}

// TestCLIFallback: a 500 is retried, a 429 on the retry too (one request
// per try: the CLI's own retries are off), then the next provider answers,
// with the WARNING line naming the last failure.
func TestCLIFallback(t *testing.T) {
	t.Parallel()
	eachCLI(t, func(t *testing.T, c cliCase, mode string) {
		n := c.next()
		needCLIs(t, c.name, n.name)
		p := newCLIProj(t, mode,
			fakemodel.Rule{Protocol: c.proto, Times: 1, Reply: fakemodel.Reply{Status: 500}},
			fakemodel.Rule{Protocol: c.proto, Reply: fakemodel.Reply{Status: 429}},
			fakemodel.Rule{Protocol: n.proto, Match: "fallback", Reply: fakemodel.Reply{Text: "answered by " + n.name}})
		wf := p.put("wf.yaml", p.workflow("fallback.yaml", c, n))
		r := p.run("run", wf)
		if r.code != 0 {
			t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
		}
		st := p.state(r)
		if s := st.Steps["Ask"]; s.Provider != n.name || s.Output != "answered by "+n.name || s.Attempts != 3 {
			t.Errorf("Ask: provider %q output %q attempts %d, want %s's answer on the third try", s.Provider, s.Output, s.Attempts, n.name)
		}
		if got := len(p.requests(c.proto)); got != 2 {
			t.Errorf("%s made %d requests for 2 tries; its own retries are not off", c.name, got)
		}
		if !r.has("WARNING: Step 'Ask' attempt 1 failed with exit code 1; retrying in 0s.") {
			t.Errorf("the 500 was not retried:\n%s", r.stderr)
		}
		want := fmt.Sprintf("WARNING: Step 'Ask': provider '%s' failed (rate limited by the model server (HTTP 429): ", c.name)
		if !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "; trying '"+n.name+"'.") {
			t.Errorf("no %q ... trying '%s' line in:\n%s", want, n.name, r.stderr)
		}
	})
}

// TestCLIAuthError: a 401 is not retried and the reason on the console says
// which variable to set.
func TestCLIAuthError(t *testing.T) {
	t.Parallel()
	eachCLI(t, func(t *testing.T, c cliCase, mode string) {
		needCLIs(t, c.name)
		p := newCLIProj(t, mode, fakemodel.Rule{Reply: fakemodel.Reply{Status: 401}})
		wf := p.put("wf.yaml", p.workflow("auth.yaml", c, cliCase{}))
		r := p.run("run", wf)
		if r.code != 1 {
			t.Fatalf("run: exit %d, want 1\n%s", r.code, r.stderr)
		}
		if got := len(p.requests(c.proto)); got != 1 {
			t.Errorf("%d requests, want 1 (401 is not retried)", got)
		}
		st := p.state(r)
		if s := st.Steps["Ask"]; s.ExitCode != 2 {
			t.Errorf("Ask exit %d, want 2", s.ExitCode)
		}
		want := "ERROR: Step 'Ask' failed: E_EXEC: provider '" + c.name + "' failed: the model server refused the credentials"
		keyVar := c.keyVar
		if c.name == "codex" && mode == modeUser {
			keyVar = "GATEWAY_API_KEY" // the env_key of the user's own model provider
		}
		if !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "check "+keyVar) {
			t.Errorf("console lacks %q ... check %s:\n%s", want, keyVar, r.stderr)
		}
	})
}

// TestCLIHang: a server that never answers ends at the step timeout (124)
// with every process of the CLI gone.
func TestCLIHang(t *testing.T) {
	t.Parallel()
	eachCLI(t, func(t *testing.T, c cliCase, mode string) {
		needCLIs(t, c.name)
		p := newCLIProj(t, mode, fakemodel.Rule{Reply: fakemodel.Reply{Hang: true}})
		wf := p.put("wf.yaml", p.workflow("hang.yaml", c, cliCase{}))
		r := p.run("run", wf)
		if r.code != 124 {
			t.Fatalf("run: exit %d, want 124\n%s", r.code, r.stderr)
		}
		if st := p.state(r); st.Steps["Ask"].ExitCode != 124 {
			t.Errorf("Ask exit %d, want 124", st.Steps["Ask"].ExitCode)
		}
		// A CLI cut off at the timeout leaves no key behind in the user's
		// home (codex's shell snapshot of its environment, written while
		// it waits for the model, was left there).
		p.keysInHome()
	})
}

// TestCLIWrite: with the default permissions (edit) the agent's file write
// lands in WORKSPACE; with permissions: read it does not, and the step
// fails with exit 2 saying which permission was missing.
func TestCLIWrite(t *testing.T) {
	t.Parallel()
	eachCLI(t, func(t *testing.T, c cliCase, mode string) {
		needCLIs(t, c.name)
		p := newCLIProj(t, mode,
			fakemodel.Rule{Match: "WRITE-ONE", Reply: fakemodel.Reply{WriteFile: &fakemodel.WriteFile{Path: "one.txt", Content: "first file\n"}, Text: "wrote one"}},
			fakemodel.Rule{Match: "WRITE-TWO", Reply: fakemodel.Reply{WriteFile: &fakemodel.WriteFile{Path: "two.txt", Content: "second file\n"}, Text: "wrote two"}})
		p.editWritesReadRefused(t, c, "")
	})
}

// TestCLIFixLoop: a reply that fails validation sends the step round again
// with the failure appended to its prompt; the fixed reply passes.
func TestCLIFixLoop(t *testing.T) {
	t.Parallel()
	eachCLI(t, func(t *testing.T, c cliCase, mode string) {
		needCLIs(t, c.name)
		p := newCLIProj(t, mode,
			fakemodel.Rule{Match: "Output failed validation. Fix this:", Reply: fakemodel.Reply{Text: "Fixed:\n```json\n{\"files\": [\"a.go\"]}\n```"}},
			fakemodel.Rule{Match: "Plan the work", Times: 1, Reply: fakemodel.Reply{Text: "Sure, I will plan it."}})
		wf := p.put("wf.yaml", p.workflow("fix.yaml", c, cliCase{}))
		r := p.run("run", wf)
		if r.code != 0 {
			t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
		}
		st := p.state(r)
		files, _ := st.Steps["Plan"].JSON.(map[string]any)["files"].([]any)
		if len(files) != 1 || files[0] != "a.go" {
			t.Errorf("Plan json = %v, want {files: [a.go]}", st.Steps["Plan"].JSON)
		}
		if n := len(p.requests(c.proto)); n < 2 {
			t.Errorf("%d requests, want the step asked twice", n)
		}
	})
}

// TestCLIRecordReplay: the reply of each real CLI reaches output_file whole
// (200 KB) and tokens reach stats; a 300 KB prompt that starts with
// "--version" reaches the model byte for byte; model: reaches the server;
// a step with both prompt and input_file gives the model both; no key
// lands under HOME. The run, recorded, then replays with the CLI gone from
// PATH and no key set, to the same outputs. (One run checks all this, so
// each CLI starts twice, not three times.)
func TestCLIRecordReplay(t *testing.T) {
	t.Parallel()
	eachCLI(t, func(t *testing.T, c cliCase, mode string) {
		needCLIs(t, c.name)
		reply := bigReply(200 << 10)
		p := newCLIProj(t, mode,
			fakemodel.Rule{Match: "BIGPROMPT", Reply: fakemodel.Reply{Text: reply}},
			fakemodel.Rule{Match: "second", Reply: fakemodel.Reply{Text: "TWO after ONE"}})
		prompt := bigPrompt("BIGPROMPT", 300<<10)
		p.put("workspace/prompt.txt", prompt)
		wf := p.put("wf.yaml", p.workflow("rec.yaml", c, cliCase{}))
		p.put("workspace/notes.txt", "NOTES FROM THE INPUT FILE\n")
		rec := filepath.Join(p.base, "rec")
		r1 := p.run("run", wf, "--record", rec)
		if r1.code != 0 {
			t.Fatalf("record: exit %d\n%s", r1.code, r1.stderr)
		}
		if got := p.read("workspace/artifacts/First/out/reply.txt"); got != reply {
			t.Errorf("output_file has %d bytes (ends %q), want the %d-byte reply", len(got), tail(got), len(reply))
		}
		s1 := p.state(r1)
		if !strings.HasPrefix(s1.Steps["First"].Output, "reply line 000000") {
			t.Errorf("output starts %q", head(s1.Steps["First"].Output))
		}
		if s1.Stats.Tokens != 30 {
			t.Errorf("totalTokensUsed = %d, want 30 (two requests of 10 in + 5 out, as the server reported)", s1.Stats.Tokens)
		}
		reqs := p.requests(c.proto)
		// Second's prompt holds ${steps.First.output}: the excerpt the
		// state keeps of First's stdout.
		second := "the second question, after: " + s1.Steps["First"].Output + "\n\nNOTES FROM THE INPUT FILE\n"
		whole, both := false, false
		for _, l := range reqs {
			if strings.Contains(l.Prompt, prompt) {
				whole = true
				if l.Model != c.model {
					t.Errorf("model %q reached the server, want %q", l.Model, c.model)
				}
			}
			both = both || strings.Contains(l.Prompt, second)
		}
		if !whole {
			t.Errorf("no request of %d carried the whole %d-byte prompt", len(reqs), len(prompt))
		}
		if !both {
			t.Errorf("no request carried the prompt, an empty line and the input_file")
		}
		p.keysInHome()
		before := len(p.srv.Requests())
		env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + p.home} // no CLIs, no keys
		if _, err := exec.LookPath(c.name); err == nil && !strings.Contains(os.Getenv("PATH"), clisDir()) {
			t.Logf("note: a %s is on PATH outside %s", c.name, clisDir())
		}
		r2 := p.runEnv(env, "run", wf, "--replay", rec)
		if r2.code != 0 {
			t.Fatalf("replay: exit %d\n%s", r2.code, r2.stderr)
		}
		if after := len(p.srv.Requests()); after != before {
			t.Errorf("replay made %d requests", after-before)
		}
		s2 := p.state(r2)
		for _, step := range []string{"First", "Second"} {
			if s1.Steps[step].Output != s2.Steps[step].Output || s1.Steps[step].Output == "" {
				t.Errorf("%s: recorded %q, replayed %q", step, head(s1.Steps[step].Output), head(s2.Steps[step].Output))
			}
		}
		if s1.Stats.Tokens != s2.Stats.Tokens {
			t.Errorf("tokens: recorded %d, replayed %d", s1.Stats.Tokens, s2.Stats.Tokens)
		}
	})
}

// TestCLIBigReply: a reply past the 1 MiB in-memory cap is kept as a
// command step's big stdout is, whatever way the CLI hands it over (gemini
// writes it to a file, the others to a pipe): the state keeps its first
// MiB, truncated: true and the spill, logs/<Step>-stdout.log, which holds
// the CLI's whole stdout; output_file gets the whole reply.
func TestCLIBigReply(t *testing.T) {
	t.Parallel()
	for _, c := range cliCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			needCLIs(t, c.name)
			reply := bigReply(1536 << 10)
			p := newCLIProj(t, modeUser, fakemodel.Rule{Match: "BIGREPLY", Reply: fakemodel.Reply{Text: reply}})
			wf := p.put("wf.yaml", p.workflow("big.yaml", c, cliCase{}))
			r := p.run("run", wf)
			if r.code != 0 {
				t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
			}
			st := p.state(r).Steps["Ask"]
			want := filepath.Join(p.base, ".orchestrator/runs", r.runID(), "logs", "Ask-stdout.log")
			if !st.Truncated || st.Spill != want {
				t.Fatalf("truncated %v spill_stdout_path %q, want true %q", st.Truncated, st.Spill, want)
			}
			if !strings.HasPrefix(st.Output, "reply line 000000") || len(st.Output) > 1<<20 {
				t.Errorf("output is %d bytes starting %q, want at most 1 MiB of the reply", len(st.Output), head(st.Output))
			}
			if b, err := os.ReadFile(want); err != nil || !bytes.Contains(b, []byte("END OF REPLY")) {
				t.Errorf("the spill (%d bytes, %v) lacks the reply's end", len(b), err)
			}
			if got := p.read("workspace/artifacts/Ask/reply.txt"); got != reply {
				t.Errorf("output_file has %d bytes (ends %q), want the %d-byte reply", len(got), tail(got), len(reply))
			}
			p.keysInHome()
		})
	}
}

// TestCLIUserHomeUntouched: a gemini run in the user's own home (no
// session continued) creates or changes nothing in their ~/.gemini:
// gemini's writes (its project registry, its installation id) stay in the
// call's overlay.
func TestCLIUserHomeUntouched(t *testing.T) {
	t.Parallel()
	for _, c := range cliCases {
		if c.name != "gemini" {
			continue // the other presets get no overlay: they run in the user's folder as in a terminal
		}
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			needCLIs(t, c.name)
			p := newCLIProj(t, modeUser, fakemodel.Rule{Match: "BIGREPLY", Reply: fakemodel.Reply{Text: "short"}})
			dir := filepath.Join(p.home, "."+c.name)
			before := snapshotDir(t, dir)
			wf := p.put("wf.yaml", p.workflow("big.yaml", c, cliCase{}))
			if r := p.run("run", wf); r.code != 0 {
				t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
			}
			after := snapshotDir(t, dir)
			for name, v := range after {
				if b, ok := before[name]; !ok {
					t.Errorf("the run created %s in the user's ~/.%s", name, c.name)
				} else if b != v {
					t.Errorf("the run changed %s in the user's ~/.%s", name, c.name)
				}
			}
			for name := range before {
				if _, ok := after[name]; !ok {
					t.Errorf("the run removed %s from the user's ~/.%s", name, c.name)
				}
			}
		})
	}
}

// snapshotDir maps every entry under dir (folders end in "/") to its
// content, mode and modification time.
func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		v := fmt.Sprintf("%v %v", fi.Mode(), fi.ModTime().UnixNano())
		if d.IsDir() {
			rel += "/"
		} else if fi.Mode().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			v += " " + string(b)
		}
		m[rel] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCLINoLogin: a CLI with no login and no key fails its step with exit
// 2 and one line naming both ways to fix it and the configuration home the
// CLI was given, in the user's own home (nothing set up: a new machine) and
// with home: isolated (a key is the only way there). No request reaches
// the server.
func TestCLINoLogin(t *testing.T) {
	t.Parallel()
	fixes := map[string]string{
		"claude": "run 'claude' once to log in, or set ANTHROPIC_API_KEY",
		"gemini": "run 'gemini' once to log in, or set GEMINI_API_KEY",
		"codex":  "run 'codex login' (or 'codex login --with-api-key'), or set CODEX_API_KEY",
	}
	homes := map[string]string{"claude": ".claude", "gemini": ".gemini", "codex": ".codex"}
	eachCLI(t, func(t *testing.T, c cliCase, mode string) {
		needCLIs(t, c.name)
		p := newCLIProj(t, mode, fakemodel.Rule{Reply: fakemodel.Reply{Text: "should not be asked"}})
		if mode == modeUser {
			// A machine where the CLI was installed and never set up.
			if err := os.RemoveAll(p.home); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(p.home, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		wf := p.put("wf.yaml", p.workflow("nologin.yaml", c, cliCase{}))
		env := []string{"PATH=" + clisDir() + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + p.home}
		if c.name != "codex" || mode == modeIsolated {
			env = append(env, c.baseVar+"="+p.srv.URL+c.suffix)
		}
		r := p.runWith(env, "run", wf)
		if r.code != 1 {
			t.Fatalf("run: exit %d, want 1\n%s", r.code, r.stderr)
		}
		if s := p.state(r).Steps["Ask"]; s.ExitCode != 2 || s.Attempts != 1 {
			t.Errorf("Ask: exit %d after %d tries, want 2 after 1 (not retried)", s.ExitCode, s.Attempts)
		}
		var want []string
		if mode == modeUser {
			want = []string{fixes[c.name], c.name + "'s configuration home: " + filepath.Join(p.home, homes[c.name])}
		} else {
			want = []string{c.keyVar, "home: isolated", filepath.Join(".orchestrator", "runs")}
		}
		for _, w := range want {
			if !strings.Contains(r.stderr, "ERROR: Step 'Ask' failed: E_EXEC: provider '"+c.name+"' failed: ") || !strings.Contains(r.stderr, w) {
				t.Errorf("the console does not say %q:\n%s", w, r.stderr)
			}
		}
		if n := len(p.requests(c.proto)); n != 0 && c.name == "codex" {
			t.Errorf("codex sent %d requests with no credentials; the step should fail before it starts", n)
		}
	})
}

// TestCLIPresetVars: a preset's own variables reach its CLI from Smith's
// environment (the key, and the config home, here CLAUDE_CONFIG_DIR naming
// the user's own) and no other process (a command step), and their values
// are masked wherever they enter the run: a reply that quotes the key and
// the config home leaves only *** in the state, the events, the recording
// and the output file.
func TestCLIPresetVars(t *testing.T) {
	t.Parallel()
	needCLIs(t, "claude")
	const key = "fake-key-claude-0123456789"
	p := newCLIProj(t, modeUser)
	cfg := filepath.Join(p.home, "claude-config")
	userSetup(t, cfg, p.srv.URL)
	if err := os.Rename(filepath.Join(cfg, ".claude"), cfg+".tmp"); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(cfg+".tmp", cfg); err != nil {
		t.Fatal(err)
	}
	p.srv.SetRules([]fakemodel.Rule{{Reply: fakemodel.Reply{Text: "the key is " + key + " and the home " + cfg}}})
	wf := p.put("wf.yaml", p.workflow("vars.yaml", cliCase{}, cliCase{}))
	rec := filepath.Join(p.base, "rec")
	r := p.runWith(append(p.env(), "CLAUDE_CONFIG_DIR="+cfg), "run", wf, "--record", rec)
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	st := p.state(r)
	if env := st.Steps["Env"].Output; strings.Contains(env, "ANTHROPIC_API_KEY") || strings.Contains(env, "CLAUDE_CONFIG_DIR") || strings.Contains(env, "GATEWAY_API_KEY") {
		t.Errorf("a command step got a preset's variables:\n%s", env)
	}
	if got := st.Steps["Ask"].Output; got != "the key is *** and the home ***" {
		t.Errorf("Ask output %q, want the key and the home masked", got)
	}
	if n := len(p.requests(fakemodel.Anthropic)); n != 1 {
		t.Errorf("%d requests: the settings in CLAUDE_CONFIG_DIR (the server's address) were not used", n)
	}
	for _, dir := range []string{filepath.Join(p.base, ".orchestrator"), rec, p.ws} {
		noSecretUnder(t, dir, key)
	}
}
