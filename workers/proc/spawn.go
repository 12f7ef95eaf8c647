package proc

import (
	"errors"
	"io"
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// A step's process is started by syscall.ForkExec, not os/exec: exec.Cmd
// registers both ends of each output pipe with the poller and sets the
// child's end back to blocking (six fcntl and epoll_ctl calls per pipe),
// and wraps the child in an os.Process with a finalizer. Run needs none
// of it: the fork asks the kernel for the leader's pidfd itself
// (SysProcAttr.PidFD, the clone's CLONE_PIDFD), which waitExit adds to
// the epoll set of the exits (exitwait_linux.go), and the leader is then
// reaped with one wait4. What exec.Cmd did that a step relies on is
// kept: the environment without duplicate names and without NUL, the
// "fork/exec" error, copying goroutines for the piped streams that the
// shared reader does not take, and a bound on the wait for pipes that a
// surviving grandchild holds open (pipeDrainDelay).

// A spawn is one started process and the goroutines copying its piped
// streams.
type spawn struct {
	pid    int
	pidfd  int           // the leader's pidfd, -1 without one; reap closes it
	pipes  []*os.File    // the parent's ends of the output pipes
	copied chan struct{} // one value per copying goroutine that ended
}

// A childOut is one output stream of the child: a file it writes itself
// (a regular file, or the write end of a pipe the shared reader reads),
// or (file nil) a pipe whose parent end a goroutine copies to w.
type childOut struct {
	file *os.File
	w    io.Writer
}

// startSpawn forks and execs path with argv, env (from childEnv), dir,
// the process attributes sys, stdin (/dev/null when nil) and the two
// output streams, and starts copying the piped ones. sys gets the
// request for the leader's pidfd where the kernel gives one.
func startSpawn(path string, argv, env []string, dir string, sys *syscall.SysProcAttr, stdin *os.File, outs [2]childOut) (*spawn, error) {
	s := &spawn{pidfd: -1}
	askPidfd(sys, &s.pidfd)
	fds := make([]uintptr, 3)
	var childEnds []int
	closeChildEnds := func() {
		for _, fd := range childEnds {
			_ = syscall.Close(fd)
		}
	}
	if stdin != nil {
		fds[0] = stdin.Fd()
	} else {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		fds[0] = f.Fd()
	}
	var writers []io.Writer
	for i, o := range outs {
		if o.file != nil {
			fds[i+1] = o.file.Fd()
			continue
		}
		r, w, err := outputPipe()
		if err != nil {
			closeChildEnds()
			s.closePipes()
			return nil, err
		}
		childEnds = append(childEnds, w)
		s.pipes = append(s.pipes, r)
		writers = append(writers, o.w)
		fds[i+1] = uintptr(w)
	}
	attr := &syscall.ProcAttr{Dir: dir, Env: env, Files: fds, Sys: sys}
	pid, err := syscall.ForkExec(path, argv, attr)
	if err != nil && retryWithoutPidfd(sys, err) {
		if pid, err = syscall.ForkExec(path, argv, attr); err == nil {
			givePidfdsUp()
		}
	}
	runtime.KeepAlive(stdin)
	runtime.KeepAlive(outs)
	closeChildEnds()
	if err != nil {
		s.closePipes()
		return nil, &os.PathError{Op: "fork/exec", Path: path, Err: err}
	}
	s.pid = pid
	s.copied = make(chan struct{}, len(s.pipes))
	for i, r := range s.pipes {
		go func(w io.Writer, r *os.File) {
			_, _ = io.Copy(w, r) // a failing sink records its own error (capture)
			r.Close()
			s.copied <- struct{}{}
		}(writers[i], r)
	}
	return s, nil
}

// closePipes closes the parent's ends of the pipes.
func (s *spawn) closePipes() {
	for _, r := range s.pipes {
		r.Close()
	}
}

// reap collects the exited leader's status (it has exited: waitExit)
// and closes its pidfd, which also takes it out of the epoll set.
func (s *spawn) reap() syscall.WaitStatus {
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(s.pid, &ws, 0, nil)
		if err != syscall.EINTR {
			break
		}
	}
	if s.pidfd >= 0 {
		_ = syscall.Close(s.pidfd)
		s.pidfd = -1
	}
	return ws
}

// awaitCopies waits for the copying goroutines to reach the end of their
// pipes, at most delay once the leader has exited: a process that left
// the group, or survived it, may hold a pipe open forever. Then the pipes
// are closed under them, which ends their reads.
func (s *spawn) awaitCopies(delay time.Duration) {
	n := len(s.pipes)
	for n > 0 {
		select {
		case <-s.copied:
			n--
			continue
		default:
		}
		break
	}
	if n == 0 {
		return
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	for n > 0 {
		select {
		case <-s.copied:
			n--
		case <-t.C:
			s.closePipes()
			for ; n > 0; n-- {
				<-s.copied
			}
		}
	}
}

// exitStatus maps a reaped process's status to its exit code: 128+signo
// when a signal ended it.
func exitStatus(ws syscall.WaitStatus) int {
	switch {
	case ws.Signaled():
		return 128 + int(ws.Signal())
	case ws.Exited():
		return ws.ExitStatus()
	}
	return -1
}

// errEnvNUL is os/exec's error for an environment with a NUL byte.
var errEnvNUL = errors.New("exec: environment variable contains NUL")

// childEnv is env as os/exec gives it to a child (its dedupEnv): an entry
// with a NUL byte is an error, an empty one is dropped, and of the entries
// that name one variable the last is kept, in the order of the kept ones.
// An environment with none of these, the usual one, is returned as it is.
func childEnv(env []string) ([]string, error) {
	if env == nil {
		return []string{}, nil // nil would give the child the parent's environment
	}
	clean := true
	for i, kv := range env {
		k, ok := envKey(kv)
		if kv == "" || strings.IndexByte(kv, 0) >= 0 {
			clean = false
			break
		}
		if !ok {
			continue
		}
		for _, prev := range env[:i] {
			if pk, ok := envKey(prev); ok && pk == k {
				clean = false
				break
			}
		}
		if !clean {
			break
		}
	}
	if clean {
		return env, nil
	}
	var err error
	out := make([]string, 0, len(env))
	saw := make(map[string]bool, len(env))
	for n := len(env); n > 0; n-- {
		kv := env[n-1]
		if strings.IndexByte(kv, 0) >= 0 {
			err = errEnvNUL
			continue
		}
		k, ok := envKey(kv)
		if !ok {
			if kv != "" {
				out = append(out, kv)
			}
			continue
		}
		if saw[k] {
			continue
		}
		saw[k] = true
		out = append(out, kv)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, err
}

// envKey is the name of a "K=V" entry as os/exec finds it (a leading '='
// belongs to the name); ok is false for an entry without '='.
func envKey(kv string) (string, bool) {
	i := strings.Index(kv, "=")
	if i == 0 {
		i = strings.Index(kv[1:], "=") + 1
	}
	if i < 0 {
		return "", false
	}
	return kv[:i], true
}
