package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"smith/source"
)

func TestReadContextFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	deep := strings.Repeat(`{"a":`, 200) + "1" + strings.Repeat("}", 200)
	tests := []struct {
		name, path, want string
		code             source.Code
	}{
		{"missing", filepath.Join(dir, "nope.json"), "--context-file " + filepath.Join(dir, "nope.json") + ": no such file", source.EUsage},
		{"trailing comma", write("trail.json", `{"a": 1,}`), "trail.json:1:9: expected a key in double quotes, found '}': a trailing comma before it?", source.EParse},
		{"a list", write("list.json", `[1]`), "list.json:1:1: the top level must be an object", source.ESchema},
		{"too deep", write("deep.json", deep), "deep.json:", source.EParse},
		{"not JSON", write("text.json", "ok"), "text.json:1:1: ", source.EParse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ReadContextFile(tt.path)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ReadContextFile = %v, %v; want an error containing %q", m, err, tt.want)
			}
			// One code, the file's position after the flag: no second
			// code inside the message.
			if got := source.CodeOf(err, ""); got != tt.code {
				t.Errorf("ReadContextFile: code %q, want %s", got, tt.code)
			}
			if strings.Contains(err.Error(), "error: E_") {
				t.Errorf("ReadContextFile = %v: a second code inside the message", err)
			}
		})
	}
	m, err := ReadContextFile(write("ok.json", `{"name": "x", "n": 2, "deep": {"k": [true]}}`))
	if err != nil || m["name"] != "x" || m["n"] != 2.0 || m["deep"].(map[string]any)["k"].([]any)[0] != true {
		t.Errorf("ReadContextFile(ok) = %v, %v", m, err)
	}
}
