//go:build !linux

package proc

import (
	"errors"
	"io"
	"os"
	"syscall"
	"time"
)

func pipeGrow(io.Reader) {}

// openUnnamed: no unnamed files here; stdout is piped.
func openUnnamed(string) *os.File { return nil }

// takeUnnamed: none here either.
func takeUnnamed(string) *os.File { return nil }

// keepUnnamed is never called here (takeUnnamed gives no file).
func keepUnnamed(_ string, f *os.File) { f.Close() }

func linkUnnamed(*os.File, string) error { return errors.ErrUnsupported }

// A pipeStream is a stream read by a shared goroutine: none here, a
// goroutine of its own copies every stream (startSpawn).
type pipeStream struct{}

func newPipeStream(io.Writer, bool) (*pipeStream, *os.File) { return nil, nil }
func drainStreams([]*pipeStream, time.Duration)             {}

// takeDirect: no pidfd here; every leader is waited for by waitExit.
func takeDirect() bool                              { return false }
func dropDirect()                                   {}
func waitDirect(int, int, []*pipeStream, *fileTail) {}

// outputPipe makes a pipe for a child's output stream: r, the parent's
// end, non-blocking and read through the poller; w, the child's end, a
// plain blocking descriptor that the caller closes once the child has it.
func outputPipe() (r *os.File, w int, err error) {
	var p [2]int
	syscall.ForkLock.RLock()
	err = syscall.Pipe(p[:])
	if err == nil {
		syscall.CloseOnExec(p[0])
		syscall.CloseOnExec(p[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, 0, os.NewSyscallError("pipe", err)
	}
	if err := syscall.SetNonblock(p[0], true); err != nil {
		syscall.Close(p[0])
		syscall.Close(p[1])
		return nil, 0, os.NewSyscallError("fcntl", err)
	}
	return os.NewFile(uintptr(p[0]), "|0"), p[1], nil
}
