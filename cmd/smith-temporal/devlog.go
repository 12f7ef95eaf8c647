//go:build !nodev

package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// devLogger is the embedded Temporal server's logger in `smith-temporal
// dev`: it drops what the server logs at every level below Panic, as the
// no-op logger did, but a Panic or Fatal, which the server logs where it
// cannot go on (ringpop that did not start, a store it cannot open), is
// printed with its tags and then panics or exits 1. The no-op logger's
// Fatal returned, and the server went on to a nil pointer with the cause
// gone.
type devLogger struct {
	w    io.Writer
	exit func(int)
	tags []tag.Tag
}

func newDevLogger() *devLogger { return &devLogger{w: os.Stderr, exit: os.Exit} }

func (*devLogger) Debug(string, ...tag.Tag)  {}
func (*devLogger) Info(string, ...tag.Tag)   {}
func (*devLogger) Warn(string, ...tag.Tag)   {}
func (*devLogger) Error(string, ...tag.Tag)  {}
func (*devLogger) DPanic(string, ...tag.Tag) {}

// Panic prints msg and panics, as Temporal's own logger does.
func (l *devLogger) Panic(msg string, tags ...tag.Tag) {
	line := l.line("panic", msg, tags)
	fmt.Fprintln(l.w, line)
	panic(line)
}

// Fatal prints msg and exits 1.
func (l *devLogger) Fatal(msg string, tags ...tag.Tag) {
	fmt.Fprintln(l.w, l.line("fatal error", msg, tags))
	l.exit(1)
}

// With returns the logger with tags added to every line it prints.
func (l *devLogger) With(tags ...tag.Tag) log.Logger {
	c := *l
	c.tags = append(append([]tag.Tag(nil), l.tags...), tags...)
	return &c
}

// line is "smith-temporal dev: Temporal server LEVEL: MSG (k=v, ...)".
func (l *devLogger) line(level, msg string, tags []tag.Tag) string {
	var b strings.Builder
	fmt.Fprintf(&b, "smith-temporal dev: Temporal server %s: %s", level, msg)
	all := append(append([]tag.Tag(nil), l.tags...), tags...)
	for i, t := range all {
		sep := ", "
		if i == 0 {
			sep = " ("
		}
		fmt.Fprintf(&b, "%s%s=%v", sep, t.Key(), t.Value())
	}
	if len(all) > 0 {
		b.WriteString(")")
	}
	return b.String()
}

var _ log.Logger = (*devLogger)(nil)
