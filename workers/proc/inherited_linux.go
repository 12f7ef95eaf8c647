package proc

import (
	"math"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// KeepInheritedFiles marks every file descriptor this process inherited
// beyond stdin, stdout and stderr close-on-exec, so that no child Run
// starts gets one (a pipe of a shell or CI runner that started smithvm):
// a child sees its three streams and nothing else of the parent's, as it
// sees only the environment its Spec gives. Call it once, at the start of
// the process, before anything is run.
func KeepInheritedFiles() {
	if unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	// Before Linux 5.11: one descriptor at a time.
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC)
		}
	}
}
