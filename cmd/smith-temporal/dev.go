package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/spf13/pflag"

	"smith/internal/shellcomp"
	"smith/source"
)

// devVals holds the flags of the dev command.
type devVals struct {
	db, namespace string
	port          int
}

func devFlags(v *flagVals, stderr io.Writer) *pflag.FlagSet {
	fs := newFlags("dev", "[--db FILE] [--port N] [--namespace NS]", "Starts a Temporal development server on 127.0.0.1 (the same embedded server\nSmith's tests use: SQLite, one process), with its state in FILE, so that the\nTemporal mode can be tried with nothing else installed. Prints its address;\nstops on Ctrl-C (SIGINT) or SIGTERM. Runs and halts survive a restart on the\nsame FILE. Not for production: one process, no UI, no authentication.\n", stderr)
	fs.StringVar(&v.dev.db, "db", filepath.Join(".orchestrator", "temporal-dev.db"), "the SQLite file holding the server's state (created when missing)")
	fs.IntVar(&v.dev.port, "port", 7233, "the frontend's port on 127.0.0.1")
	fs.StringVar(&v.dev.namespace, "namespace", "default", "the namespace to create")
	return fs
}

func cmdDev(args []string, stdout, stderr io.Writer) int {
	var v flagVals
	fs := devFlags(&v, stderr)
	if st, done := parse(fs, args, 0, stdout, stderr); done {
		return st
	}
	d := v.dev
	if d.port < 1 || d.port > 65535 {
		return shellcomp.Refuse(stderr, "smith-temporal dev", "--port %d: want 1-65535", d.port)
	}
	db, err := filepath.Abs(d.db)
	if err == nil {
		err = os.MkdirAll(filepath.Dir(db), 0o755)
	}
	if err != nil {
		fmt.Fprintf(stderr, "smith-temporal dev: %v\n", err)
		return source.ExitConfig
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	addr := "127.0.0.1:" + strconv.Itoa(d.port)
	ready := func() {
		fmt.Fprintf(stdout, "smith-temporal dev: Temporal server on %s, namespace %s, state in %s (Ctrl-C stops it)\n", addr, d.namespace, db)
		fmt.Fprintf(stdout, "  smith-temporal worker --address %s &\n  smith-temporal run FILE --address %s\n", addr, addr)
	}
	if err := serveDev(ctx, db, d.port, d.namespace, ready); err != nil {
		fmt.Fprintf(stderr, "smith-temporal dev: %v\n", err)
		return source.ExitExec
	}
	fmt.Fprintln(stdout, "smith-temporal dev: stopped")
	return 0
}
