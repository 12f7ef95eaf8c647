package main

import (
	"os"
	"syscall"
)

// datasync is the fdatasync of a durable step.
func datasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
