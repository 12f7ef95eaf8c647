package vm_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"smith/internal/goldenfile"
	"smith/isa"
	"smith/vm"
	"smith/workers/step"
)

// TestPromptGolden assembles the prompt of one AI worker block per case:
// testdata/prompts/NAME.json is the manifest, NAME.state.json the state the
// run is resumed from (its current_step is the block whose prompt is
// built; payload, return_stack and steps[block].executions shape the
// layers), and testdata/prompts/workspace is WORKSPACE (ARTIFACT: layers).
// The prompt is compared with NAME.prompt.golden byte for byte, and
// assembling it twice must give the same bytes.
func TestPromptGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/prompts/*.state.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/prompts/*.state.json inputs")
	}
	for _, stateFile := range files {
		name := strings.TrimSuffix(filepath.Base(stateFile), ".state.json")
		t.Run(name, func(t *testing.T) {
			prog := mfCompile(t, filepath.Join("testdata", "prompts", name+".json"))
			var prompts []string
			for range 2 {
				prompts = append(prompts, promptOf(t, prog, stateFile))
			}
			if prompts[0] != prompts[1] {
				t.Fatalf("two assemblies differ:\n%s", goldenfile.FirstDiff(prompts[0], prompts[1]))
			}
			golden(t, "prompts/"+name+".prompt.golden", []byte(prompts[0]))
		})
	}
}

// promptOf resumes the state in stateFile with a runner that records the
// first request's assembled prompt and then cancels the run.
func promptOf(t *testing.T, prog *isa.Program, stateFile string) string {
	t.Helper()
	b, err := os.ReadFile(stateFile)
	if err != nil {
		t.Fatal(err)
	}
	var st vm.State
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("%s: %v", stateFile, err)
	}
	h := newMfHarness(t, filepath.Join("testdata", "prompts", "workspace"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var prompt string
	spy := runnerFunc(func(ctx context.Context, req *step.Request) step.Result {
		if prompt == "" {
			prompt = req.Prompted
		}
		cancel()
		return step.Result{Signal: vm.SigFailure, ExitCode: 1}
	})
	m, err := vm.New(prog, h.config(spy))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if _, err := m.Resume(ctx, &st, vm.ResumeOptions{}); err == nil {
		t.Fatalf("Resume() = nil, want the run interrupted")
	}
	if prompt == "" {
		t.Fatalf("block %s was not run or got no prompt", st.CurrentStep)
	}
	return prompt
}

// TestPromptArtifactEscape fails the block when an ARTIFACT: layer leaves
// the worktree through a symlink (the compiler rejects literal escapes).
func TestPromptArtifactEscape(t *testing.T) {
	prog := mfSource(t, `{"version":"1","entry":"N","workers":{"W":{"provider":"mock"}},
	 "nodes":{"N":{"entry_block":"A","blocks":{"A":{"worker":"W","payload_merge_strategy":["ARTIFACT:link/secret.txt"],"transitions":[
	   {"on_signal":"SIGNAL:SUCCESS","action":"END"},{"on_signal":"SIGNAL:FAIL_DEFAULT","action":"FAIL:artifact"}]}}}}}`)
	h := newMfHarness(t, "")
	outside := t.TempDir()
	mfWrite(t, outside, map[string]string{"secret.txt": "secret"})
	if err := os.Symlink(outside, filepath.Join(h.dirs.Workspace, "link")); err != nil {
		t.Fatal(err)
	}
	st, err := h.run(prog, nil)
	if err == nil || st.Steps["A"].Error == nil || st.Steps["A"].Error.Code != "E_PATH_ESCAPE" {
		t.Fatalf("Run() = %v, step A = %+v, want E_PATH_ESCAPE", err, st.Steps["A"])
	}
}
