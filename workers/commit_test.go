package workers

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"smith/source"
	"smith/workers/confine"
	"smith/workers/step"
)

// runWorktree makes a repository with one commit and a run's worktree of
// it, and returns the layout and the worktree.
func runWorktree(t *testing.T, lookup func(string) (string, bool)) (confine.Dir, string) {
	t.Helper()
	needGit(t)
	d := gitProject(t)
	wt, err := CreateWorktree(context.Background(), d, "r1", lookup)
	if err != nil {
		t.Fatal(err)
	}
	return d, wt
}

// writeFiles writes name/content pairs under dir.
func writeFiles(t *testing.T, dir string, pairs ...string) {
	t.Helper()
	for i := 0; i+1 < len(pairs); i += 2 {
		p := filepath.Join(dir, pairs[i])
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(pairs[i+1]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCommitStepRefusesSecret: a change holding a secret's value (a
// declared secret, or a preset's key variable nobody declared) fails with
// E_SECRET_IN_CHANGE naming the file and line, not the value, and commits
// nothing: the branch and the index are as they were, the file is left in
// the worktree (CONTRACT 12.4).
func TestCommitStepRefusesSecret(t *testing.T) {
	t.Parallel()
	const token, key = "tok-3f9a77c1e5", "sk-ant-0000secret"
	// A private key is a secret of several lines.
	const pem = "-----BEGIN KEY-----\nMIIsecretLINEone\nMIIsecretLINEtwo\n-----END KEY-----"
	lookup := func(name string) (string, bool) {
		switch name {
		case "PATH":
			return os.Getenv("PATH"), true
		case "API_TOKEN":
			return token, true
		case "ANTHROPIC_API_KEY":
			return key, true
		case "DEPLOY_KEY":
			return pem, true
		case "DB_PASS":
			return `pa"ss<w>-4417`, true
		case "NL_TOKEN": // read from a file, with its newline
			return "nl-9d1e5b7730\n", true
		case "NL_KEY":
			return "-----BEGIN NL-----\nMIInlSECRET\n-----END NL-----\n", true
		}
		return "", false
	}
	tests := []struct {
		name  string
		files []string
		want  string
	}{
		{"new file", []string{"config.yaml", "a: 1\nb: 2\ntoken: " + token + "\n"}, "secret 'API_TOKEN' in config.yaml:3"},
		{"preset key", []string{"src/client.go", "package c\n\nconst k = \"" + key + "\"\n"}, "secret 'ANTHROPIC_API_KEY' in src/client.go:3"},
		{"line like a header", []string{"notes.md", "x\n++ " + token + "\n"}, "secret 'API_TOKEN' in notes.md:2"},
		{"no newline at end", []string{"z.txt", "one\ntwo " + token}, "secret 'API_TOKEN' in z.txt:2"},
		{"second file", []string{"a.txt", "clean\n", "b/c d.txt", "\n\n\n\n" + token + "\n"}, "secret 'API_TOKEN' in b/c d.txt:5"},
		{"several lines", []string{"deploy/key.pem", "# key\n" + pem + "\n"}, "secret 'DEPLOY_KEY' in deploy/key.pem:2"},
		{"several lines, no newline at end", []string{"k", pem}, "secret 'DEPLOY_KEY' in k:1"},
		{"ends in a newline, last line", []string{"t.env", "a=1\nT=nl-9d1e5b7730\n"}, "secret 'NL_TOKEN' in t.env:2"},
		{"several lines ending in a newline, at the end", []string{"nl.pem", "x\n-----BEGIN NL-----\nMIInlSECRET\n-----END NL-----\n"}, "secret 'NL_KEY' in nl.pem:2"},
		{"escaped in JSON", []string{"db.json", "{\n  \"password\": \"pa\\\"ss\\u003cw\\u003e-4417\"\n}\n"}, "secret 'DB_PASS' in db.json:2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, wt := runWorktree(t, lookup)
			l := Local{Env: lookup}
			ctx := context.Background()
			before := testGit(t, wt, lookup, "rev-parse", "HEAD").out
			writeFiles(t, wt, tt.files...)
			h, err := l.CommitStep(ctx, step.Commit{Worktree: wt, Msg: "smith: S", Secrets: []string{"API_TOKEN", "ANTHROPIC_API_KEY", "DEPLOY_KEY", "DB_PASS", "NL_TOKEN", "NL_KEY"}})
			if source.CodeOf(err, "") != source.ESecretChange || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("CommitStep = %q, %v, want E_SECRET_IN_CHANGE containing %q", h, err, tt.want)
			}
			if strings.Contains(err.Error(), token) || strings.Contains(err.Error(), key) || strings.Contains(err.Error(), "MIIsecret") || strings.Contains(err.Error(), "nl-9d1e") || strings.Contains(err.Error(), "MIInl") {
				t.Errorf("CommitStep error %q shows the secret's value", err)
			}
			if after := testGit(t, wt, lookup, "rev-parse", "HEAD").out; after != before {
				t.Errorf("HEAD moved from %s to %s: something was committed", before, after)
			}
			if staged := testGit(t, wt, lookup, "diff", "--cached", "--name-only").out; staged != "" {
				t.Errorf("staged after the refusal: %q, want nothing", staged)
			}
			if _, err := os.Stat(filepath.Join(wt, tt.files[0])); err != nil {
				t.Errorf("the change was not left in the worktree: %v", err)
			}
		})
	}
}

// TestCommitStepWithoutSecret: the same change with no secret in it is
// committed.
func TestCommitStepWithoutSecret(t *testing.T) {
	t.Parallel()
	lookup := func(name string) (string, bool) {
		if name == "API_TOKEN" {
			return "tok-3f9a77c1e5", true
		}
		return os.LookupEnv(name)
	}
	_, wt := runWorktree(t, lookup)
	writeFiles(t, wt, "config.yaml", "token: ${API_TOKEN}\n")
	h, err := Local{Env: lookup}.CommitStep(context.Background(), step.Commit{Worktree: wt, Msg: "smith: S", Secrets: []string{"API_TOKEN"}})
	if err != nil || h == "" {
		t.Fatalf("CommitStep = %q, %v, want a commit", h, err)
	}
}

// TestCommitStepExcludes: inboxes, processed and sending folders and
// artifacts/ stay out of a step's commit, with no .gitignore in the
// repository, and also when a .gitignore lists them (the examples' case);
// commit_artifacts puts artifacts/ in (CONTRACT 12.4).
func TestCommitStepExcludes(t *testing.T) {
	t.Parallel()
	folders := []string{"agents/eng/inbox", "agents/eng/processed", "team/qa/in", "team/qa/done"}
	files := []string{
		"main.go", "package main\n",
		"agents/eng/inbox/0001-task.md", "do it\n",
		"agents/eng/processed/0000-old.md", "done\n",
		"agents/eng/.sending/0002-x.md", "half\n",
		"team/qa/in/0003-q.md", "question\n",
		"artifacts/Design/design.md", "# design\n",
	}
	tests := []struct {
		name            string
		commitArtifacts bool
		want            string
	}{
		{"default", false, "main.go\n"},
		{"commit_artifacts", true, "artifacts/Design/design.md\nmain.go\n"},
		{"listed in .gitignore too", false, ".gitignore\nmain.go\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, wt := runWorktree(t, os.LookupEnv)
			writeFiles(t, wt, files...)
			if strings.Contains(tt.name, ".gitignore") {
				writeFiles(t, wt, ".gitignore", "agents/\nartifacts/\n")
			}
			c := step.Commit{Worktree: wt, Msg: "smith: S", Exclude: step.CommitExcludes(folders, tt.commitArtifacts)}
			if _, err := (Local{Env: os.LookupEnv}).CommitStep(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			got := testGit(t, wt, os.LookupEnv, "show", "--name-only", "--format=", "HEAD").out
			if got != tt.want {
				t.Errorf("committed files = %q, want %q", got, tt.want)
			}
			for _, p := range []string{filepath.Join(d.Workspace, ".gitignore"), filepath.Join(wt, ".gitignore")} {
				if _, err := os.Stat(p); err == nil && !strings.Contains(tt.name, ".gitignore") {
					t.Errorf("%s was written", p)
				}
			}
		})
	}
}

// TestCommitStepKeepsUserExcludes: a file the user ignores everywhere
// (core.excludesFile in ~/.gitconfig) stays out of a step's commit,
// although Smith's git reads no global configuration otherwise.
func TestCommitStepKeepsUserExcludes(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	ignore := filepath.Join(home, "global-ignore")
	writeFiles(t, home, ".gitconfig", "[core]\n\texcludesFile = "+ignore+"\n\tfsmonitor = /nonexistent/fsmonitor\n", "global-ignore", ".env\n")
	lookup := func(name string) (string, bool) {
		if name == "HOME" {
			return home, true
		}
		return os.LookupEnv(name)
	}
	_, wt := runWorktree(t, lookup)
	writeFiles(t, wt, ".env", "X=1\n", "main.go", "package main\n")
	if _, err := (Local{Env: lookup}).CommitStep(context.Background(), step.Commit{Worktree: wt, Msg: "smith: S"}); err != nil {
		t.Fatal(err)
	}
	if got := testGit(t, wt, lookup, "show", "--name-only", "--format=", "HEAD").out; got != "main.go\n" {
		t.Errorf("committed files = %q, want main.go only", got)
	}
}

// TestCommitLinesAndShow: a step's commit counts the lines it adds, and
// ShowCommit shows it (patch and summary); a bad id runs no git.
func TestCommitLinesAndShow(t *testing.T) {
	t.Parallel()
	d, wt := runWorktree(t, os.LookupEnv)
	writeFiles(t, wt, "a.txt", "one\ntwo\nthree\n", "b.txt", "x\n")
	l := Local{Env: os.LookupEnv}
	h, err := l.CommitStep(context.Background(), step.Commit{Worktree: wt, Msg: "smith: S"})
	if err != nil || h == "" {
		t.Fatalf("CommitStep = %q, %v", h, err)
	}
	if n, err := l.CommitLines(context.Background(), wt, h); n != 4 || err != nil {
		t.Errorf("CommitLines = %d, %v, want 4", n, err)
	}
	patch, err := ShowCommit(context.Background(), d, h, false, nil, os.LookupEnv)
	if err != nil || !strings.Contains(patch, "+two\n") || !strings.Contains(patch, "smith: S") {
		t.Errorf("ShowCommit = %q, %v", patch, err)
	}
	stat, err := ShowCommit(context.Background(), d, h, true, nil, os.LookupEnv)
	if err != nil || !strings.Contains(stat, "2 files changed, 4 insertions(+)") {
		t.Errorf("ShowCommit stat = %q, %v", stat, err)
	}
	if _, err := ShowCommit(context.Background(), d, "--output=/tmp/x", false, nil, os.LookupEnv); err == nil {
		t.Errorf("ShowCommit of an option ran")
	}
}

// TestCommitStepRefusesASplitSecret: a secret of several lines (a private
// key) whose first, last or middle line is already in a file (an unchanged
// line, outside the added lines of the diff) and whose other lines a step
// adds around it is whole in the file after the step: the commit fails
// with E_SECRET_IN_CHANGE naming the file and the line it starts on, never
// the value, and nothing is committed. A change that leaves the secret
// split, or that does not touch a secret already whole in the file, is
// committed. The repository plants a filter, textconv and hooks: none runs
// (the whole file is read as git stores it, running nothing).
func TestCommitStepRefusesASplitSecret(t *testing.T) {
	const pem = "-----BEGIN KEY-----\nMIIsecretLINEone\nMIIsecretLINEtwo\n-----END KEY-----"
	tests := []struct {
		name, before, after string
		want                string // "" when the change is committed
	}{
		{"first line unchanged", "# key\n-----BEGIN KEY-----\n", "# key\n" + pem + "\n", "secret 'DEPLOY_KEY' in deploy/key.pem:2"},
		{"first line unchanged, more after", "# key\n-----BEGIN KEY-----\nend\n", "# key\n" + pem + "\nend\n", "secret 'DEPLOY_KEY' in deploy/key.pem:2"},
		{"last line unchanged", "# key\n-----END KEY-----\n", "# key\n" + pem + "\n", "secret 'DEPLOY_KEY' in deploy/key.pem:2"},
		{"first and last unchanged", "-----BEGIN KEY-----\n-----END KEY-----\n", pem + "\n", "secret 'DEPLOY_KEY' in deploy/key.pem:1"},
		{"middle line unchanged", "x\nMIIsecretLINEone\ny\n", "x\n" + pem + "\ny\n", "secret 'DEPLOY_KEY' in deploy/key.pem:2"},
		{"first line inside a longer one", "key: -----BEGIN KEY-----\n", "key: " + pem + " # deploy\n", "secret 'DEPLOY_KEY' in deploy/key.pem:1"},
		{"still split", "-----BEGIN KEY-----\n", "-----BEGIN KEY-----\nMIIsecretLINEone\n", ""},
		{"whole before, untouched", pem + "\n", pem + "\nMIIsecretLINEone\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, marks := hostileRepo(t)
			lookup := func(name string) (string, bool) {
				switch name {
				case "PATH":
					return os.Getenv("PATH"), true
				case "DEPLOY_KEY":
					return pem, true
				case "API_TOKEN":
					return "tok-3f9a77c1e5", true
				}
				return "", false
			}
			ctx := context.Background()
			l := Local{Env: lookup}
			wt, err := CreateWorktree(ctx, d, "r1", lookup)
			if err != nil {
				t.Fatal(err)
			}
			writeFiles(t, wt, "deploy/key.pem", tt.before)
			if h, err := l.CommitStep(ctx, step.Commit{Worktree: wt, Msg: "smith: A"}); err != nil || h == "" {
				t.Fatalf("CommitStep(A) = %q, %v", h, err)
			}
			before := testGit(t, wt, lookup, "rev-parse", "HEAD").out
			writeFiles(t, wt, "deploy/key.pem", tt.after, "notes.txt", "unrelated\n")
			h, err := l.CommitStep(ctx, step.Commit{Worktree: wt, Msg: "smith: B", Secrets: []string{"API_TOKEN", "DEPLOY_KEY"}})
			if tt.want == "" {
				if err != nil || h == "" {
					t.Errorf("CommitStep = %q, %v, want a commit", h, err)
				}
			} else {
				if source.CodeOf(err, "") != source.ESecretChange || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("CommitStep = %q, %v, want E_SECRET_IN_CHANGE containing %q", h, err, tt.want)
				}
				if strings.Contains(err.Error(), "MIIsecret") || strings.Contains(err.Error(), "BEGIN KEY") {
					t.Errorf("CommitStep error %q shows the secret's value", err)
				}
				if after := testGit(t, wt, lookup, "rev-parse", "HEAD").out; after != before {
					t.Errorf("HEAD moved from %s to %s: something was committed", before, after)
				}
				if staged := testGit(t, wt, lookup, "diff", "--cached", "--name-only").out; staged != "" {
					t.Errorf("staged after the refusal: %q, want nothing", staged)
				}
			}
			if got := markers(t, marks); len(got) != 0 {
				t.Errorf("commands the repository names ran: %v, want none", got)
			}
		})
	}
}

