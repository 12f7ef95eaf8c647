package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"smith/workers/text"
)

const (
	// DefaultKillGrace is the time between SIGTERM and SIGKILL (CONTRACT.md 3.5).
	DefaultKillGrace = 10 * time.Second
	// DefaultMemCap is the in-memory cap per captured stream.
	DefaultMemCap = 1 << 20
	// pipeDrainDelay bounds how long Run waits for the output pipes to close
	// after the child has exited; a process that left the group or survived it
	// may hold them open forever.
	pipeDrainDelay = 2 * time.Second
	// ExitTimeout is the exit code of a process that ran out of time.
	ExitTimeout = 124
	// logPerm is the mode of the spill and stderr log files.
	logPerm = 0o600
)

// A Spec says how to run one process. The zero values of Timeout, KillGrace
// and MemCap mean the defaults.
type Spec struct {
	Argv        []string      // argv only, never a shell; Argv[0] is looked up in the PATH of Env
	Dir         string        // working directory
	Env         []string      // the child's whole environment ("K=V"); nil means empty, never the parent's
	StdinPath   string        // file piped to stdin; "" means /dev/null
	Stdin       *os.File      // an open file piped to stdin instead of StdinPath (the caller closes it)
	Timeout     time.Duration // 0 means none
	KillGrace   time.Duration // SIGTERM to the group, SIGKILL after this; 0 means 10s
	MemCap      int           // in-memory cap per stream in bytes; 0 means 1 MiB
	StdoutSpill string        // created only when stdout exceeds MemCap; it then holds the whole stream
	StderrLog   string        // when set, holds the whole of stderr; created at the first byte (a stale one is removed when there is none)
	Mask        *text.Masker  // applied to everything captured before it is stored anywhere
	Live        io.Writer     // optional live copy of both streams (masked), for -v
	// Lines, when set, gets the whole (masked) lines of either stream as
	// they arrive, for a live log: one or more lines a call, those of one
	// read of the pipe, each ended by its newline but perhaps the last (a
	// stream's last line without one, or a part of a line longer than
	// 64 KiB); EachLine splits them. It returns false once it wants no
	// more: that stream then stops being split into lines. It is called
	// from both streams' goroutines.
	Lines  func(s Stream, lines []byte) bool
	Stdout io.Writer // optional sink for the whole (masked) stdout, e.g. an output_file
	// StderrHeader, when set, is written to StderrLog before the child's
	// stderr; the log is appended to, never truncated, so it keeps every
	// try of a step.
	StderrHeader string
	// RunRoot, when set, records the step's process group under
	// a record file of RUN_ROOT while it runs, so KillLeftovers finds it
	// after a crash.
	RunRoot string
	// StdoutFile, when set, is created and given to the child as its stdout
	// itself, not a pipe (node CLIs cut writes to a pipe short when they
	// exit): nothing of stdout is captured, masked or copied; the caller
	// reads and masks the file.
	StdoutFile string
	// DieWithParent has the child killed (SIGKILL) when this process dies
	// (Linux: PR_SET_PDEATHSIG), so that a command of Smith's own (git)
	// never outlives a smithvm killed mid-way to race the resume that
	// follows, and a step's leader does not run on unwatched. Only the
	// child itself: what it started lives on in its process group (until
	// KillLeftovers). The kernel sends the signal when the thread that
	// forked the child exits, not the process; Go ends a thread before its
	// process only when a goroutine locked to it (runtime.LockOSThread)
	// exits locked, which nothing in smithvm does
	// (TestNoThreadExitsBeforeTheProcess).
	DieWithParent bool
}

// A Stream names one of a process's output streams.
type Stream uint8

// The streams Spec.Lines names.
const (
	Stdout Stream = iota + 1
	Stderr
)

// EachLine calls f with each line of lines, a block that Spec.Lines
// gets, without its newline.
func EachLine(lines []byte, f func(line []byte)) {
	for len(lines) > 0 {
		i := bytes.IndexByte(lines, '\n')
		if i < 0 {
			f(lines)
			return
		}
		f(lines[:i])
		lines = lines[i+1:]
	}
}

