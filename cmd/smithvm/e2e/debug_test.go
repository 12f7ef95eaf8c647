package e2e

import (
	"strings"
	"testing"
)

// TestLogLevelDebug: --log-level debug adds DEBUG lines and events for
// variable substitutions (secrets masked), condition evaluations and
// transition lookups; without it there are none; a bad level is exit 2.
func TestLogLevelDebug(t *testing.T) {
	p := newProj(t)
	wf := p.write("dbg.yaml", workflow("log_level_debug.yaml"))
	env := baseEnv("TOKEN=s3cret")
	r := p.vmEnv(env, "run", wf, "--log-level", "debug")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{
		`DEBUG: Step 'Hello': ${context.who} = "world"`,
		`DEBUG: Step 'Hello': ${env.TOKEN} = "***"`,
		`DEBUG: Step 'Hello': transition for SIGNAL:SUCCESS: go to 'Last'`,
		`DEBUG: Step 'Last': condition (when) is false`,
	} {
		if !r.has(want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "s3cret") {
		t.Errorf("a secret reached the console:\n%s", r.stderr)
	}
	evs := events(t, p, r.runID())
	if n := count(evs, "debug"); n < 4 {
		t.Errorf("%d debug events in events.jsonl, want at least 4", n)
	}
	for _, e := range evs {
		if e["event"] == "debug" && e["level"] != "DEBUG" {
			t.Errorf("debug event with level %v", e["level"])
		}
	}
	r = p.vmEnv(env, "run", wf)
	if strings.Contains(r.stderr, "DEBUG:") || count(events(t, p, r.runID()), "debug") != 0 {
		t.Errorf("DEBUG output without --log-level debug:\n%s", r.stderr)
	}
	r = p.vmEnv(env, "run", wf, "--log-level", "loud")
	if r.code != 2 || !strings.Contains(r.stderr, `want info or debug, got "loud"`) {
		t.Errorf("--log-level loud: exit %d\n%s", r.code, r.stderr)
	}
}
