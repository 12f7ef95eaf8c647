package proc

import (
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// A run's steps mostly run the same few commands, and looking a command up
// in PATH is a failed stat in every directory before the one that has it (a
// dozen system calls a step with a usual PATH). The path cache remembers
// where a command was found, from its second lookup on, and watches every
// PATH directory looked in with inotify: any change in one of them (an entry
// created, removed, renamed or given another mode; the directory itself
// removed or moved) drops the whole cache before the next lookup, so a
// command installed in an earlier directory mid-run is found exactly as a
// fresh search would find it. A PATH directory that does not exist cannot be
// watched: it is looked in at every lookup, as before. Where inotify cannot
// be had (no instance left for the user, no watch left), lookups search
// every time. Only directories on a local file system, reached by a path
// without symbolic links, are watched: a network file system reports to
// inotify only the changes made from this machine, and a link re-pointed
// elsewhere changes no watched directory; such directories are looked in
// at every lookup too.

// pathKey names one lookup: the command in one PATH.
type pathKey struct{ path, name string }

// A pathHit is where a command was found, and the PATH directories before it
// that did not exist when it was found (looked in again at every lookup).
type pathHit struct {
	file    string
	missing []string
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
	seen    map[pathKey]bool // looked up once: cached from the next lookup
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
	for _, dir := range h.missing {
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
// second search of the same command, it watches the PATH directories, so a
// change during the search is seen at the next lookup. It returns the
// generation to give remember, or -1 when the search's result is not to be
// cached.
func watchForLook(pathVar, name string) int {
	pathCache.Lock()
	defer pathCache.Unlock()
	k := pathKey{pathVar, name}
	if !pathCache.seen[k] {
		if pathCache.seen == nil || len(pathCache.seen) >= maxPathHits {
			pathCache.seen = map[pathKey]bool{}
		}
		pathCache.seen[k] = true
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
		unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR
	for _, dir := range filepath.SplitList(pathVar) {
		if dir == "" || !filepath.IsAbs(dir) || pathCache.watched[dir] || !watchable(dir) {
			continue
		}
		switch _, err := unix.InotifyAddWatch(pathCache.fd, dir, mask); err {
		case nil:
			pathCache.watched[dir] = true
		case unix.ENOENT, unix.ENOTDIR, unix.EACCES:
			// looked in at every lookup (pathHit.missing)
		default:
			return -1 // no watch left: search every time
		}
	}
	return pathCache.gen
}

// remember caches where name was found in pathVar by the search that
// watchForLook returned gen for, unless the cache was dropped since: the
// PATH directories before it that are not watched are kept to be looked in
// again.
func remember(pathVar, name, file string, gen int) {
	pathCache.Lock()
	defer pathCache.Unlock()
	dropIfChanged()
	if !pathCache.open || gen != pathCache.gen {
		return
	}
	var missing []string
	for _, dir := range filepath.SplitList(pathVar) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		if filepath.Join(dir, name) == file {
			break
		}
		if !pathCache.watched[dir] {
			missing = append(missing, dir)
		}
	}
	if pathCache.hits == nil || len(pathCache.hits) >= maxPathHits {
		pathCache.hits = map[pathKey]pathHit{}
	}
	pathCache.hits[pathKey{pathVar, name}] = pathHit{file: file, missing: missing}
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
// lookup there finds: dir is on a local file system and its path has no
// symbolic link (a link re-pointed elsewhere changes nothing inotify sees).
func watchable(dir string) bool {
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
