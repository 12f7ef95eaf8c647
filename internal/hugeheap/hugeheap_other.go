//go:build !linux

package hugeheap

// Grow does nothing here: huge pages are advised on Linux only.
func Grow(n int) {}