// TestSecretScannerReadsWholeOnlyBlobs: with a secret of several lines, a
// file whose added lines hold one of its lines is to be read whole, by its
// new blob; a nested repository's commit (a gitlink, whose "blob" is a
// commit the repository does not hold) never is, and a run whose secrets
// are all of one line reads nothing whole.
func TestSecretScannerReadsWholeOnlyBlobs(t *testing.T) {
	t.Parallel()
	blob, commit := strings.Repeat("b", 40), strings.Repeat("c", 40)
	diff := "diff --git a/k.pem b/k.pem\nindex " + strings.Repeat("a", 40) + ".." + blob + " 100644\n--- a/k.pem\n+++ b/k.pem\n@@ -1,0 +2,2 @@\n+L2\n+L3\n" +
		"diff --git a/sub b/sub\nnew file mode 160000\nindex " + strings.Repeat("0", 40) + ".." + commit + "\n--- /dev/null\n+++ b/sub\n@@ -0,0 +1 @@\n+Subproject commit " + commit + "\n" +
		"diff --git a/sub2 b/sub2\nindex " + strings.Repeat("1", 40) + ".." + commit + " 160000\n--- a/sub2\n+++ b/sub2\n@@ -1 +1 @@\n-Subproject commit " + strings.Repeat("1", 40) + "\n+Subproject commit " + commit + "\n"
	for _, tt := range []struct {
		name    string
		secrets []secretValue
		want    []wholeFile
	}{
		{"several lines", []secretValue{{"K", "L1\n\nL2\nL3"}}, []wholeFile{{file: "k.pem", blob: blob, added: [][2]int{{2, 2}}, holds: true}}},
		{"one line", []secretValue{{"K", "L2"}}, nil},
	} {
		s := newSecretScanner(tt.secrets)
		s.Write([]byte(diff))
		s.flush()
		if !reflect.DeepEqual(s.whole, tt.want) {
			t.Errorf("%s: to read whole %+v, want %+v", tt.name, s.whole, tt.want)
		}
	}
}
