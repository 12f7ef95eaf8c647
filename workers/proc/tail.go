package proc

import (
	"os"
	"time"
)

// A fileTail passes what a child appends to its stdout, an unnamed file
// rather than a pipe, to Spec.Lines (through a lineSink) while the step
// runs: the step's own goroutine looks at the file each time it wakes
// (pollDirect), at the latest after timeout(), and Run looks once more
// after the exit. A pipe would cost the stream a copy into smithvm and
// one out of it; with the file, a child that copies a file to its stdout
// does so inside the kernel, and smithvm reads only what the live log
// takes (its first 8 MB), from the page cache.
type fileTail struct {
	f     *os.File
	w     *lineSink
	off   int64 // read up to here
	small *[smallBuf]byte
	buf   []byte
	wait  time.Duration // until the next look, while the step runs
}

const (
	// tailMinWait is the wait for the first look, and after a look that
	// found new output: a line reaches the live log this late at most
	// while the child writes.
	tailMinWait = 10 * time.Millisecond
	// tailMaxWait bounds the wait after looks that found nothing (it
	// doubles from tailMinWait): a quiet step costs a few wake-ups a
	// second.
	tailMaxWait = 250 * time.Millisecond
)

// timeout is the poll timeout in milliseconds until the next look: -1
// when no look is wanted (no tail, or Spec.Lines wants no more).
func (t *fileTail) timeout() int {
	if t == nil || t.w.done {
		return -1
	}
	if t.wait == 0 {
		t.wait = tailMinWait
	}
	return int(t.wait / time.Millisecond)
}

// look reads what the child appended since the last look and sets the
// wait for the next one.
func (t *fileTail) look() {
	if t == nil {
		return
	}
	if t.read() {
		t.wait = tailMinWait
	} else {
		t.wait = min(t.wait*2, tailMaxWait)
	}
}

// read passes what the file holds past t.off to the line sink, until its
// end or until Spec.Lines wants no more, and reports whether it found
// anything. A nil t reads nothing.
func (t *fileTail) read() bool {
	if t == nil {
		return false
	}
	found := false
	for !t.w.done {
		if t.buf == nil {
			t.small = smallBufs.Get().(*[smallBuf]byte)
			t.buf = t.small[:]
		}
		n, err := t.f.ReadAt(t.buf, t.off)
		if n > 0 {
			found = true
			t.off += int64(n)
			_, _ = t.w.Write(t.buf[:n])
		}
		if n < len(t.buf) || err != nil {
			// At the file's end (io.EOF), or unreadable: the live log
			// misses the rest, which is still collected whole after the
			// exit (capture.collect).
			return found
		}
		if len(t.buf) < copyBuf {
			t.buf = make([]byte, copyBuf) // a stream that fills the small buffer is likely long
		}
	}
	return found
}

// release gives the small buffer back.
func (t *fileTail) release() {
	if t != nil && t.small != nil {
		smallBufs.Put(t.small)
		t.small, t.buf = nil, nil
	}
}
