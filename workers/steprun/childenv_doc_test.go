package steprun

import (
	"os"
	"strings"
	"testing"
)

// TestEnvDocumented: docs/workflow-reference.md lists the variables every
// child inherits, in order, as inheritedEnv holds them.
func TestEnvDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/workflow-reference.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(doc), "### A step's environment\n")
	if !ok {
		t.Fatal("docs/workflow-reference.md has no section \"### A step's environment\"")
	}
	sec, _, _ = strings.Cut(sec, "\n#")
	var want []string
	for _, name := range inheritedEnv {
		want = append(want, "`"+name+"`")
	}
	list := strings.Join(want[:len(want)-1], ", ") + " and " + want[len(want)-1]
	if !strings.Contains(strings.Join(strings.Fields(sec), " "), list) {
		t.Errorf("docs/workflow-reference.md's step environment does not list %s", list)
	}
}