// A lineFunc passes what a lineSink writes, whole lines, to Spec.Lines.
type lineFunc struct {
	s Stream
	f func(Stream, []byte) bool
}

// errLinesDone is what a lineFunc returns once Spec.Lines wants no more
// lines: the capture then drops it as a sink (not an error of the step).
var errLinesDone = errors.New("no more lines wanted")

func (l lineFunc) Write(p []byte) (int, error) {
	if !l.f(l.s, p) {
		return len(p), errLinesDone
	}
	return len(p), nil
}

// A Result is what Run observed. Every captured byte has been masked.
type Result struct {
	ExitCode        int    // 124 on timeout, 128+signo when killed by a signal, -1 if it could not start
	TimedOut        bool   // the Timeout expired (never set for a cancelled context)
	Stdout, Stderr  string // the whole stream when it fits in MemCap, else its first MemCap bytes
	StdoutTruncated bool   // stdout exceeded MemCap: Stdout holds its first MemCap bytes
	StderrTruncated bool   // stderr exceeded MemCap: Stderr holds its first MemCap bytes
	StdoutSpill     string // the spill file, set when stdout exceeded MemCap and StdoutSpill was given
	Duration        time.Duration
	StartErr        error // the process could not be started (not found, not executable, no log); ExitCode is -1
	IOErr           error // the first error writing a spill file, the stderr log, Stdout or Live; the streams were still drained
}

