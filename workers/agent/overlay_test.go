package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"smith/workers/provider"
	"smith/workers/step"
	"smith/workers/steprun"
)

// TestOverlaySettings: the user's settings (comments and trailing commas
// allowed) keep every key, with the preset's keys set over them.
func TestOverlaySettings(t *testing.T) {
	set := []provider.Setting{{Path: "general.maxAttempts", Value: 1}, {Path: "general.retryFetchErrors", Value: false}}
	tests := []struct{ name, in, want string }{
		{"none", "", `{"general": {"maxAttempts": 1, "retryFetchErrors": false}}`},
		{"theirs kept", `{"model": {"name": "gemini-2.5-pro"}, "general": {"maxAttempts": 7, "vimMode": true}}`,
			`{"model": {"name": "gemini-2.5-pro"}, "general": {"maxAttempts": 1, "retryFetchErrors": false, "vimMode": true}}`},
		{"comments", "{\n  // my model\n  \"model\": {\"name\": \"a//b\"}, /* trailing */\n  \"ui\": {\"theme\": \"x\",},\n}\n",
			`{"model": {"name": "a//b"}, "ui": {"theme": "x"}, "general": {"maxAttempts": 1, "retryFetchErrors": false}}`},
	}
	for _, tt := range tests {
		got, err := overlaySettings([]byte(tt.in), set)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var g, w any
		_ = json.Unmarshal(got, &g)
		_ = json.Unmarshal([]byte(tt.want), &w)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s: got %s, want %s", tt.name, got, tt.want)
		}
	}
	if _, err := overlaySettings([]byte("[1, 2"), set); err == nil {
		t.Errorf("a broken settings file was accepted")
	}
}

// fakeGeminiVar makes the test binary a fake gemini (fakeGemini) instead of
// running the tests.
const fakeGeminiVar = "SMITH_TEST_FAKE_GEMINI"

func init() {
	if os.Getenv(fakeGeminiVar) == "1" {
		os.Exit(fakeGemini(os.Args[1:]))
	}
}

