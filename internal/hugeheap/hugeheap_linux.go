//go:build linux

package hugeheap

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// enabledFile says whether the kernel backs memory with transparent huge
// pages always, only where a process asked for them (madvise), or never.
const enabledFile = "/sys/kernel/mm/transparent_hugepage/enabled"

// Grow grows the heap by about n bytes and, where the kernel gives huge
// pages only to memory that asks for them, advises huge pages for the whole
// mapping of the heap that holds them. It does nothing where the kernel
// already gives them to every mapping or never does, or when n <= 0.
func Grow(n int) {
	if n <= 0 || !onlyWhenAsked() {
		return
	}
	// A large allocation makes the runtime map that much more heap; it is
	// untouched (fresh mappings are zero), so it costs no page fault, and
	// the collection gives it back to the heap for the work to come.
	p := uintptr(unsafe.Pointer(unsafe.SliceData(make([]byte, n))))
	runtime.GC()
	lo, hi, ok := mappingOf(p)
	if !ok {
		return
	}
	syscall.Syscall(syscall.SYS_MADVISE, lo, hi-lo, unix.MADV_HUGEPAGE)
}

// onlyWhenAsked reports whether the kernel's policy is "madvise".
func onlyWhenAsked() bool {
	b, err := os.ReadFile(enabledFile)
	return err == nil && bytes.Contains(b, []byte("[madvise]"))
}

// mappingOf returns the bounds of the mapping of this process that holds
// address p, from /proc/self/maps.
func mappingOf(p uintptr) (lo, hi uintptr, ok bool) {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, 0, false
	}
	for line := range bytes.Lines(maps) {
		span, _, _ := bytes.Cut(line, []byte(" "))
		l, h, found := bytes.Cut(span, []byte("-"))
		if !found {
			continue
		}
		a, err1 := strconv.ParseUint(string(l), 16, 64)
		z, err2 := strconv.ParseUint(string(h), 16, 64)
		if err1 == nil && err2 == nil && uintptr(a) <= p && p < uintptr(z) {
			return uintptr(a), uintptr(z), true
		}
	}
	return 0, 0, false
}
