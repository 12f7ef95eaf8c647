package proc

import (
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A step's leader is waited for without an OS thread of its own: a
// blocking waitid holds a thread for as long as the step runs (500
// parallel steps, 500 threads). Instead the leader's pidfd, which the
// fork returns (startSpawn), is added to one epoll instance of this
// process, which is itself watched by Go's network poller; one
// goroutine, parked in the poller while no step exits, wakes the waiters
// of the leaders that exited. A step so costs one descriptor, the pidfd,
// and no thread.

// exits is the epoll instance of the leaders being waited for.
var exits struct {
	once sync.Once
	ep   int // -1 when it could not be set up: each leader is waited for by a blocking waitid
	mu   sync.Mutex
	// wake holds the waiters by pid: each channel gets true when that
	// leader exited, false when the poller failed (wait by waitid).
	wake map[int32]chan bool
}

// pidfdWorks reports whether this kernel gives usable pidfds: a pidfd of
// this process can be opened and signalled (Linux 5.3). It asks the
// kernel with two system calls; os's own check (os.FindProcess) also
// forks a child to try CLONE_PIDFD, which cost every run a process. A
// fork whose CLONE_PIDFD the kernel refuses is retried without it, and
// pidfds are then given up (startSpawn, noPidfd); one that the kernel
// ignores leaves the pidfd at -1, which every waiter handles.
var pidfdWorks = sync.OnceValue(func() bool {
	if noPidfd.Load() {
		return false
	}
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	return unix.PidfdSendSignal(fd, 0, nil, 0) == nil
})

// pidfdsOn reports whether forks ask for pidfds.
func pidfdsOn() bool { return !noPidfd.Load() && pidfdWorks() }

// noPidfd is set when a fork asked for a pidfd failed and the same fork
// without the request succeeded: pidfds are not asked for again.
var noPidfd atomic.Bool

// askPidfd has the fork of sys store the child's pidfd in *fd (-1 when
// the kernel gives none) where pidfds work.
func askPidfd(sys *syscall.SysProcAttr, fd *int) {
	if pidfdsOn() {
		sys.PidFD = fd
	}
}

// givePidfdsUp stops forks asking for pidfds (noPidfd).
func givePidfdsUp() { noPidfd.Store(true) }

// retryWithoutPidfd reports whether a fork of sys that failed with err
// may be tried again without the pidfd request: the kernel (or a
// sandbox's filter) refused CLONE_PIDFD. The request is taken out of sys.
func retryWithoutPidfd(sys *syscall.SysProcAttr, err error) bool {
	if sys.PidFD == nil || !(errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EPERM)) {
		return false
	}
	sys.PidFD = nil
	return true
}

// setupExits creates the epoll instance and starts its goroutine.
func setupExits() {
	exits.ep = -1
	exits.wake = map[int32]chan bool{}
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return
	}
	if unix.SetNonblock(fd, true) != nil {
		unix.Close(fd)
		return
	}
	// A non-blocking descriptor given to os.NewFile is registered with
	// the poller: its readiness (an event in the epoll set) wakes a
	// RawConn.Read.
	f := os.NewFile(uintptr(fd), "exits")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return
	}
	exits.ep = fd
	go reapExits(f, rc)
}

