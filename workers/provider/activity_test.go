package provider

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestActivityRealCLIs reads the streams the real CLIs printed against the
// fake model server (testdata/clis/<cli>-stream-edit.stdout: the model
// writes one.txt, then says "wrote one") into the activity lines.
func TestActivityRealCLIs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cli  string
		want string
	}{
		{"claude", "edit Write one.txt\nmessage wrote one\n"},
		{"gemini", "edit write_file one.txt\nmessage wrote one\n"},
		{"codex", "edit add one.txt\nmessage wrote one\n"},
	}
	for _, tt := range tests {
		t.Run(tt.cli, func(t *testing.T) {
			t.Parallel()
			b, err := os.ReadFile(filepath.Join("testdata", "clis", tt.cli+"-stream-edit.stdout"))
			if err != nil {
				t.Fatal(err)
			}
			pv, _ := preset(tt.cli)
			a := NewActivityReader(pv, "/work/project")
			var got strings.Builder
			for line := range strings.SplitSeq(string(b), "\n") {
				for _, act := range a.Line([]byte(line)) {
					got.WriteString(act.Kind + " " + act.Text + "\n")
				}
			}
			for _, act := range a.Flush() {
				got.WriteString(act.Kind + " " + act.Text + "\n")
			}
			if got.String() != tt.want {
				t.Errorf("activity of %s = %q, want %q", tt.cli, got.String(), tt.want)
			}
		})
	}
}

// TestActivityTools: each tool kind, and a long message cut to one line.
func TestActivityTools(t *testing.T) {
	t.Parallel()
	pv, _ := preset("claude")
	a := NewActivityReader(pv, "/w")
	line := `{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":{"command":"go test\n ./..."}},` +
		`{"type":"tool_use","name":"Read","input":{"file_path":"/w/a/b.go"}},{"type":"tool_use","name":"Grep","input":{"pattern":"TODO"}},` +
		`{"type":"tool_use","name":"WebFetch","input":{"url":"http://x"}},{"type":"text","text":"` + strings.Repeat("é", 150) + `"}]}}`
	got := a.Line([]byte(line))
	want := []Act{{ActCommand, "go test ./..."}, {ActRead, "Read a/b.go"}, {ActRead, "Grep TODO"}, {ActTool, `WebFetch {"url":"http://x"}`}}
	if len(got) != 5 {
		t.Fatalf("Line = %v, want 5 acts", got)
	}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("act %d = %v, want %v", i, got[i], w)
		}
	}
	if m := got[4]; m.Kind != ActMessage || !strings.HasSuffix(m.Text, "…") || len(m.Text) > actMax+len("…") {
		t.Errorf("long message = %q", m.Text)
	}
	if NewActivityReader(Provider{}, "") != nil {
		t.Errorf("a workflow's own provider has an activity reader")
	}
}
