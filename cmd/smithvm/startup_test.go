package main

import (
	"runtime/debug"
	"testing"
)

// TestStartupGC checks startupGC's percent: raised until done, the default
// after it, and left alone when the user set GOGC. (Not parallel: the
// percent is the process's.)
func TestStartupGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	percent := func() int { p := debug.SetGCPercent(-1); debug.SetGCPercent(p); return p }
	e := &env{lookup: func(string) (string, bool) { return "", false }}
	done := e.startupGC()
	if got := percent(); got != 400 {
		t.Errorf("GC percent during the start = %d, want 400", got)
	}
	done()
	if got := percent(); got != 100 {
		t.Errorf("GC percent after the start = %d, want 100", got)
	}
	debug.SetGCPercent(150)
	e = &env{lookup: func(k string) (string, bool) { return "150", k == "GOGC" }}
	done = e.startupGC()
	if got := percent(); got != 150 {
		t.Errorf("GC percent with GOGC=150 set = %d, want 150 (the user's)", got)
	}
	done()
	if got := percent(); got != 150 {
		t.Errorf("GC percent with GOGC=150 set, after the start = %d, want 150", got)
	}
}
