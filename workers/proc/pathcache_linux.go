package proc

import (
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// A run's steps mostly run the same few commands, and looking a command up
// in PATH is a failed stat in every directory before the one that has it (a
// dozen system calls a step with a usual PATH). The path cache remembers
// where a command was found, from its watchFrom-th lookup on, and watches
// every PATH directory looked in with inotify: an entry created, removed or
// renamed in one of them, or the directory itself removed or moved, drops
// the whole cache before the next lookup, so a command installed mid-run in
// an earlier directory is found exactly as a fresh search would find it.
//
// The watches ask for no event on the directories' entries themselves (no
// IN_ATTRIB): the kernel would mark every cached entry of the directory for
// it when the watch is made, some 0.3 ms for a /usr/bin, at every run. What
// an entry's own change could alter is looked at again at every lookup
// instead: the entry found (one faccessat), and every entry of the same
// name in an earlier directory (a file without its x bit, a dangling
// symbolic link, a directory), which a chmod or a new target could make the
// command. A PATH directory that does not exist, that this process cannot
// search, or that is not on a local file system (a network file system
// reports to inotify only the changes made from this machine) or is reached
// through a symbolic link (re-pointed, it changes no watched directory), is
// looked in at every lookup too. Where inotify cannot be had (no instance
// left for the user, no watch left), lookups search every time.

// watchFrom is the lookup of a command from which it is cached: making the
// watches costs about what a dozen searches do, so a short run, whose
// steps look a command up a few times, searches every time.
const watchFrom = 16

// pathKey names one lookup: the command in one PATH.
type pathKey struct{ path, name string }

// A pathHit is where a command was found, and the PATH directories before it
// that are looked in again at every lookup: those not watched, and those
// that have an entry of the command's name that was not it.
type pathHit struct {
	file    string
	recheck []string
}

// maxPathHits bounds the cache (commands times PATHs of one process).
const maxPathHits = 256

var pathCache struct {
	sync.Mutex
	fd      int  // the inotify descriptor, when open
	open    bool // fd is open
	broken  bool // inotify is not to be had: search every time
	gen     int  // counts the drops, so a search that raced one is not kept
	watched map[string]bool
	seen    map[pathKey]int // lookups so far: cached from the watchFrom-th
	hits    map[pathKey]pathHit
}

// cachedLook returns where name was found in pathVar if the cache knows and
// nothing it watches changed since, else "".
func cachedLook(pathVar, name string) string {
	pathCache.Lock()
	defer pathCache.Unlock()
	dropIfChanged()
	h, ok := pathCache.hits[pathKey{pathVar, name}]
	if !ok {
		return ""
	}
	for _, dir := range h.recheck {
		if isExecutable(filepath.Join(dir, name)) {
			return "" // the directory was made since, and has it
		}
	}
	// The watches see the directory's entry change, not its target's: a
	// symbolic link whose target went away is searched past, as before.
	if unix.Faccessat(unix.AT_FDCWD, h.file, unix.X_OK, unix.AT_EACCESS) != nil {
		delete(pathCache.hits, pathKey{pathVar, name})
		return ""
	}
	return h.file
}

// watchForLook is called before a search of pathVar for name: from the
// watchFrom-th search of the same command, it watches the PATH
// directories, so a change during the search is seen at the next lookup. It returns the
// generation to give remember, or -1 when the search's result is not to be
// cached.
func watchForLook(pathVar, name string) int {
	pathCache.Lock()
	defer pathCache.Unlock()
	k := pathKey{pathVar, name}
	if n := pathCache.seen[k]; n < watchFrom-1 {
		if pathCache.seen == nil || (n == 0 && len(pathCache.seen) >= maxPathHits) {
			pathCache.seen = map[pathKey]int{}
		}
		pathCache.seen[k] = n + 1
		return -1
	}
	if pathCache.broken {
		return -1
	}
	if !pathCache.open {
		fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
		if err != nil {
			pathCache.broken = true
			return -1
		}
		pathCache.fd, pathCache.open = fd, true
		pathCache.watched = map[string]bool{}
	}
	const mask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
		unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR
	for _, dir := range filepath.SplitList(pathVar) {
		if dir == "" || !filepath.IsAbs(dir) || pathCache.watched[dir] || !watchable(dir) {
			continue
		}
		switch _, err := unix.InotifyAddWatch(pathCache.fd, dir, mask); err {
		case nil:
			pathCache.watched[dir] = true
		case unix.ENOENT, unix.ENOTDIR, unix.EACCES:
			// looked in at every lookup (pathHit.recheck)
		default:
			return -1 // no watch left: search every time
		}
	}
	return pathCache.gen
}

// remember caches where name was found in pathVar by the search that
// watchForLook returned gen for, unless the cache was dropped since: the
// PATH directories before it that are not watched, or that have an entry
// of that name (not the command: not executable, a dangling link, a
// directory), are kept to be looked in again.
func remember(pathVar, name, file string, gen int) {
	pathCache.Lock()
	defer pathCache.Unlock()
	dropIfChanged()
	if !pathCache.open || gen != pathCache.gen {
		return
	}
	var recheck []string
	for _, dir := range filepath.SplitList(pathVar) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if p == file {
			break
		}
		var st unix.Stat_t
		if !pathCache.watched[dir] || unix.Lstat(p, &st) != unix.ENOENT {
			recheck = append(recheck, dir)
		}
	}
	if pathCache.hits == nil || len(pathCache.hits) >= maxPathHits {
		pathCache.hits = map[pathKey]pathHit{}
	}
	pathCache.hits[pathKey{pathVar, name}] = pathHit{file: file, recheck: recheck}
}

// dropIfChanged empties the cache when a watched directory changed: the
// watches go too (a removed directory's watch is gone by itself), and the
// next lookups make them again.
func dropIfChanged() {
	if !pathCache.open {
		return
	}
	var buf [4096]byte
	if _, err := unix.Read(pathCache.fd, buf[:]); err == unix.EAGAIN {
		return
	}
	unix.Close(pathCache.fd)
	pathCache.open = false
	pathCache.gen++
	pathCache.watched = nil
	pathCache.hits = nil
}

// watchable reports whether the watch of dir sees every change of what a
// lookup there finds: this process may search dir (a change of the
// directory's own mode is not watched), dir is on a local file system and
// its path has no symbolic link (a link re-pointed elsewhere changes
// nothing inotify sees).
func watchable(dir string) bool {
	if unix.Faccessat(unix.AT_FDCWD, dir, unix.X_OK, unix.AT_EACCESS) != nil {
		return false
	}
	real, err := filepath.EvalSymlinks(dir)
	return err == nil && real == filepath.Clean(dir) && localFS(dir)
}

// localFS reports whether dir is on a file system of this machine's, whose
// every change inotify reports; an unknown one counts as not.
func localFS(dir string) bool {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return false
	}
	switch uint64(st.Type) {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.TMPFS_MAGIC,
		unix.OVERLAYFS_SUPER_MAGIC, unix.SQUASHFS_MAGIC, unix.RAMFS_MAGIC, unix.F2FS_SUPER_MAGIC,
		unix.EROFS_SUPER_MAGIC_V1, unix.BCACHEFS_SUPER_MAGIC, unix.EXFAT_SUPER_MAGIC,
		unix.MSDOS_SUPER_MAGIC, unix.ISOFS_SUPER_MAGIC, unix.NILFS_SUPER_MAGIC,
		zfsSuperMagic:
		return true
	}
	return false
}

// zfsSuperMagic is ZFS's f_type (not among x/sys/unix's constants).
const zfsSuperMagic = 0x2fc12fc1
