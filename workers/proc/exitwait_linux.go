package proc

import (
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// A step's leader is waited for without an OS thread of its own: a
// blocking waitid holds a thread for as long as the step runs (500
// parallel steps, 500 threads). Instead the leader's pidfd (the one
// os.Process holds) is added to one epoll instance of this process,
// which is itself watched by Go's network poller; one goroutine, parked
// in the poller while no step exits, wakes the waiters of the leaders
// that exited. A step so costs no descriptor beyond the pidfd os/exec
// opens anyway, and no thread.

// exits is the epoll instance of the leaders being waited for.
var exits struct {
	once sync.Once
	ep   int // -1 when it could not be set up: each leader is waited for by a blocking waitid
	mu   sync.Mutex
	wake map[int32]chan struct{} // by pid: closed when that leader exited
}

// setupExits creates the epoll instance and starts its goroutine.
func setupExits() {
	exits.ep = -1
	exits.wake = map[int32]chan struct{}{}
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
			exits.mu.Lock()
			for _, ev := range events[:n] {
				if ch, ok := exits.wake[ev.Fd]; ok {
					close(ch)
					delete(exits.wake, ev.Fd)
				}
			}
			exits.mu.Unlock()
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
				close(ch)
				delete(exits.wake, pid)
			}
			exits.mu.Unlock()
			f.Close()
			return
		}
	}
}

// waitExit blocks until the leader p has exited, without reaping it (so
// exec.Cmd.Wait still collects its status).
func waitExit(p *os.Process) {
	exits.once.Do(setupExits)
	ch := make(chan struct{})
	added := false
	// The handle is the pidfd os.Process holds until Wait: the epoll set
	// refers to it until the event fires (EPOLLONESHOT), and Wait closes
	// it, which removes it from the set.
	_ = p.WithHandle(func(h uintptr) {
		exits.mu.Lock()
		defer exits.mu.Unlock()
		if exits.ep < 0 {
			return
		}
		exits.wake[int32(p.Pid)] = ch
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLONESHOT, Fd: int32(p.Pid)}
		if unix.EpollCtl(exits.ep, unix.EPOLL_CTL_ADD, int(h), &ev) != nil {
			delete(exits.wake, int32(p.Pid))
			return
		}
		added = true
	})
	if added {
		<-ch
	}
	// Without a pidfd (or after the poller failed), and to be sure in
	// any case: waitid returns at once for a leader that has exited.
	waitExitBlocking(p.Pid)
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
