package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/pflag"

	"smith/cmd/smithvm/serve"
	"smith/source"
	"smith/vm"
	"smith/workers"
)

func (e *env) cmdServe(args []string) int {
	var c flagVals
	fs := e.serveFlags(&c)
	addr, token := &c.addr, &c.token
	if st, done := e.parse(fs, args, 0); done {
		return st
	}
	if *token == "" {
		if t, ok := e.lookup("SMITH_SERVE_TOKEN"); ok {
			*token = t
		}
	}
	if err := serve.CheckAddr(*addr, *token); err != nil {
		e.failErr(err, source.EUsage, "")
		return source.ExitConfig
	}
	proj, err := e.project(c.base)
	if err != nil {
		e.failErr(err, source.EUsage, "")
		return source.ExitConfig
	}
	ctx, cancel := signalContext()
	defer cancel()
	// The stop signal is for the runs this server drives (their own
	// watches read it); one that arrives when none is driven must not end
	// the server.
	e.catchStop()
	log := &lockedWriter{w: e.stderr}
	var resumes sync.WaitGroup
	srv, err := serve.New(serve.Config{
		Store: proj.store,
		Dirs:  proj.dirs,
		Token: *token,
		Env:   e.lookup,
		// The presets' variables are masked like secrets (CONTRACT 5).
		Masked: workers.Local{}.PresetVars().Values(e.lookup),
		Resume: func(id, signal, note string) error {
			return e.serveResume(ctx, &resumes, log, proj.base, id, signal, note)
		},
		Diff: func(ctx context.Context, id, commit string) (string, error) {
			st, _ := proj.store.ReadState(id) // for its secrets
			if commit == "" {
				return workers.Diff(ctx, proj.dirs, id, false, e.runMasker(st), e.lookup)
			}
			return workers.ShowCommit(ctx, proj.dirs, commit, false, e.runMasker(st), e.lookup)
		},
		Stop: func(id string) (bool, error) { return stopRun(proj.store, id, false) },
	})
	if err != nil {
		fmt.Fprintf(e.stderr, "smithvm serve: %v\n", err)
		return source.ExitExec
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		hint := ""
		if errors.Is(err, syscall.EADDRINUSE) {
			// Another viewer, or another program: a port of its own.
			hint = " (another program listens there: choose another port with --addr 127.0.0.1:PORT, or --addr 127.0.0.1:0 for a free one)"
		}
		return e.refuse("%v%s", err, hint)
	}
	fmt.Fprintf(log, "INFO: Serving the runs under %s at http://%s/ (Ctrl-C stops).\n", proj.base, l.Addr())
	err = serve.Serve(ctx, l, srv)
	resumes.Wait()
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(e.stderr, "smithvm serve: %v\n", err)
		return source.ExitExec
	}
	return 0
}

// serveResume is the viewer's resume: the code of 'smithvm resume ID
// --signal S --note N', whose refusal (E_RUN_LOCKED, a workflow that no
// longer compiles) it returns, and whose run it continues in the
// background, writing its console lines to log.
func (e *env) serveResume(ctx context.Context, wg *sync.WaitGroup, log io.Writer, base, id, signal, note string) error {
	msgs := &capture{}
	re := *e
	re.stdout = io.Discard
	re.stderr = io.MultiWriter(msgs, log)
	c := &common{base: base, maxSteps: vm.DefaultMaxSteps, signal: signal, note: note}
	cont, status, err := re.openResume(c, id)
	msgs.stop()
	if cont == nil {
		if status == 0 {
			return nil
		}
		text := strings.TrimSpace(msgs.String())
		if err != nil {
			return &resumeError{code: source.CodeOf(err, source.EInternal), msg: text}
		}
		return errors.New(text)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		cont(ctx)
	}()
	return nil
}

// resumeError is a refused resume: what smithvm resume printed, with the
// code.
type resumeError struct {
	code source.Code
	msg  string
}

func (r *resumeError) Error() string        { return r.msg }
func (r *resumeError) ErrCode() source.Code { return r.code }

// capture keeps what is written to it until stop: the messages of a
// refused resume, not the console of the run that follows.
type capture struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	stopped bool
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopped {
		c.buf.Write(p)
	}
	return len(p), nil
}

func (c *capture) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
}

func (c *capture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// lockedWriter serialises the writes of the server and its resumes.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (e *env) serveFlags(v *flagVals) *pflag.FlagSet {
	fs := e.newFlags("serve", "[flags]", `Serves a web viewer of the runs under BASE: the list of runs, each run's
graph coloured by state and updated live, its steps, logs, output files,
payload and events, and a form that resumes a halted run (as 'smithvm resume
--signal --note' does). JSON API: /api/runs, /api/runs/ID (as 'status
--json'), /api/runs/ID/graph (DOT, as 'graph'), /api/runs/ID/events
(server-sent events, id = event_seq).

It listens on loopback only unless given a token; any other address needs
--token (or SMITH_SERVE_TOKEN), and every request must then carry it:
'Authorization: Bearer T', or open http://ADDR/?token=T once in the browser
(it sets a cookie). It reads runs without taking their locks. Ctrl-C stops
it; resumes it started are interrupted (state saved, resumable).
`)
	v.addBase(fs)
	fs.StringVar(&v.addr, "addr", serve.DefaultAddr, "listen on `HOST:PORT` (loopback unless --token is given)")
	fs.StringVar(&v.token, "token", "", "require `T` on every request (default: $SMITH_SERVE_TOKEN)")
	return fs
}
