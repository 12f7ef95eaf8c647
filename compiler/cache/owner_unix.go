//go:build unix

package cache

import (
	"io/fs"
	"os"
	"syscall"
)

// ownedBySelf reports whether fi is owned by this process's user.
func ownedBySelf(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}
