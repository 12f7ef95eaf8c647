package agent

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"smith/source"
	"smith/workers/provider"
	"smith/workers/step"
	"smith/workers/steprun"
)

// TestPromptOnStdinHasNoName: a prompt that goes to the CLI on stdin only
// (every preset, a provider in stdin mode) is an open file with no name
// under RUN_ROOT/tmp while the CLI runs, so a smithvm killed then leaves
// nothing of it on disk; the CLI reads the same bytes from a regular file.
// A prompt the template names (${PROMPT_FILE}, temp_file) keeps its file,
// 0600, removed after the call (and by resume after a kill).
func TestPromptOnStdinHasNoName(t *testing.T) {
	t.Parallel()
	const prompt = "--version\n- a prompt that must arrive whole"
	tests := []struct {
		name      string
		provider  string
		def       *provider.Def
		transport *provider.Transport
		named     bool // the prompt has a file with a name (${PROMPT_FILE})
	}{
		{"preset claude", "claude", nil, nil, false},
		{"preset codex", "codex", nil, nil, false},
		{"preset gemini", "gemini", nil, nil, false},
		{"custom, stdin by default", "mine", &provider.Def{Name: "mine", Command: []string{"mycli"}}, nil, false},
		{"custom, stdin asked for", "mine", &provider.Def{Name: "mine", Command: []string{"mycli"}}, &provider.Transport{Mode: "stdin"}, false},
		{"custom, temp_file", "mine", &provider.Def{Name: "mine", Command: []string{"mycli", "${PROMPT_FILE}"}}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var defs []provider.Def
			if tt.def != nil {
				defs = []provider.Def{*tt.def}
			}
			pv, ok := provider.Lookup(defs, tt.provider)
			if !ok {
				t.Fatalf("no provider %s", tt.provider)
			}
			req := &step.Request{Step: "Ask", Transport: tt.transport}
			p := steprun.Paths{TmpDir: filepath.Join(t.TempDir(), "tmp")}
			var inv *invocation
			var serr *source.Error
			if pv.Own {
				inv, serr = presetInvocation(req, p, pv, prompt, provider.Call{})
			} else {
				inv, serr = buildInvocation(req, p, pv, prompt, false)
			}
			if serr != nil {
				t.Fatal(serr)
			}
			defer inv.cleanup()
			ents, _ := os.ReadDir(p.TmpDir)
			if tt.named {
				if len(ents) != 1 || inv.tmp == "" {
					t.Fatalf("RUN_ROOT/tmp holds %v, want the prompt file the template names", ents)
				}
				if st, err := os.Stat(inv.tmp); err != nil || st.Mode().Perm() != 0o600 {
					t.Errorf("prompt file %s: %v, mode %v; want 0600", inv.tmp, err, st.Mode().Perm())
				}
				return
			}
			if len(ents) != 0 || inv.tmp != "" || inv.stdin != "" {
				t.Fatalf("while the CLI runs, RUN_ROOT/tmp holds %v (stdin path %q); want nothing: the prompt on stdin has no name", ents, inv.stdin)
			}
			if inv.stdinFile == nil {
				t.Fatal("no stdin file for the prompt")
			}
			if st, err := inv.stdinFile.Stat(); err != nil || !st.Mode().IsRegular() {
				t.Errorf("stdin: %v, %v; want a regular file", st, err)
			}
			b, err := io.ReadAll(inv.stdinFile)
			if err != nil || string(b) != prompt {
				t.Errorf("stdin holds %q (%v), want the prompt %q", b, err, prompt)
			}
		})
	}
}
