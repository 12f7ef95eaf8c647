//go:build !linux

package proc

// KeepInheritedFiles is a no-op off Linux.
func KeepInheritedFiles() {}