// reapExits wakes the waiter of every leader whose pidfd became readable
// (the leader exited), for the life of the process. f is kept alive by
// this goroutine.
func reapExits(f *os.File, rc interface {
	Read(func(fd uintptr) bool) error
}) {
	events := make([]unix.EpollEvent, 64)
	for {
		err := rc.Read(func(fd uintptr) bool {
			n, err := unix.EpollWait(int(fd), events, 0)
			if err != nil || n <= 0 {
				return false // nothing ready (or EINTR): wait in the poller
			}
			var ready []*pipeStream
			exits.mu.Lock()
			for _, ev := range events[:n] {
				if ev.Pad == kindStream {
					if s := streams[ev.Fd]; s != nil {
						ready = append(ready, s)
					}
				} else if ch, ok := exits.wake[ev.Fd]; ok {
					ch <- true
					delete(exits.wake, ev.Fd)
				}
			}
			exits.mu.Unlock()
			for _, s := range ready {
				s.read()
			}
			return true
		})
		if err != nil {
			// The poller refused the descriptor; it cannot happen to an
			// open file that nothing closes. Waiters registered from now on
			// fall back to waitid; the ones registered before would hang,
			// so wake them: waitExit then waits by waitid.
			exits.mu.Lock()
			exits.ep = -1
			for pid, ch := range exits.wake {
				ch <- false
				delete(exits.wake, pid)
			}
			var all []*pipeStream
			for _, s := range streams {
				all = append(all, s)
			}
			exits.mu.Unlock()
			// Nothing reads the pipes any more: end them (the step's output
			// is cut there; Run still returns).
			for _, s := range all {
				s.mu.Lock()
				s.closeLocked()
				s.mu.Unlock()
			}
			f.Close()
			return
		}
	}
}

// waitExit blocks until the leader pid, whose pidfd is pidfd (-1 for
// none), has exited, without reaping it: its zombie keeps the group's id
// from being reused until killGroup and the reap. The epoll set refers to
// the pidfd until the event fires (EPOLLONESHOT); the reap closes it,
// which removes it from the set.
func waitExit(pid, pidfd int) {
	if pidfd >= 0 && waitExitPolled(pid, pidfd) {
		return
	}
	// Without a pidfd, or after the poller failed.
	waitExitBlocking(pid)
}

// waitExitPolled waits for the pidfd of leader pid in the epoll set; it
// is false when it could not (then the caller waits by waitid).
func waitExitPolled(pid, pidfd int) bool {
	exits.once.Do(setupExits)
	ch := make(chan bool, 1)
	exits.mu.Lock()
	if exits.ep < 0 {
		exits.mu.Unlock()
		return false
	}
	exits.wake[int32(pid)] = ch
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLONESHOT, Fd: int32(pid)}
	if unix.EpollCtl(exits.ep, unix.EPOLL_CTL_ADD, pidfd, &ev) != nil {
		delete(exits.wake, int32(pid))
		exits.mu.Unlock()
		return false
	}
	exits.mu.Unlock()
	return <-ch
}

// waitExitBlocking blocks in waitid until process pid has exited, without
// reaping it.
func waitExitBlocking(pid int) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return
		}
	}
}

// The read ends of the steps' output pipes are in the same epoll set (the
// event's Pad tells a stream from a leader): the goroutine that wakes the
// waiters also reads every pipe that has data, into one buffer, and
// passes it to the stream's writer. A step so needs no goroutine of its
// own per stream, nor a read buffer while it is quiet. Only streams whose
// writers write to files and memory (capture, masking, the live log, the
// spill and stderr log) are read here: a writer that may block (a
// terminal, an output_file) keeps a goroutine of its own, so that it can
// never hold up the other steps.

// kindStream marks a pipe's event in the epoll set (EpollEvent.Pad).
const kindStream = 1

// streamChunk bounds what one wake-up reads of one stream, so that a
// stream that writes without pause does not starve the others (the set is
// level-triggered for streams: the rest is read at the next wake-up).
const streamChunk = 1 << 20

// A pipeStream is one output pipe of a step read by the shared goroutine.
type pipeStream struct {
	fd   int
	w    io.Writer
	done chan struct{} // closed at EOF, a read error, or abandon

	mu     sync.Mutex // held while reading: abandon waits for a read in progress
	closed bool
	total  int
	grown  bool

	// direct: the step's own goroutine reads the pipe (pollDirect), into
	// buf, not the shared goroutine; the pipe is in no epoll set.
	direct bool
	small  *[smallBuf]byte // buf's first array, from smallBufs
	buf    []byte
}

