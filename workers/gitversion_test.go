package workers

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"smith/source"
)

func TestParseGitVersion(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, line string
		want       bool
	}{
		{"current", "git version 2.39.5", true},
		{"the first that reads GIT_CONFIG_COUNT", "git version 2.31.0", true},
		{"no patch", "git version 2.31", true},
		{"apple", "git version 2.39.3 (Apple Git-146)", true},
		{"major 3", "git version 3.0.0", true},
		{"one before", "git version 2.30.9", false},
		{"windows, old", "git version 2.30.1.windows.1", false},
		{"minor 9 is not 90", "git version 2.9.5", false},
		{"major 1", "git version 1.9.1", false},
		{"no version", "usage: git [--version]", false},
		{"empty", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := parseGitVersion(tt.line).new(); got != tt.want {
				t.Errorf("parseGitVersion(%q).new() = %v, want %v", tt.line, got, tt.want)
			}
		})
	}
}

// TestCheckGitAsksOnce: CheckGit asks the git of a PATH its version once
// per process, whatever the number of calls, and refuses an old one with
// E_GIT_VERSION; git missing from PATH is not its error.
func TestCheckGitAsksOnce(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	log := filepath.Join(bin, "calls")
	script := "#!/bin/sh\necho \"$*\" >> " + log + "\necho 'git version 2.30.2'\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	lookup := func(k string) (string, bool) {
		if k == "PATH" {
			return bin, true
		}
		return "", false
	}
	for range 3 {
		err := CheckGit(context.Background(), lookup)
		if source.CodeOf(err, "") != source.EGitVersion || !strings.Contains(err.Error(), "'git version 2.30.2'") {
			t.Fatalf("CheckGit with git 2.30.2 = %v, want E_GIT_VERSION naming the version", err)
		}
	}
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := openRepo(context.Background(), repo, lookup); source.CodeOf(err, "") != source.EGitVersion {
		t.Errorf("openRepo with git 2.30.2 = %v, want E_GIT_VERSION", err)
	}
	if b, _ := os.ReadFile(log); string(b) != "version\n" {
		t.Errorf("git was run as %q, want one 'git version' and nothing else", b)
	}
	empty := t.TempDir()
	none := func(k string) (string, bool) {
		if k == "PATH" {
			return empty, true
		}
		return "", false
	}
	if err := CheckGit(context.Background(), none); err != nil {
		t.Errorf("CheckGit with no git on PATH = %v, want nil (the git command reports it)", err)
	}
}
