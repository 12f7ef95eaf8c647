package proc

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestBuildEnv(t *testing.T) {
	t.Parallel()
	parent := map[string]string{
		"PATH":    "/usr/bin",
		"HOME":    "/home/u",
		"TERM":    "xterm",
		"SHELL":   "/bin/sh",
		"GOPATH":  "/go",
		"SECRETX": "leak",
		"AWS_KEY": "leak",
		"EMPTY":   "",
	}
	lookup := func(k string) (string, bool) {
		v, ok := parent[k]
		return v, ok
	}
	tests := []struct {
		name    string
		allow   []string
		secrets []EnvVar
		stepEnv []EnvVar
		want    string
	}{
		{
			name: "inherited only, fixed order, unset skipped",
			want: "PATH=/usr/bin HOME=/home/u TERM=xterm SHELL=/bin/sh",
		},
		{
			name:  "allow adds set names only",
			allow: []string{"GOPATH", "NOT_SET", "EMPTY"},
			want:  "PATH=/usr/bin HOME=/home/u TERM=xterm SHELL=/bin/sh GOPATH=/go EMPTY=",
		},
		{
			name:    "secrets then step env",
			secrets: []EnvVar{{"TOKEN", "s1"}, {"API", "s2"}},
			stepEnv: []EnvVar{{"MODE", "fast"}},
			want:    "PATH=/usr/bin HOME=/home/u TERM=xterm SHELL=/bin/sh TOKEN=s1 API=s2 MODE=fast",
		},
		{
			name:    "later overrides earlier in place",
			allow:   []string{"GOPATH"},
			secrets: []EnvVar{{"GOPATH", "/secret"}, {"TOKEN", "s1"}},
			stepEnv: []EnvVar{{"PATH", "/step/bin"}, {"NEW", "n"}, {"NEW", "m"}},
			want:    "PATH=/step/bin HOME=/home/u TERM=xterm SHELL=/bin/sh GOPATH=/secret TOKEN=s1 NEW=m",
		},
		{
			name:    "an env entry named as a secret keeps the secret's value",
			secrets: []EnvVar{{"TOKEN", "s1"}},
			stepEnv: []EnvVar{{"TOKEN", "plain"}, {"MODE", "fast"}},
			want:    "PATH=/usr/bin HOME=/home/u TERM=xterm SHELL=/bin/sh TOKEN=s1 MODE=fast",
		},
		{
			name:    "allow listing an inherited name keeps one entry",
			allow:   []string{"HOME"},
			stepEnv: []EnvVar{{"V", "a=b"}},
			want:    "PATH=/usr/bin HOME=/home/u TERM=xterm SHELL=/bin/sh V=a=b",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := strings.Join(BuildEnv(lookup, tt.allow, tt.secrets, tt.stepEnv), " ")
			if got != tt.want {
				t.Errorf("BuildEnv(%v, %v, %v) = %s, want %s", tt.allow, tt.secrets, tt.stepEnv, got, tt.want)
			}
		})
	}
}

func TestBuildEnvNilLookup(t *testing.T) {
	t.Parallel()
	got := BuildEnv(nil, []string{"PATH"}, nil, []EnvVar{{"A", "1"}})
	if strings.Join(got, " ") != "A=1" {
		t.Errorf("BuildEnv(nil, ...) = %v, want [A=1]", got)
	}
}

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
