package proc

import (
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
