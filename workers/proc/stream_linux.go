package proc

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
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

// openUnnamed opens an unnamed regular file (O_TMPFILE) in dir, creating
// dir when missing, for a step's stdout; nil when the file system cannot
// (the caller then pipes). The file has no name until linkUnnamed gives
// it one, and the kernel frees it when it is closed without one: a crash
// leaves nothing half-written behind.
func openUnnamed(dir string) *os.File {
	open := func() (int, error) {
		return unix.Open(dir, unix.O_RDWR|unix.O_TMPFILE|unix.O_CLOEXEC, logPerm)
	}
	fd, err := open()
	if errors.Is(err, unix.ENOENT) {
		if os.MkdirAll(dir, 0o755) == nil {
			fd, err = open()
		}
	}
	if err != nil {
		return nil
	}
	return os.NewFile(uintptr(fd), filepath.Join(dir, "(unnamed stdout)"))
}

// linkUnnamed names the unnamed file f path, replacing what was there
// (a spill of an earlier try). Linking by /proc/self/fd needs /proc;
// AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; failing both, the caller copies.
func linkUnnamed(f *os.File, path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	fd := int(f.Fd())
	err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), unix.AT_FDCWD, path, unix.AT_SYMLINK_FOLLOW)
	if err != nil {
		err = unix.Linkat(fd, "", unix.AT_FDCWD, path, unix.AT_EMPTY_PATH)
	}
	return err
}

// outputPipe makes a pipe for a child's output stream that a goroutine
// copies: r, the parent's end, read through the poller; w, the child's
// end (stepPipe).
func outputPipe() (r *os.File, w int, err error) {
	rfd, w, err := stepPipe()
	if err != nil {
		return nil, 0, err
	}
	return os.NewFile(uintptr(rfd), "|0"), w, nil
}

// stepPipe makes a pipe for a child's output stream: r, the parent's end,
// non-blocking; w, the child's end, a plain blocking descriptor that the
// caller closes once the child has it. Both are close-on-exec (the fork
// dups w onto the child's stream). The read end alone is made
// non-blocking by one F_SETFL (a new pipe's end has no other status
// flag): pipe2's O_NONBLOCK would make the child's end non-blocking too.
func stepPipe() (r, w int, err error) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return 0, 0, os.NewSyscallError("pipe2", err)
	}
	if _, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(p[0]), syscall.F_SETFL, syscall.O_NONBLOCK); e != 0 {
		syscall.Close(p[0])
		syscall.Close(p[1])
		return 0, 0, os.NewSyscallError("fcntl", e)
	}
	return p[0], p[1], nil
}
