package steprun

import (
	"strings"
	"testing"

	"smith/workers/step"
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
		secrets []step.EnvVar
		stepEnv []step.EnvVar
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
			secrets: []step.EnvVar{{Name: "TOKEN", Value: "s1"}, {Name: "API", Value: "s2"}},
			stepEnv: []step.EnvVar{{Name: "MODE", Value: "fast"}},
			want:    "PATH=/usr/bin HOME=/home/u TERM=xterm SHELL=/bin/sh TOKEN=s1 API=s2 MODE=fast",
		},
		{
			name:    "later overrides earlier in place",
			allow:   []string{"GOPATH"},
			secrets: []step.EnvVar{{Name: "GOPATH", Value: "/secret"}, {Name: "TOKEN", Value: "s1"}},
			stepEnv: []step.EnvVar{{Name: "PATH", Value: "/step/bin"}, {Name: "NEW", Value: "n"}, {Name: "NEW", Value: "m"}},
			want:    "PATH=/step/bin HOME=/home/u TERM=xterm SHELL=/bin/sh GOPATH=/secret TOKEN=s1 NEW=m",
		},
		{
			name:    "an env entry named as a secret keeps the secret's value",
			secrets: []step.EnvVar{{Name: "TOKEN", Value: "s1"}},
			stepEnv: []step.EnvVar{{Name: "TOKEN", Value: "plain"}, {Name: "MODE", Value: "fast"}},
			want:    "PATH=/usr/bin HOME=/home/u TERM=xterm SHELL=/bin/sh TOKEN=s1 MODE=fast",
		},
		{
			name:    "allow listing an inherited name keeps one entry",
			allow:   []string{"HOME"},
			stepEnv: []step.EnvVar{{Name: "V", Value: "a=b"}},
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
	got := BuildEnv(nil, []string{"PATH"}, nil, []step.EnvVar{{Name: "A", Value: "1"}})
	if strings.Join(got, " ") != "A=1" {
		t.Errorf("BuildEnv(nil, ...) = %v, want [A=1]", got)
	}
}
