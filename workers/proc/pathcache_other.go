//go:build !linux

package proc

// Without inotify, every lookup searches PATH.
func cachedLook(pathVar, name string) string       { return "" }
func watchForLook(pathVar, name string) int        { return -1 }
func remember(pathVar, name, file string, gen int) {}
