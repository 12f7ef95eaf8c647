package e2e

// The presets against setups real users have (CONTRACT 5): the model
// provider a user's codex configuration chose, a config.toml codex cannot
// read, a key the CLI does not read in the user's own home, and what
// smithvm doctor says in each.

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"smith/internal/fakemodel"
)

// TestCLIProviderKeyMasked: the key of the model provider a user's codex
// configuration chose (its env_key, GATEWAY_API_KEY here: no preset
// variable) is masked wherever the run writes, the recording's patch
// included: an agent that writes the key into a file leaves only *** in
// the recording (which users keep, to replay), the state and the logs.
func TestCLIProviderKeyMasked(t *testing.T) {
	t.Parallel()
	needCLIs(t, "codex")
	const key = "fake-key-gateway-0123456789"
	c := cliCases[2]
	p := newCLIProj(t, modeUser, fakemodel.Rule{Match: "LEAK", Reply: fakemodel.Reply{
		Text: "the key is " + key, WriteFile: &fakemodel.WriteFile{Path: "key.txt", Content: "KEY=" + key + "\n"}}})
	wf := p.put("wf.yaml", p.workflow("keyleak.yaml", c, cliCase{}))
	rec := filepath.Join(p.base, "rec")
	r := p.run("run", wf, "--record", rec)
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	if got := p.state(r).Steps["Ask"].Output; got != "the key is ***" {
		t.Errorf("Ask output %q, want the key masked", got)
	}
	if b, err := os.ReadFile(filepath.Join(p.ws, "key.txt")); err != nil || !bytes.Contains(b, []byte(key)) {
		t.Fatalf("the agent did not write key.txt (%v): the test proves nothing", err)
	}
	for _, dir := range []string{filepath.Join(p.base, ".orchestrator"), rec} {
		_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			if b, _ := os.ReadFile(path); bytes.Contains(b, []byte(key)) {
				t.Errorf("the provider's key is in %s", path)
			}
			return nil
		})
	}
}