// streams are the pipes being read, by read descriptor.
var streams = map[int32]*pipeStream{}

// streamBuf is the shared goroutine's read buffer.
var streamBuf []byte

// newPipeStream makes a pipe whose read end the shared goroutine reads
// into w (direct: the step's goroutine, pollDirect), and returns it with
// the write end for the child; nil when there is no shared goroutine (the
// caller then lets exec copy the stream).
func newPipeStream(w io.Writer, direct bool) (*pipeStream, *os.File) {
	var p [2]int
	var err error
	if p[0], p[1], err = stepPipe(); err != nil {
		return nil, nil
	}
	s := &pipeStream{fd: p[0], w: w, done: make(chan struct{}), direct: direct}
	if direct {
		return s, os.NewFile(uintptr(p[1]), "|1")
	}
	exits.once.Do(setupExits)
	exits.mu.Lock()
	defer exits.mu.Unlock()
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(p[0]), Pad: kindStream}
	if exits.ep < 0 || unix.EpollCtl(exits.ep, unix.EPOLL_CTL_ADD, p[0], &ev) != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, nil
	}
	streams[int32(p[0])] = s
	return s, os.NewFile(uintptr(p[1]), "|1")
}

// read reads what s has (at most streamChunk) and passes it on; at EOF or
// an error it closes s.
func (s *pipeStream) read() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	var buf []byte
	if s.direct {
		// Most steps write little: a small buffer first, a large one once
		// the stream passes it.
		if s.buf == nil {
			s.small = smallBufs.Get().(*[smallBuf]byte)
			s.buf = s.small[:]
		}
		buf = s.buf
	} else {
		if streamBuf == nil {
			streamBuf = make([]byte, copyBuf)
		}
		buf = streamBuf
	}
	for n := 0; n < streamChunk; {
		if s.direct && len(buf) < copyBuf && s.total >= len(buf) {
			buf = make([]byte, copyBuf)
			s.buf = buf
		}
		k, err := unix.Read(s.fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			return
		}
		if k <= 0 || err != nil {
			s.closeLocked()
			return
		}
		n += k
		s.total += k
		if !s.grown && s.total >= 4096 {
			// A large stream: an enlarged pipe blocks the child less often.
			s.grown = true
			_, _ = unix.FcntlInt(uintptr(s.fd), unix.F_SETPIPE_SZ, pipeSize)
		}
		_, _ = s.w.Write(buf[:k]) // a capture records its own errors
	}
}

// closeLocked removes s from the set and closes its pipe; s.mu is held.
func (s *pipeStream) closeLocked() {
	if s.closed {
		return
	}
	s.closed = true
	if s.direct {
		if s.small != nil {
			smallBufs.Put(s.small)
			s.small, s.buf = nil, nil
		}
	} else {
		exits.mu.Lock()
		delete(streams, int32(s.fd))
		if exits.ep >= 0 {
			_ = unix.EpollCtl(exits.ep, unix.EPOLL_CTL_DEL, s.fd, nil)
		}
		exits.mu.Unlock()
	}
	unix.Close(s.fd)
	close(s.done)
}

// drainStreams waits, at most d, until every stream of ss reached its
// EOF (a process that left the group, or survived it, may hold a pipe
// open forever), then gives up the others: nothing is written to their
// writers after it returns.
func drainStreams(ss []*pipeStream, d time.Duration) {
	if len(ss) > 0 && ss[0].direct {
		pollDirect(0, -1, ss, d, nil)
		return
	}
	var t *time.Timer
	for _, s := range ss {
		if t == nil {
			select {
			case <-s.done:
				continue
			default:
				t = time.NewTimer(d)
				defer t.Stop()
			}
		}
		select {
		case <-s.done:
		case <-t.C:
			for _, s := range ss {
				s.mu.Lock()
				s.closeLocked()
				s.mu.Unlock()
			}
			return
		}
	}
}

