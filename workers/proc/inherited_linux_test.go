package proc

import (
	"testing"

	"golang.org/x/sys/unix"
)

// A descriptor open without close-on-exec (one this process inherited)
// is close-on-exec after KeepInheritedFiles: no child gets it.
func TestKeepInheritedFiles(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], 0); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	KeepInheritedFiles()
	for _, fd := range p {
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil {
			t.Fatal(err)
		}
		if flags&unix.FD_CLOEXEC == 0 {
			t.Errorf("fd %d is not close-on-exec", fd)
		}
	}
}
