package proc

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
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

// The unnamed stdout files of finished steps are kept, emptied, for the
// next steps of the same directory: an O_TMPFILE costs an inode, which
// on some file systems is dear (ext4 without a journal searches past
// every inode freed in the last seconds: 0.1 ms a step on the bench's VM,
// where a pipe costs none). A file is kept only once the group that
// wrote to it is gone and it was not named a spill; at most keptMax in
// all, for the life of the process.
var unnamedKept struct {
	sync.Mutex
	files []keptFile
}

type keptFile struct {
	dir string
	f   *os.File
}

const keptMax = 4

// takeUnnamed returns an empty unnamed file of dir, kept or new (nil when
// the file system has none: openUnnamed).
func takeUnnamed(dir string) *os.File {
	unnamedKept.Lock()
	for i := len(unnamedKept.files) - 1; i >= 0; i-- {
		if k := unnamedKept.files[i]; k.dir == dir {
			unnamedKept.files = append(unnamedKept.files[:i], unnamedKept.files[i+1:]...)
			unnamedKept.Unlock()
			return k.f
		}
	}
	unnamedKept.Unlock()
	return openUnnamed(dir)
}

// keepUnnamed empties f, an unnamed file of dir that nothing writes to
// any more, and keeps it for takeUnnamed (the oldest kept file is closed
// past keptMax); f is closed when it cannot be emptied.
func keepUnnamed(dir string, f *os.File) {
	// An empty file is not truncated: ext4's ftruncate updates the inode's
	// times even when the size does not change (14 µs of a `true` step, on
	// a 2-core VM). The offset is reset all the same: a child may have
	// moved it without writing.
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil || st.Size != 0 && f.Truncate(0) != nil {
		f.Close()
		return
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return
	}
	unnamedKept.Lock()
	defer unnamedKept.Unlock()
	if len(unnamedKept.files) >= keptMax {
		unnamedKept.files[0].f.Close()
		unnamedKept.files = unnamedKept.files[1:]
	}
	unnamedKept.files = append(unnamedKept.files, keptFile{dir, f})
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
