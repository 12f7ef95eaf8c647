package proc

import (
	"path/filepath"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// A run of many short steps looks the same command up in the same PATH
// again and again: with a PATH of a dozen directories, a dozen failed
// stats a step, about 2% of a step that runs /bin/true. So, like a shell's
// hash table, lookPath remembers where it found a command; unlike one it
// is never stale: an inotify instance watches every directory it searched
// and every directory above them (and above what their symbolic links
// lead to), and any change in one of them (an entry created, removed,
// renamed, or its mode or owner changed) forgets every answer before the
// next lookup would use one. A command found by an answer that fails to
// start (a symbolic link whose target went away) is looked up afresh
// (Run). Only a command looked up cacheAfter times is remembered, so a
// short run (a few steps) takes no inotify instance, of which a user has
// few (128 by default).

// cacheAfter is the number of lookups of a command in a PATH after which
// its answer is remembered.
const cacheAfter = 32

// watchMask is what a watched directory reports: a change of one of its
// entries, or of itself.
const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

var paths struct {
	sync.Mutex
	fd      int // the inotify instance; 0 before the first use, -1 when unusable
	looks   map[string]int
	found   map[string]string
	watched map[string]bool
}

// pathKey is the key of name looked up in pathVar.
func pathKey(pathVar, name string) string { return pathVar + "\x00" + name }

// cachedPath returns the remembered answer for name in pathVar, if any and
// if nothing watched changed since it was found.
func cachedPath(pathVar, name string) (string, bool) {
	paths.Lock()
	defer paths.Unlock()
	if paths.fd <= 0 || drainEvents() {
		return "", false
	}
	p, ok := paths.found[pathKey(pathVar, name)]
	return p, ok
}

// forgetPaths forgets every answer (a remembered command failed to start).
func forgetPaths() {
	paths.Lock()
	defer paths.Unlock()
	clear(paths.found)
}

// rememberPath counts a lookup of name in pathVar that found path; at the
// cacheAfter-th it watches the directories searched and those above and
// returns true: the caller must then look name up again (a change before
// the watches were set would be missed otherwise) and give the answer to
// keepPath. It returns false when no answer is to be kept.
func rememberPath(pathVar, name, found string) bool {
	paths.Lock()
	defer paths.Unlock()
	if paths.fd < 0 {
		return false
	}
	key := pathKey(pathVar, name)
	if paths.looks == nil {
		paths.looks, paths.found, paths.watched = map[string]int{}, map[string]string{}, map[string]bool{}
	}
	if paths.looks[key]++; paths.looks[key] < cacheAfter {
		return false
	}
	if paths.fd == 0 {
		fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
		if err != nil {
			paths.fd = -1
			return false
		}
		paths.fd = fd
	}
	drainEvents() // what happened before these watches is not news
	for _, d := range searchedDirs(pathVar, found) {
		if !watchUp(d) {
			return false
		}
		if r, err := filepath.EvalSymlinks(d); err == nil && r != d && !watchUp(r) {
			return false
		}
	}
	return true
}

// watchUp watches dir, if it exists, and every directory above it.
// Call with paths locked.
func watchUp(dir string) bool {
	for d := dir; ; d = filepath.Dir(d) {
		if !paths.watched[d] {
			_, err := unix.InotifyAddWatch(paths.fd, d, watchMask)
			switch err {
			case nil:
				paths.watched[d] = true
			case unix.ENOENT, unix.ENOTDIR:
				// not there (yet): its creation is an event of the
				// directory above, watched next
			default:
				return false // out of watches, or not readable
			}
		}
		if d == "/" || d == "." {
			return true
		}
	}
}

// keepPath remembers path as the answer for name in pathVar, unless a
// watched directory changed since rememberPath set the watches.
func keepPath(pathVar, name, path string) {
	paths.Lock()
	defer paths.Unlock()
	if paths.fd > 0 && !drainEvents() {
		paths.found[pathKey(pathVar, name)] = path
	}
}

// drainEvents reads every pending event and reports whether there was
// one; when there was, every answer and the watches' list are forgotten.
// Call with paths locked.
func drainEvents() bool {
	var buf [4096]byte
	any := false
	for {
		n, err := syscall.Read(paths.fd, buf[:])
		if n <= 0 || err != nil {
			break
		}
		any = true
	}
	if any {
		clear(paths.found)
		clear(paths.watched)
	}
	return any
}
