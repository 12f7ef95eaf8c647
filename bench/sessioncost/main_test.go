package main

import (
	"os"
	"strings"
	"testing"
)

// TestTwins: the program still applies to the shipped team: its fresh twin
// differs where the notes are, and the mock scripts give every call of the
// team a rule.
func TestTwins(t *testing.T) {
	b, err := os.ReadFile("../../examples/team/team.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := freshTwin(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(fresh, "session: continue") || strings.Count(fresh, "${steps.Design.output}") != strings.Count(string(b), "${steps.Design.output}")+3 {
		t.Errorf("the fresh twin:\n%s", fresh)
	}
	rules, err := mockRules("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range calls {
		found := false
		for _, r := range rules {
			found = found || strings.Contains(c.marker, r.Match) || strings.Contains(r.Match, c.marker)
		}
		if !found {
			t.Errorf("no rule answers %s (%q)", c.step, c.marker)
		}
	}
}
