//go:build !linux

package proc

// Without inotify no PATH answer is remembered.
func cachedPath(string, string) (string, bool) { return "", false }
func rememberPath(string, string, string) bool { return false }
func keepPath(string, string, string)          {}
func forgetPaths()                             {}
