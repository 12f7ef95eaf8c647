// Package hugeheap readies the Go heap for a large, short-lived working set,
// such as compiling a document of several megabytes: it grows the heap by a
// given size at once and asks the kernel to back it with transparent huge
// pages.
//
// Why: every new page of heap costs a page fault when it is first touched,
// and on a virtual machine a fault costs 20-30 µs. Checking a 2.8 MB manifest
// touches about 3,000 new pages, which was more than half of the command's
// time; with 2 MB pages it is a handful of faults (docs/performance.md,
// seventh pass). The Go runtime does not ask for huge pages itself (it stopped
// in Go 1.21.1, for long-running servers whose memory it bloated); a command
// that exits after one document has no such concern.
//
// Grow changes no behaviour and can fail silently: it is an advice to the
// kernel. It must never be used from a long-running server.
package hugeheap
