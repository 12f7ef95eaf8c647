//go:build !nodev

package main

import (
	"errors"
	"strings"
	"testing"

	"go.temporal.io/server/common/log/tag"
)

// TestDevLoggerStopsOnFatal: the dev server's Temporal logger drops the
// levels below Panic, and says a Fatal with its tags (the logger's own
// first) before it exits 1; a Panic is said and panics.
func TestDevLoggerStopsOnFatal(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	code := -1
	l := &devLogger{w: &b, exit: func(c int) { code = c }}
	l.Info("started")
	l.Error("an error the server goes on from")
	if b.Len() != 0 || code != -1 {
		t.Fatalf("below Panic: printed %q, exit %d", b.String(), code)
	}
	l.With(tag.NewStringTag("service", "matching")).Fatal("failed to start ringpop", tag.Error(errors.New("join timed out")))
	want := "smith-temporal dev: Temporal server fatal error: failed to start ringpop (service=matching, error=join timed out)\n"
	if b.String() != want || code != 1 {
		t.Errorf("Fatal printed %q and exited %d, want %q and 1", b.String(), code, want)
	}
	b.Reset()
	defer func() {
		if r := recover(); r == nil || !strings.Contains(b.String(), "Temporal server panic: bad state") {
			t.Errorf("Panic: recovered %v, printed %q", r, b.String())
		}
	}()
	l.Panic("bad state")
}
