//go:build !linux

package store

import "os"

// datasync flushes f's data; without fdatasync(2) it is a full fsync.
func datasync(f *os.File) error { return f.Sync() }

// fsync flushes f's data and metadata.
func fsync(f *os.File) error { return f.Sync() }
