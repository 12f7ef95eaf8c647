package provider

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseScriptGolden parses every testdata/mock script and compares the
// entries (or the error) with NAME.entries.golden.
func TestParseScriptGolden(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "mock", "*.*"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, file := range files {
		if strings.HasSuffix(file, ".golden") {
			continue
		}
		n++
		stem := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
		t.Run(stem, func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var got string
			entries, err := ParseScript(string(src))
			if err != nil {
				got = "error: " + err.Error() + "\n"
			} else {
				b, err := json.MarshalIndent(entries, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				got = string(b) + "\n"
			}
			golden(t, filepath.Join("testdata", "mock", stem+".entries.golden"), got)
		})
	}
	if n == 0 {
		t.Fatal("no mock scripts in testdata/mock")
	}
}

// TestParseScriptDocExample: the mock script docs/providers.md shows parses
// as the page says, comments after quoted values included.
func TestParseScriptDocExample(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/providers.md")
	if err != nil {
		t.Fatal(err)
	}
	_, src, ok := strings.Cut(string(doc), "otherwise this YAML subset:\n\n```yaml\n")
	if !ok {
		t.Fatal("docs/providers.md has no mock script example after 'otherwise this YAML subset:'")
	}
	src, _, _ = strings.Cut(src, "```")
	got, err := ParseScript(src)
	if err != nil {
		t.Fatalf("ParseScript(the docs' example) = %v\n%s", err, src)
	}
	want := []MockEntry{
		{Match: "^Review", Reply: "Looks good.\n", Signal: "APPROVED"},
		{Reply: "single quoted, ' is a quote", ExitCode: 1},
		{Reply: "double quoted with \n escapes"},
		{Reply: "keys may also start on the line after the dash"},
	}
	if len(got) != len(want) {
		t.Fatalf("ParseScript(the docs' example) = %d entries, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g := got[i]
		if g.Match != want[i].Match || g.Reply != want[i].Reply || g.Signal != want[i].Signal || g.ExitCode != want[i].ExitCode {
			t.Errorf("entry %d = %+v, want %+v", i+1, g, want[i])
		}
	}
}

// TestParseScriptQuotedComment: a comment may follow a quoted value; text
// after the closing quote that is not a comment is an error.
func TestParseScriptQuotedComment(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ src, reply, err string }{
		{"- reply: \"a # b\"   # c\n", "a # b", ""},
		{"- reply: 'it''s'  # c\n", "it's", ""},
		{"- reply: \"q\\\"\" # c\n", "q\"", ""},
		{"- reply: \"a\" b\n", "", "line 1: unexpected text after the quoted string"},
		{"- reply: 'a' b\n", "", "line 1: unexpected text after the quoted string"},
		{"- reply: \"a\"#b\n", "", "line 1: unexpected text after the quoted string"},
		{"- reply: \"a\n", "", "line 1: bad double-quoted string"},
		{"- reply: 'a\n", "", "line 1: unterminated single-quoted string"},
	} {
		got, err := ParseScript(tt.src)
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseScript(%q) = %+v, %v, want the error %q", tt.src, got, err, tt.err)
			}
		case err != nil || len(got) != 1 || got[0].Reply != tt.reply:
			t.Errorf("ParseScript(%q) = %+v, %v, want the reply %q", tt.src, got, err, tt.reply)
		}
	}
}
