package proc

import (
	"io"
	"syscall"
)

// pipeSize is the capacity asked for the pipe of a captured stream (the
// default is 64 KiB): a child writing much blocks less often. The kernel
// may give less (/proc/sys/fs/pipe-max-size); it is only a hint.
const pipeSize = 1 << 20

// pipeGrow enlarges r's pipe when r is one (F_SETPIPE_SZ).
func pipeGrow(r io.Reader) {
	sc, ok := r.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_, _, _ = syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_SETPIPE_SZ, pipeSize)
	})
}