// Run runs one process to completion and captures its output. The process
// runs in its own process group. When the timeout expires or ctx is done, the
// whole group gets SIGTERM and, KillGrace later, SIGKILL. Run returns only
// when every goroutine it started has finished, and it does not wait forever
// for pipes that a surviving grandchild holds open.
func Run(ctx context.Context, spec Spec) Result {
	start := time.Now()
	res := Result{ExitCode: -1}
	fail := func(err error) Result {
		res.StartErr = err
		res.Duration = time.Since(start)
		return res
	}
	if len(spec.Argv) == 0 {
		return fail(errors.New("start process: empty argv"))
	}
	if err := ctx.Err(); err != nil {
		return fail(fmt.Errorf("start %s: %w", spec.Argv[0], err))
	}
	path, err := lookPath(spec.Argv[0], spec.Env)
	if err != nil {
		return fail(err)
	}
	memCap := spec.MemCap
	if memCap <= 0 {
		memCap = DefaultMemCap
	}
	grace := spec.KillGrace
	if grace <= 0 {
		grace = DefaultKillGrace
	}

	stdin := spec.Stdin
	if stdin == nil && spec.StdinPath != "" {
		stdin, err = os.Open(spec.StdinPath)
		if err != nil {
			return fail(fmt.Errorf("open stdin: %w", err))
		}
		defer stdin.Close()
	}
	// The stderr log is created at the first byte of stderr: most steps
	// write none, and a file created per step costs more than the step's
	// bookkeeping otherwise does.
	var stderrLog *lazyLog
	if spec.StderrLog != "" {
		stderrLog = &lazyLog{path: spec.StderrLog, header: spec.StderrHeader}
		defer stderrLog.close()
	}

	var stdoutFile *os.File
	if spec.StdoutFile != "" {
		stdoutFile, err = os.OpenFile(spec.StdoutFile, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, logPerm)
		if err != nil {
			return fail(fmt.Errorf("create stdout file: %w", err))
		}
		defer stdoutFile.Close()
	}

	// While few steps run, the step's own goroutine reads its pipes and
	// waits for its leader (takeDirect); past that, the shared goroutine
	// does (exitwait_linux.go).
	own := takeDirect()
	if own {
		defer dropDirect()
	}

	// Stdout that nothing needs while it is written (no secret to mask, no
	// live copy, no output_file) goes to an unnamed file in the spill's
	// directory instead of a pipe: the child writes straight to the file
	// system (a cat of a big file copies inside the kernel), and no
	// goroutine copies it. Run then reads back the first memCap bytes; a
	// stream over memCap becomes the spill by being named. Lines (the
	// live log) does not need a pipe either when the step waits in its own
	// goroutine: that goroutine reads what the child appended to the file
	// each time it wakes, at least every tailMaxWait (a fileTail).
	// The file is kept for the next step once the group that wrote to it
	// is gone (settled) and it did not become the spill (takeUnnamed).
	var direct *os.File
	var out *capture
	settled := false
	if stdoutFile == nil && spec.StdoutSpill != "" && spec.Stdout == nil && spec.Live == nil && (spec.Lines == nil || own) && spec.Mask.Empty() {
		dir := filepath.Dir(spec.StdoutSpill)
		if direct = takeUnnamed(dir); direct != nil {
			defer func() {
				// After reapOrphans (deferred later, so run before this).
				if settled && !out.named && res.IOErr == nil {
					keepUnnamed(dir, direct)
				} else {
					direct.Close()
				}
			}()
		}
	}

	errs := &firstErr{}
	out = &capture{memCap: memCap, spillPath: spec.StdoutSpill, errs: errs}
	out.addSink(spec.Stdout)
	errCap := &capture{memCap: memCap, errs: errs}
	if stderrLog != nil {
		errCap.addSink(stderrLog)
	}
	// Both streams go to Live a whole line at a time: a read of a pipe
	// may end inside a line, and the other stream's lines must not land
	// in the middle of it.
	var liveOut, liveErr *lineSink
	if spec.Live != nil {
		live := &lockedWriter{w: spec.Live}
		liveOut, liveErr = &lineSink{w: live}, &lineSink{w: live}
		out.addSink(liveOut)
		errCap.addSink(liveErr)
	}
	var linesOut, linesErr *lineSink
	var tail *fileTail
	if spec.Lines != nil {
		linesOut, linesErr = &lineSink{w: lineFunc{Stdout, spec.Lines}}, &lineSink{w: lineFunc{Stderr, spec.Lines}}
		if direct != nil {
			tail = &fileTail{f: direct, w: linesOut}
			defer tail.release()
		} else {
			out.addSink(linesOut)
		}
		errCap.addSink(linesErr)
	}
	stdoutW := spec.Mask.Writer(out)
	stderrW := spec.Mask.Writer(errCap)

	env, err := childEnv(spec.Env)
	if err != nil {
		return fail(fmt.Errorf("start %s: %w", spec.Argv[0], err))
	}
	sys := &syscall.SysProcAttr{Setpgid: true}
	if spec.DieWithParent {
		dieWithParent(sys)
	}
	if stdin == nil {
		stdin = devNull() // opened once, not for every step (nil: startSpawn opens it)
	}
	outs := [2]childOut{{file: stdoutFile, w: stdoutW}, {w: stderrW}}
	if direct != nil {
		outs[0].file = direct
	}
	// A stream that goes to files and memory only is read by the shared
	// goroutine that also waits for the leaders (exitwait_linux.go): the
	// child gets the write end of its pipe as a file. One with a writer
	// that may block (Live, Stdout) is copied by a goroutine of its own
	// (startSpawn). While few steps run, the step's own goroutine reads
	// them and waits for its leader instead (own).
	var shared []*pipeStream
	var childEnds []*os.File
	if spec.Live == nil && spec.Stdout == nil {
		for i := range outs {
			if outs[i].file != nil {
				continue
			}
			if ps, child := newPipeStream(outs[i].w, own); ps != nil {
				shared = append(shared, ps)
				childEnds = append(childEnds, child)
				outs[i].file = child
			}
		}
	}
	becomeSubreaper()
	started := bootTicks() // before the fork: no later than the leader's start
	var sp *spawn
	err = startStep(func() (int, error) {
		var err error
		sp, err = startSpawn(path, spec.Argv, env, spec.Dir, sys, stdin, outs)
		if err != nil {
			return 0, err
		}
		return sp.pid, nil
	})
	// The child has its ends of the shared pipes (or never will): the
	// pipes reach EOF when it and what it started close them.
	for _, f := range childEnds {
		f.Close()
	}
	if err != nil {
		drainStreams(shared, 0)
		return fail(fmt.Errorf("start %s: %w", spec.Argv[0], err))
	}
	pgid := sp.pid
	defer dropLeader(pgid)
	if spec.RunRoot != "" {
		if rec, err := recordGroup(spec.RunRoot, pgid, started); err == nil && rec != nil {
			defer forgetGroup(rec)
		}
	}
	// The watcher stops the group on timeout or cancellation. It is no
	// goroutine of its own: a timer and a context callback start the stop
	// only when it is needed, so the common step pays no extra wake-up.
	w := newWatcher(ctx, pgid, spec.Timeout, grace)
	defer reapOrphans()
	// Nothing the step started outlives it: once the leader has exited
	// (success included), the rest of its group is killed, which also
	// closes the pipes a background child held; then the leader is reaped
	// and the output collected, and the orphans that left the group are
	// killed too.
	if own {
		waitDirect(sp.pid, sp.pidfd, shared, tail)
	} else {
		waitExit(sp.pid, sp.pidfd)
	}
	killGroup(pgid)
	status := sp.reap()
	sp.awaitCopies(pipeDrainDelay)
	timedOut := w.done()
	settled = settleGroup(pgid) // kills the group again, until it is empty
	drainStreams(shared, pipeDrainDelay)

	for _, w := range []io.Closer{stdoutW, stderrW} {
		if err := w.Close(); err != nil {
			errs.set(err)
		}
	}
	if spec.Live != nil {
		// The streams' last lines without a newline.
		for _, l := range []*lineSink{liveOut, liveErr} {
			if err := l.flush(); err != nil {
				errs.set(err)
			}
		}
	}
	if spec.Lines != nil {
		// What the child appended to the unnamed file since the last look,
		// now that nothing of the group writes any more.
		tail.read()
		_ = linesOut.flush()
		_ = linesErr.flush()
	}
	if err := out.close(); err != nil {
		errs.set(err)
	}
	if direct != nil {
		if err := out.collect(direct); err != nil {
			errs.set(err)
		}
	}

	res.Duration = time.Since(start)
	res.ExitCode = exitStatus(status)
	if timedOut {
		res.ExitCode = ExitTimeout
		res.TimedOut = true
	}
	res.Stdout, res.StdoutTruncated = out.mem.String(), out.truncated
	res.Stderr, res.StderrTruncated = errCap.mem.String(), errCap.truncated
	if out.spill != nil || out.named {
		res.StdoutSpill = spec.StdoutSpill
	}
	res.IOErr = errs.get()
	return res
}

