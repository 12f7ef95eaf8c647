package agent

import (
	"os"
	"path/filepath"
	"testing"

	"smith/workers/provider"
	"smith/workers/text"
)

// TestScrubSessions: in an isolated home, the session files of the call's
// session are removed when the call does not continue it, and masked when
// it does; another session's files (a call next to it) are left as they
// are.
func TestScrubSessions(t *testing.T) {
	t.Parallel()
	const (
		id    = "b60367d5-2ccc-42bb-9c8d-6ade3e8e09ac"
		other = "f845a141-0000-4000-8000-000000000000"
		mine  = ".gemini/tmp/ws/chats/session-2026-11-27T10-41-b60367d5.jsonl"
		next  = ".gemini/tmp/ws/chats/session-2026-11-27T10-41-f845a141.jsonl"
	)
	f, _ := provider.CLIOf("gemini")
	mask := text.NewMasker([]string{"tok-secret-0123456789"})
	tests := []struct {
		name       string
		continues  bool
		mine, next string // the files' content afterwards ("-" = removed)
	}{
		{"one call", false, "-", `{"sessionId":"` + other + `"} tok-secret-0123456789`},
		{"continued", true, `{"sessionId":"` + id + `"} ***`, `{"sessionId":"` + other + `"} tok-secret-0123456789`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			for rel, sid := range map[string]string{mine: id, next: other} {
				path := filepath.Join(home, rel)
				if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(`{"sessionId":"`+sid+`"} tok-secret-0123456789`), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			scrubSessions(f, home, id, tt.continues, mask)
			for rel, want := range map[string]string{mine: tt.mine, next: tt.next} {
				b, err := os.ReadFile(filepath.Join(home, rel))
				got := string(b)
				if err != nil {
					got = "-"
				}
				if got != want {
					t.Errorf("scrubSessions: %s = %q, want %q", rel, got, want)
				}
			}
		})
	}
}
