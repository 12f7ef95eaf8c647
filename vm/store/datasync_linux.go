package store

import (
	"os"
	"runtime"
	"syscall"
)

// datasync flushes f's data (and the metadata needed to read it back).
func datasync(f *os.File) error { return syncFile(f, syscall.SYS_FDATASYNC) }

// fsync flushes f's data and metadata (a file's or a directory's).
func fsync(f *os.File) error { return syncFile(f, syscall.SYS_FSYNC) }

// syncFile makes the sync call trap on f's descriptor, retrying on EINTR.
//
// Where Go has more than one P, the call is made without telling the
// scheduler (RawSyscall): a sync keeps its thread for a fraction of a
// millisecond to milliseconds, long enough for the runtime to take the P
// away and hand it to another thread, which finds nothing to run (the
// driver waits for the sync: nothing else of a run has work meanwhile)
// and parks again. Measured with 50 concurrent 10-step runs on two cores
// (bench target 9b), that hand-off was 200 context switches per run
// (19,000 instead of 29,000 in all) and 7-8% of the burst's wall time.
// The cost: while a sync lasts, its P runs nothing else, and a garbage
// collection that stops the world waits for it. With a single P the
// other goroutines (output readers, the viewer, signal delivery) must not
// wait for a disk, so the call is made the usual way.
func syncFile(f *os.File, trap uintptr) error {
	fd := f.Fd()
	raw := runtime.GOMAXPROCS(0) > 1
	for {
		var errno syscall.Errno
		if raw {
			_, _, errno = syscall.RawSyscall(trap, fd, 0, 0)
		} else {
			_, _, errno = syscall.Syscall(trap, fd, 0, 0)
		}
		switch errno {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		}
		return &os.PathError{Op: "sync", Path: f.Name(), Err: errno}
	}
}