// devNull is /dev/null, open for reading for the life of the process and
// given to every step without input as its stdin (nil if it cannot be
// opened: exec then opens it itself).
var devNull = sync.OnceValue(func() *os.File {
	f, err := os.Open(os.DevNull)
	if err != nil {
		return nil
	}
	return f
})

// hurry is closed by Hurry.
var (
	hurry     = make(chan struct{})
	hurryOnce sync.Once
)

// Hurry cuts short the grace period between SIGTERM and SIGKILL of every
// step being stopped, now and later (a second Ctrl-C): their groups get
// SIGKILL at once.
func Hurry() { hurryOnce.Do(func() { close(hurry) }) }

// A watcher stops a step's process group when its timeout expires or its
// context is done: SIGTERM to the group, then SIGKILL after the grace
// period, at Hurry, or once the step is done, so that no member of the
// group outlives Run.
type watcher struct {
	pgid    int
	grace   time.Duration
	stopCtx func() bool
	timer   *time.Timer

	mu       sync.Mutex
	finished bool          // done was called: a late timer or cancellation does nothing
	timedOut bool          // the timeout fired (not the context)
	exited   chan struct{} // closed by done
	killer   chan struct{} // closed when the SIGKILL goroutine ends; nil if none started
}

func newWatcher(ctx context.Context, pgid int, timeout, grace time.Duration) *watcher {
	w := &watcher{pgid: pgid, grace: grace, exited: make(chan struct{})}
	w.stopCtx = context.AfterFunc(ctx, func() { w.stop(false) })
	if timeout > 0 {
		w.timer = time.AfterFunc(timeout, func() { w.stop(true) })
	}
	return w
}

