package proc

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestChildEnvMatchesExec checks that a child gets the environment os/exec
// would give it: duplicates resolved the same way, empty entries dropped,
// entries without '=' kept, and a NUL refused.
func TestChildEnvMatchesExec(t *testing.T) {
	cases := [][]string{
		{},
		{"A=1", "B=2"},
		{"A=1", "B=2", "A=3"},
		{"A=1", "", "B", "B", "=x=1", "=x=2", "=y", "C=", "C=4"},
		{"PATH=/bin", "HOME=/h", "PATH=/usr/bin", "HOME=/g", "X=1"},
	}
	for _, env := range cases {
		got, err := childEnv(env)
		want := (&exec.Cmd{Env: env}).Environ()
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("childEnv(%q) = %q, %v; want %q (os/exec)", env, got, err, want)
		}
	}
	if got, err := childEnv(nil); err != nil || got == nil || len(got) != 0 {
		t.Errorf("childEnv(nil) = %#v, %v; want an empty, non-nil environment", got, err)
	}
	if _, err := childEnv([]string{"A=1", "B=x\x00y"}); err == nil {
		t.Error("childEnv accepted a NUL byte")
	}
}

// TestIsExecutableMatchesLookPath checks the PATH lookup's test of a
// file against exec.LookPath's for a path with a slash.
func TestIsExecutableMatchesLookPath(t *testing.T) {
	dir := t.TempDir()
	for name, mode := range map[string]os.FileMode{"exe": 0o755, "plain": 0o644, "userx": 0o700} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"exe", "plain", "userx", "missing", ".", "/bin/sh"} {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		_, err := exec.LookPath(p)
		if got := isExecutable(p); got != (err == nil) {
			t.Errorf("isExecutable(%s) = %v; exec.LookPath says %v", p, got, err)
		}
	}
}