// While few steps run in this process, each waits for its leader and
// reads its pipes itself: one poll on the leader's pidfd and the pipes,
// in the step's goroutine, which holds a thread while it blocks. A
// sequential workflow so pays no hand-off through the shared goroutine
// (the pipes' end and the leader's exit are two wake-ups there, each
// passed on to the step's goroutine). Past directMax steps at once, a
// step joins the shared epoll set, so that 500 parallel steps do not
// hold 500 threads.

// directMax is how many steps at once wait in their own thread (a
// variable for a test to send every step to the shared goroutine).
var directMax int32 = 4

// directSteps counts the steps that wait in their own thread.
var directSteps atomic.Int32

// takeDirect reports whether the step about to start waits in its own
// thread (waitDirect); when it does, the caller calls dropDirect at its
// end.
func takeDirect() bool {
	if !pidfdsOn() {
		return false
	}
	if directSteps.Add(1) <= directMax {
		return true
	}
	directSteps.Add(-1)
	return false
}

// dropDirect ends a step that takeDirect let wait in its own thread.
func dropDirect() { directSteps.Add(-1) }

// waitDirect blocks until the leader pid, whose pidfd is pidfd, has
// exited, without reaping it, and meanwhile reads the direct streams ss.
// Meanwhile it passes what the child appends to its stdout file to tail
// (nil: none).
func waitDirect(pid, pidfd int, ss []*pipeStream, tail *fileTail) {
	pollDirect(pid, pidfd, ss, -1, tail)
}

// pollDirect reads the direct streams ss in the calling goroutine: with
// pid > 0 until that leader has exited (its pidfd readable; without a
// pidfd, waitid asked every 10 ms); with pid 0 until every stream ended,
// or d passed, when the rest are closed unread. With pid > 0 and a tail,
// it also looks at the tail's file at each wake-up, and wakes for it at
// least every tail.timeout().
func pollDirect(pid, pidfd int, ss []*pipeStream, d time.Duration, tail *fileTail) {
	var end time.Time
	if pid == 0 {
		end = time.Now().Add(d)
	}
	var fds [3]unix.PollFd
	var of [3]*pipeStream
	for {
		pfd := fds[:0]
		if pid > 0 && pidfd >= 0 {
			pfd = append(pfd, unix.PollFd{Fd: int32(pidfd), Events: unix.POLLIN})
		}
		first := len(pfd)
		for _, s := range ss {
			if !s.closed {
				of[len(pfd)-first] = s
				pfd = append(pfd, unix.PollFd{Fd: int32(s.fd), Events: unix.POLLIN})
			}
		}
		timeout := -1
		switch {
		case pid > 0 && pidfd < 0:
			timeout = 10
		case pid == 0:
			left := time.Until(end)
			if len(pfd) == 0 {
				return
			}
			if left <= 0 {
				for _, s := range ss {
					s.closeLocked()
				}
				return
			}
			timeout = int((left + time.Millisecond - 1) / time.Millisecond)
		}
		if pid > 0 {
			if t := tail.timeout(); t >= 0 && (timeout < 0 || t < timeout) {
				timeout = t
			}
		}
		n, err := unix.Poll(pfd, timeout)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			time.Sleep(time.Millisecond) // no memory for the poll: try again
			continue
		}
		exited := false
		if n > 0 {
			if first > 0 && pfd[0].Revents != 0 {
				exited = true
			}
			for i, p := range pfd[first:] {
				if p.Revents != 0 {
					of[i].read()
				}
			}
		}
		if exited {
			return // Run reads what is left of the tail's file
		}
		if pid > 0 {
			tail.look()
			if pidfd < 0 && leaderExited(pid) {
				return
			}
		}
	}
}

// leaderExited reports whether process pid has exited, without reaping
// it (waitid with WNOHANG leaves the zeroed siginfo as it is when it has
// not).
func leaderExited(pid int) bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil)
		if err != unix.EINTR {
			return err != nil || info.Signo != 0
		}
	}
}