// stop sends SIGTERM to the group and starts the goroutine that sends
// SIGKILL, unless the step is done or being stopped already.
func (w *watcher) stop(timedOut bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.finished || w.killer != nil {
		return
	}
	w.timedOut = timedOut
	_ = syscall.Kill(-w.pgid, syscall.SIGTERM)
	w.killer = make(chan struct{})
	go func() {
		defer close(w.killer)
		g := time.NewTimer(w.grace)
		defer g.Stop()
		select {
		case <-w.exited:
		case <-g.C:
		case <-hurry:
		}
		// ESRCH here just means the whole group is gone already.
		_ = syscall.Kill(-w.pgid, syscall.SIGKILL)
	}()
}

// done ends the watch once Wait has returned, joins the SIGKILL goroutine if
// one was started, and reports whether the timeout fired.
func (w *watcher) done() bool {
	w.stopCtx()
	if w.timer != nil {
		w.timer.Stop()
	}
	w.mu.Lock()
	w.finished = true
	close(w.exited)
	killer, timedOut := w.killer, w.timedOut
	w.mu.Unlock()
	if killer != nil {
		<-killer
	}
	return timedOut
}

// lookPath finds name as the child would: a name with a slash is used as it is
// (relative to the working directory); any other name is searched in the PATH
// of env, not the parent's. Relative PATH entries are skipped, as exec.LookPath
// refuses them too. Every lookup searches: a cache watched with inotify saved
// about 14 µs a step, and its watches cost every process that made them 4-13
// ms at its exit (the kernel waits for a grace period to free them), more
// than it saved in a run of up to about 1,000 steps.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	notFound := &exec.Error{Name: name, Err: exec.ErrNotFound}
	if name == "" {
		return "", notFound
	}
	pathVar := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathVar = v // the last one wins, as for exec
		}
	}
	dirs := filepath.SplitList(pathVar)
	for i, dir := range dirs {
		if dir == "" || !filepath.IsAbs(dir) || slices.Contains(dirs[:i], dir) {
			continue // a directory already looked in cannot have it now either
		}
		if p := filepath.Join(dir, name); lookExecutable(p) {
			return p, nil
		}
	}
	return "", notFound
}

// lookExecutable is isExecutable; a test counts its calls.
var lookExecutable = isExecutable

// isExecutable reports whether path is a file this process may execute,
// as exec.LookPath checks a path with a slash (not a directory, and
// faccessat's X_OK for the effective ids, or failing that call, an x bit),
// without os.Stat's FileInfo: a step looks its command up in every PATH
// directory before the one that has it.
func isExecutable(path string) bool {
	var st syscall.Stat_t
	if syscall.Stat(path, &st) != nil || st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		return false
	}
	switch err := unix.Faccessat(unix.AT_FDCWD, path, unix.X_OK, unix.AT_EACCESS); err {
	case nil:
		return true
	case unix.ENOSYS, unix.EPERM:
		return st.Mode&0o111 != 0
	}
	return false
}

// A lazyLog is a log file opened for appending, with its header, at its
// first write: a step with no stderr adds nothing to it.
type lazyLog struct {
	path, header string
	f            *os.File
}

func (l *lazyLog) Write(p []byte) (int, error) {
	if l.f == nil {
		if len(p) == 0 {
			return 0, nil
		}
		f, err := appendLog(l.path, l.header)
		if err != nil {
			return 0, fmt.Errorf("create stderr log: %w", err)
		}
		l.f = f
	}
	return l.f.Write(p)
}

// close closes the log if a byte of stderr opened it. The log keeps the
// tries before this one: each try that wrote stderr has its part, under
// its header line (CONTRACT 12.5).
func (l *lazyLog) close() {
	if l.f != nil {
		l.f.Close()
	}
}

