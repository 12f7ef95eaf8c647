package agent

import (
	"os"
	"strings"
	"testing"

	"smith/lang"
	"smith/workers/provider"
	"smith/workers/step"
	"smith/workers/steprun"
)

// TestTemplateKeyCatalog: the keys a provider template may use without
// declaring them (lang.TemplateKeys, what the checker accepts) are exactly
// the keys a provider step fills.
func TestTemplateKeyCatalog(t *testing.T) {
	vars := providerVars(&step.Request{}, provider.Provider{}, steprun.Paths{}, "p", "f")
	if len(vars) != len(lang.TemplateKeys) {
		t.Fatalf("workers fills %d template keys, lang.TemplateKeys has %d", len(vars), len(lang.TemplateKeys))
	}
	for i, k := range lang.TemplateKeys {
		if vars[i].Key != k {
			t.Errorf("template key %d: workers fills %q, lang.TemplateKeys says %q", i, vars[i].Key, k)
		}
	}
}

// TestStderrOf: past the cap, a failure is classified from the captured
// head and the log's last stderrTail bytes from a line's start; a log that
// fits in both is read whole, as before.
func TestStderrOf(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	small := "== try 1\nfirst\nlast line\n"
	if got := stderrOf(write("small", small), "first\n"); got != small {
		t.Errorf("stderrOf(small log) = %q, want the whole log %q", got, small)
	}
	head := "Error executing tool write_file: denied\n" + strings.Repeat("h", 100) + "\n"
	middle := strings.Repeat("middle line\n", 3*stderrTail/12)
	end := strings.Repeat("x", 50) + "\nERROR: unexpected status 429 Too Many Requests\n"
	got := stderrOf(write("big", head+middle+end), head)
	if !strings.HasPrefix(got, head+"\n") || !strings.HasSuffix(got, end) || len(got) > len(head)+1+stderrTail {
		t.Errorf("stderrOf(big log) = %d bytes starting %q, want the head, a newline and at most %d bytes of the end", len(got), got[:min(len(got), 60)], stderrTail)
	}
	if tail := strings.TrimPrefix(got, head+"\n"); !strings.HasPrefix(tail, "middle line\n") {
		t.Errorf("stderrOf(big log)'s tail starts %q, want a whole line", tail[:min(len(tail), 20)])
	}
	if got := stderrOf(dir+"/missing", head); got != head {
		t.Errorf("stderrOf(missing log) = %q, want the head", got)
	}
}
