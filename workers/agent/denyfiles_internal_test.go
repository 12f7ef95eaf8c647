package agent

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"smith/workers/provider"
)

// TestDenyFiles: the settings files of claude's that hold deny rules, in
// its config home and in the working directory, are the ones a refused
// tool call names; a file without deny rules, one that is not JSON and a
// missing one are not.
func TestDenyFiles(t *testing.T) {
	t.Parallel()
	f, _ := provider.CLIOf("claude")
	tests := []struct {
		name  string
		files map[string]string // relative to a root holding home/ and cwd/
		want  []string
	}{
		{"none", nil, nil},
		{"user", map[string]string{"home/settings.json": `{"permissions": {"deny": ["Edit(a.txt)"]}}`}, []string{"home/settings.json"}},
		{"allow only", map[string]string{"home/settings.json": `{"permissions": {"allow": ["Bash(*)"], "deny": []}}`}, nil},
		{"not JSON", map[string]string{"home/settings.json": `{"permissions": `}, nil},
		{"comments", map[string]string{"home/settings.json": "// mine\n{\"permissions\": {\"deny\": [\"Bash\"]}}"}, []string{"home/settings.json"}},
		{"project and local", map[string]string{
			"cwd/.claude/settings.json":       `{"permissions": {"deny": ["Write"]}}`,
			"cwd/.claude/settings.local.json": `{"permissions": {"deny": ["Bash(rm:*)"]}}`,
		}, []string{"cwd/.claude/settings.json", "cwd/.claude/settings.local.json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			for rel, text := range tt.files {
				path := filepath.Join(root, rel)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var want []string
			for _, w := range tt.want {
				want = append(want, filepath.Join(root, w))
			}
			if got := denyFiles(f, filepath.Join(root, "home"), filepath.Join(root, "cwd")); !slices.Equal(got, want) {
				t.Errorf("denyFiles = %q, want %q", got, want)
			}
		})
	}
}