// createLog creates (or truncates) a log file, with its directory.
func createLog(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, logPerm)
}

// appendLog opens the log at path for appending (creating it and its
// directory) and writes header first.
func appendLog(path, header string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, logPerm)
	if err != nil {
		return nil, err
	}
	if header != "" {
		if _, err := f.WriteString(header); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// Capture reads r through mask as Run captures a step's stdout: it
// returns the first memCap bytes (DefaultMemCap when memCap <= 0), and a
// longer stream is written whole to spillPath (none when ""), truncated
// set. It is for a stream a process wrote elsewhere than to a pipe (a CLI
// that writes its reply to a file).
func Capture(r io.Reader, mask *text.Masker, memCap int, spillPath string) (out string, truncated bool, err error) {
	if memCap <= 0 {
		memCap = DefaultMemCap
	}
	c := &capture{memCap: memCap, spillPath: spillPath, errs: &firstErr{}}
	w := mask.Writer(c)
	_, err = io.Copy(w, r)
	err = errors.Join(err, w.Close(), c.close(), c.errs.get())
	return c.mem.String(), c.truncated, err
}

// A capture receives one (already masked) stream: the first memCap bytes in
// memory, everything in each sink, and, once the stream passes memCap, all of
// it in the spill file. A sink that fails is dropped and its error recorded, so
// the child is never blocked by a broken sink. Only exec's copying goroutine
// writes to a capture, and only Run reads it after Wait.
type capture struct {
	memCap int
	// mem holds the first memCap bytes; a Builder, so that the Result's
	// string is the bytes read, not a copy of them (a copy of 1 MiB costs
	// 256 fresh pages).
	mem       strings.Builder
	truncated bool
	spillPath string
	spill     *os.File
	named     bool // collect named the unnamed file the spill
	sinks     []sink
	errs      *firstErr
}

// A sink is one extra destination of a stream.
type sink struct {
	w    io.Writer
	dead bool // a write failed; the sink gets nothing more
}

func (c *capture) addSink(w io.Writer) {
	if w != nil {
		c.sinks = append(c.sinks, sink{w: w})
	}
}

func (c *capture) Write(p []byte) (int, error) {
	if !c.truncated {
		if c.mem.Len()+len(p) <= c.memCap {
			c.mem.Write(p)
		} else {
			c.truncated = true
			c.startSpill()
			c.mem.Write(p[:c.memCap-c.mem.Len()])
		}
	}
	for i := range c.sinks {
		c.sinks[i].write(p, c.errs)
	}
	return len(p), nil
}

// copyBuf is the size of the reads of a captured stream: exec's copy
// reads 32 KiB at a time; a large stream costs an eighth of the reads and
// spill writes with this.
const copyBuf = 256 << 10

// smallBuf is the size of a captured stream's first reads.
const smallBuf = 4096

// smallBufs holds the buffers of the first reads (a pointer to an array:
// putting a slice into a Pool would allocate).
var smallBufs = sync.Pool{New: func() any { return new([smallBuf]byte) }}

// ReadFrom copies r (a pipe from the child that no shared reader takes:
// Live and Stdout may block) into c: small reads
// first (most steps write little), then, once the stream passes them,
// large reads from an enlarged pipe (pipeGrow), so the child blocks less
// often.
func (c *capture) ReadFrom(r io.Reader) (int64, error) {
	var total int64
	// Most steps write little: the first reads go to a small buffer
	// shared by the steps (two streams a step made 8 KiB of garbage).
	small := smallBufs.Get().(*[smallBuf]byte)
	defer smallBufs.Put(small)
	buf := small[:]
	for {
		if len(buf) < copyBuf && total >= int64(len(buf)) {
			buf = make([]byte, copyBuf)
			pipeGrow(r)
		}
		n, err := r.Read(buf)
		if n > 0 {
			total += int64(n)
			c.Write(buf[:n])
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// startSpill creates the spill file, if there is one, and copies what is in
// memory into it: the file holds the whole stream.
func (c *capture) startSpill() {
	if c.spillPath == "" {
		return
	}
	f, err := createLog(c.spillPath)
	if err != nil {
		c.errs.set(fmt.Errorf("create spill file: %w", err))
		return
	}
	c.spill = f
	s := sink{w: f}
	if _, err := io.WriteString(f, c.mem.String()); err != nil {
		s.dead = true
		c.errs.set(err)
	}
	c.sinks = append(c.sinks, s)
}

func (s *sink) write(p []byte, errs *firstErr) {
	if s.dead {
		return
	}
	if _, err := s.w.Write(p); err != nil {
		s.dead = true
		if !errors.Is(err, errLinesDone) {
			errs.set(err)
		}
	}
}

// collect reads back the stream the child wrote to the unnamed file f:
// its first memCap bytes into memory and, when it is longer, the whole
// file becomes the spill, by naming f (or, where the system cannot, by
// copying it).
func (c *capture) collect(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("read stdout: %w", err)
	}
	size := fi.Size()
	if n := min(size, int64(c.memCap)); n > 0 {
		c.mem.Grow(int(n))
		// The limit sizes io.Copy's buffer to a short stream.
		if _, err := io.Copy(&c.mem, io.LimitReader(io.NewSectionReader(f, 0, n), n)); err != nil {
			c.mem.Reset()
			return fmt.Errorf("read stdout: %w", err)
		}
	}
	if size <= int64(c.memCap) {
		return nil
	}
	c.truncated = true
	if err := link(f, c.spillPath); err == nil {
		c.named = true
		return nil
	}
	spill, err := createLog(c.spillPath)
	if err != nil {
		return fmt.Errorf("create spill file: %w", err)
	}
	c.named = true
	_, err = f.Seek(0, io.SeekStart)
	if err == nil {
		_, err = io.Copy(spill, f)
	}
	if cerr := spill.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write spill file: %w", err)
	}
	return nil
}

// link is linkUnnamed; a test replaces it to take the copying way.
var link = linkUnnamed

// close closes the spill file.
func (c *capture) close() error {
	if c.spill == nil {
		return nil
	}
	return c.spill.Close()
}

// firstErr keeps the first error reported by either stream.
type firstErr struct {
	mu  sync.Mutex
	err error
}

func (f *firstErr) set(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.err = err
	}
}

func (f *firstErr) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// A lineSink passes one stream to a writer shared with the other stream
// in whole lines: it holds back a line until its newline (or until it
// reaches lineSinkMax, or flush at the stream's end).
type lineSink struct {
	w    io.Writer
	buf  []byte
	done bool // w wants no more (errLinesDone)
}

// lineSinkMax bounds what a lineSink holds back of a line.
const lineSinkMax = 64 << 10

func (l *lineSink) Write(p []byte) (int, error) {
	if l.done {
		return len(p), errLinesDone
	}
	i := bytes.LastIndexByte(p, '\n')
	if i < 0 {
		l.buf = append(l.buf, p...)
		if len(l.buf) >= lineSinkMax {
			return len(p), l.flush()
		}
		return len(p), nil
	}
	var err error
	if len(l.buf) > 0 {
		l.buf = append(l.buf, p[:i+1]...)
		err = l.pass(l.buf)
		l.buf = l.buf[:0]
	} else {
		err = l.pass(p[:i+1])
	}
	if !l.done {
		l.buf = append(l.buf, p[i+1:]...)
	}
	return len(p), err
}

// pass writes p to w.
func (l *lineSink) pass(p []byte) error {
	_, err := l.w.Write(p)
	if errors.Is(err, errLinesDone) {
		l.done = true
	}
	return err
}

// flush writes what is held back.
func (l *lineSink) flush() error {
	if len(l.buf) == 0 || l.done {
		return nil
	}
	err := l.pass(l.buf)
	l.buf = l.buf[:0]
	return err
}

// A lockedWriter lets both streams write to one Live writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
