package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"smith/compiler/cache"
	"smith/vm/store"
)

// TestRunKeepsItsProgram: smithvm run keeps the program it compiled in
// SMITH_CACHE and a second run of the unchanged workflow uses it (the
// entry is not written again) with the same program hash and output; a
// changed workflow runs as changed; SMITH_CACHE=off keeps nothing.
func TestRunKeepsItsProgram(t *testing.T) {
	src := `version: "1.0"
name: kept
steps:
  - name: A
    command: ["echo", "first"]
    on: {success: {end: true}, failure: {error: "A failed"}}
`
	wf, base := workflowProject(t, src)
	programs := filepath.Join(t.TempDir(), "programs")
	t.Setenv(cache.EnvVar, programs)
	runOnce := func(id string) (string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run([]string{"run", wf, "--base", base, "--run-id", id}, strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("run %s: exit %d: %s", id, code, errb.String())
		}
		s, err := store.New(base)
		if err != nil {
			t.Fatal(err)
		}
		st, err := s.ReadState(id)
		if err != nil {
			t.Fatal(err)
		}
		return st.ProgramHash, st.Steps["A"].Output
	}
	kept := func() []os.DirEntry {
		t.Helper()
		des, err := os.ReadDir(programs)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return des
	}

	h1, out1 := runOnce("r1")
	des := kept()
	if len(des) != 1 || out1 != "first" {
		t.Fatalf("after the first run: %d entries, stdout %q", len(des), out1)
	}
	entry := filepath.Join(programs, des[0].Name())
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(entry, old, old); err != nil {
		t.Fatal(err)
	}
	h2, out2 := runOnce("r2")
	if h2 != h1 || out2 != out1 {
		t.Errorf("the second run: hash %s stdout %q, want %s %q", h2, out2, h1, out1)
	}
	if fi, err := os.Stat(entry); err != nil || !fi.ModTime().Equal(old) || len(kept()) != 1 {
		t.Errorf("the second run wrote the cache again (it did not use the entry)")
	}

	if err := os.WriteFile(wf, []byte(strings.Replace(src, "first", "other", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if h3, out3 := runOnce("r3"); h3 == h1 || out3 != "other" || len(kept()) != 2 {
		t.Errorf("the changed workflow: same hash %v, stdout %q, %d entries", h3 == h1, out3, len(kept()))
	}

	t.Setenv(cache.EnvVar, "off")
	if err := os.WriteFile(wf, []byte(strings.Replace(src, "first", "third", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, out4 := runOnce("r4"); out4 != "third" || len(kept()) != 2 {
		t.Errorf("SMITH_CACHE=off: stdout %q, %d entries", out4, len(kept()))
	}
}