// fakeGemini does what gemini 0.61 does with its home's files, in
// $GEMINI_CLI_HOME/.gemini, when it answers the prompt args[0] in a new
// session args[1], or with args[2] "resume" continuing it:
//   - the project registry projects.json maps the project root (the
//     working folder) to its folder under tmp/: read, and written when it
//     lacks the root, by a temp file renamed over it, under a lock, the
//     file's real path plus ".lock" made by mkdir (ProjectRegistry);
//   - a resumed session first gets a file with no prompt (gemini names the
//     file after the minute it starts, and resumes into the session's
//     first file afterwards: across a minute boundary the two differ);
//   - unless the settings turn general.sessionRetention off, the session
//     cleanup deletes every session file with no prompt, with all the
//     files of the same id (cleanupExpiredSessions);
//   - installation_id, when missing, is written (writeFileSync);
//   - the prompt is appended to the session's file.
func fakeGemini(args []string) int {
	prompt, id := args[0], args[1]
	dir := filepath.Join(os.Getenv("GEMINI_CLI_HOME"), ".gemini")
	root, _ := os.Getwd()
	reg := filepath.Join(dir, "projects.json")
	real, err := filepath.EvalSymlinks(reg)
	if err != nil {
		real = reg
	}
	for os.Mkdir(real+".lock", 0o755) != nil {
		time.Sleep(10 * time.Millisecond)
	}
	var r struct {
		Projects map[string]string `json:"projects"`
	}
	if b, err := os.ReadFile(reg); err == nil {
		_ = json.Unmarshal(b, &r)
	}
	if r.Projects == nil {
		r.Projects = map[string]string{}
	}
	slug := filepath.Base(root)
	if r.Projects[root] == "" {
		r.Projects[root] = slug
		b, _ := json.Marshal(r)
		tmp := reg + "." + id + ".tmp"
		if os.WriteFile(tmp, b, 0o644) != nil || os.Rename(tmp, reg) != nil {
			return 3
		}
	}
	os.Remove(real + ".lock")
	if _, err := os.Stat(filepath.Join(dir, "installation_id")); err != nil {
		_ = os.WriteFile(filepath.Join(dir, "installation_id"), []byte(id), 0o644)
	}
	chats := filepath.Join(dir, "tmp", slug, "chats")
	if os.MkdirAll(chats, 0o755) != nil {
		return 3
	}
	file := filepath.Join(chats, "session-1200-"+id+".jsonl")
	if len(args) > 2 {
		_ = os.WriteFile(filepath.Join(chats, "session-1201-"+id+".jsonl"), []byte(`{"sessionId":"`+id+`"}`+"\n"), 0o644)
	}
	var s struct {
		General struct {
			SessionRetention struct {
				Enabled *bool `json:"enabled"`
			} `json:"sessionRetention"`
		} `json:"general"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, "settings.json"))
	_ = json.Unmarshal(b, &s)
	if e := s.General.SessionRetention.Enabled; e == nil || *e {
		ents, _ := os.ReadDir(chats)
		for _, e := range ents {
			b, _ := os.ReadFile(filepath.Join(chats, e.Name()))
			other := strings.TrimSuffix(e.Name()[strings.LastIndex(e.Name(), "-")+1:], ".jsonl")
			if other == id || strings.Contains(string(b), `"type":"user"`) {
				continue
			}
			for _, f := range ents {
				if strings.HasSuffix(f.Name(), "-"+other+".jsonl") {
					os.Remove(filepath.Join(chats, f.Name()))
				}
			}
		}
	}
	w, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return 3
	}
	defer w.Close()
	_, _ = w.WriteString(`{"type":"user","content":"` + prompt + `"}` + "\n")
	return 0
}

// TestOverlayKeepsGeminiState: an agent's calls through overlay homes, as
// gemini: the first starts session A, the second continues it (leaving a
// file with no prompt), then two parallel calls, in A's project and in
// another, start sessions of their own. Session A keeps its file and its
// two turns (the project's folder stays the same without a registry:
// gemini's markers), and neither the registry (projects.json, replaced in
// each overlay by gemini's rename) nor the installation id lands in the
// user's folder.
func TestOverlayKeepsGeminiState(t *testing.T) {
	f, _ := provider.CLIOf("gemini")
	home, run := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(`{"ui": {"theme": "Default"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	call := func(ws string, args ...string) error {
		work := filepath.Join(run, ws)
		if err := os.MkdirAll(work, 0o755); err != nil {
			return err
		}
		v, err := overlayHome(&step.Request{Step: "Ask", RunRoot: run, Continue: true}, steprun.Paths{}, f, map[string]string{"HOME": home})
		defer v.close()
		if err != nil {
			return err
		}
		cmd := exec.Command(exe, args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), fakeGeminiVar+"=1", "GEMINI_CLI_HOME="+v.root)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("fake gemini %v: %v %s", args, err, out)
		}
		return nil
	}
	for _, args := range [][]string{{"one", "aaaaaaaa"}, {"two", "aaaaaaaa", "resume"}} {
		if err := call("workspace", args...); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, 2)
	for _, c := range [][3]string{{"workspace", "three", "bbbbbbbb"}, {"ws-c", "four", "cccccccc"}} {
		go func() { errs <- call(c[0], c[1], c[2]) }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	a, err := os.ReadFile(filepath.Join(home, ".gemini", "tmp", "workspace", "chats", "session-1200-aaaaaaaa.jsonl"))
	if err != nil || strings.Count(string(a), `"type":"user"`) != 2 {
		t.Errorf("session A: %q, %v; want its two prompts", a, err)
	}
	for _, name := range []string{"projects.json", "installation_id"} {
		if _, err := os.Lstat(filepath.Join(home, ".gemini", name)); err == nil {
			t.Errorf("the call made the user's %s", name)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(run, "providers", "overlays")); len(ents) != 0 {
		t.Errorf("%d overlays left", len(ents))
	}
}

// TestOverlayNoHome: with no HOME (a service started without one) the
// overlay links nothing and makes nothing: a .gemini folder of the working
// directory (a project's own gemini settings) is not taken for the user's
// configuration, and no session folders are made in it.
func TestOverlayNoHome(t *testing.T) {
	f, _ := provider.CLIOf("gemini")
	cwd, run := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(cwd, ".gemini"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cwd, ".gemini", "settings.json"), []byte(`{"ui": {"theme": "Project"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(cwd)
	v, err := overlayHome(&step.Request{Step: "Ask", RunRoot: run, Continue: true}, steprun.Paths{}, f, map[string]string{})
	defer v.close()
	if err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(filepath.Join(cwd, ".gemini")); len(ents) != 1 {
		t.Errorf("the working directory's .gemini holds %d entries after the overlay, want its settings.json alone", len(ents))
	}
	b, err := os.ReadFile(filepath.Join(v.root, ".gemini", "settings.json"))
	if err != nil || strings.Contains(string(b), "Project") {
		t.Errorf("the overlay's settings (%v) took the working directory's .gemini for the user's:\n%s", err, b)
	}
}
