package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"smith/internal/refusalscan"
)

// TestUsageErrorsOneForm: every usage refusal of every command has the one
// form "smithvm COMMAND: E_USAGE: message" (refuse, shellcomp.Refuse): an
// unknown flag and a wrong number of arguments of each command of the
// table, an unknown command, and, in the source, no message that names
// E_USAGE (or another code, through source.CodeOf) is printed by another
// function.
func TestUsageErrorsOneForm(t *testing.T) {
	base := t.TempDir()
	p := (&env{}).program()
	check := func(args []string, name string, mustRefuse bool) {
		t.Helper()
		var out, errb bytes.Buffer
		st := run(args, strings.NewReader(""), &out, &errb)
		form := regexp.MustCompile(`^` + regexp.QuoteMeta(name) + `: E_USAGE: \S`)
		seen := false
		for _, line := range strings.Split(errb.String(), "\n") {
			if strings.Contains(line, "E_USAGE") {
				seen = true
				if !form.MatchString(line) {
					t.Errorf("smithvm %s: usage refusal %q is not in the form %q", strings.Join(args, " "), line, name+": E_USAGE: ...")
				}
			}
		}
		if mustRefuse && (!seen || st != 2) {
			t.Errorf("smithvm %s = exit %d, stderr %q; want exit 2 and %q", strings.Join(args, " "), st, errb.String(), name+": E_USAGE: ...")
		}
	}
	for _, c := range p.Commands {
		name := "smithvm " + c.Name
		check([]string{c.Name, "--no-such-flag"}, name, true)
		check([]string{c.Name, "--base", base, "x1", "x2", "x3", "x4", "x5"}, name, c.Name != "doctor")
	}
	check([]string{"nosuchcommand"}, "smithvm", true)

	// The source: a message that names E_USAGE is printed by refuse, and
	// any other code by fail or failErr.
	stray, err := refusalscan.Stray(".", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stray {
		t.Errorf("%s, not by refuse, fail or failErr", s)
	}
}

// TestNumberFlags: a number flag below its least value is refused, not read
// as the default (--max-steps 0 used to run with 10,000), and one that is
// no number says so in words.
func TestNumberFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "w.yaml", "--max-steps", "0"}, "smithvm run: E_USAGE: --max-steps 0: must be at least 1 (the default is 10000)\n"},
		{[]string{"resume", "r1", "--max-steps=-5"}, "smithvm resume: E_USAGE: --max-steps -5: must be at least 1 (the default is 10000)\n"},
		{[]string{"run", "w.yaml", "--max-parallel", "-1"}, "smithvm run: E_USAGE: --max-parallel -1: must be at least 0 (0, the default, caps nothing)\n"},
		{[]string{"run", "w.yaml", "--max-steps", "x"}, "smithvm run: E_USAGE: invalid argument \"x\" for \"--max-steps\" flag: want a whole number (see --help)\n"},
	} {
		var out, errb bytes.Buffer
		if st := run(tt.args, strings.NewReader(""), &out, &errb); st != 2 || errb.String() != tt.want {
			t.Errorf("smithvm %s = exit %d, stderr %q; want exit 2, %q", strings.Join(tt.args, " "), st, errb.String(), tt.want)
		}
	}
}

// TestFailShowsControlCharacters: a refusal may quote a name a model chose
// (merge's untracked files in the way): its control characters reach the
// terminal as escapes, never as a sequence it acts on.
func TestFailShowsControlCharacters(t *testing.T) {
	var b strings.Builder
	e := &env{name: "smithvm merge", stderr: &b}
	if st := e.refuse("untracked files in the way (%s)", "a\x1b]0;PWNED\x07b.txt"); st != 2 {
		t.Fatalf("refuse = %d, want 2", st)
	}
	if got, want := b.String(), `smithvm merge: E_USAGE: untracked files in the way (a\x1b]0;PWNED\x07b.txt)`+"\n"; got != want {
		t.Errorf("stderr = %q, want %q", got, want)
	}
}
