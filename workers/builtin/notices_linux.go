package builtin

import (
	"path/filepath"
	"sync"
	"syscall"
)

// A run's VM asks for new conflict notices before every step, and almost
// always there are none. Opening RUN_ROOT/conflicts.jsonl by its path to
// find that out (a lookup of every directory of the path, mostly to fail)
// was a seventh of the VM's own CPU per no-op block. Instead the file is
// created empty at the createLook-th look and kept open: a look is then
// one fstat, and the notices are read again only when its size differs
// from what was read last (the file only grows: appendNotice appends
// whole lines). The looks before only open it if it is there: creating a
// file costs more than a dozen failed opens, so a short run (the many
// small runs of a busy BASE) creates none.

// A noticeWatch is the open notices file of one RUN_ROOT.
type noticeWatch struct {
	fd    int   // -1: the file was not there at the last look
	looks int   // looks while fd is -1
	size  int64 // the size when the file was last read
	count int   // the notices read then
	read  bool  // size and count are set
}

// createLook is the look at which an absent notices file is created.
const createLook = 16

// maxNoticeWatches bounds the files kept open (runs of this process).
const maxNoticeWatches = 16

var noticeWatches struct {
	sync.Mutex
	m map[string]*noticeWatch
}

// unchangedNotices reports whether root's notices file is known to hold
// exactly the skip notices read last time: then there is nothing new.
func unchangedNotices(root string, skip int) bool {
	noticeWatches.Lock()
	defer noticeWatches.Unlock()
	w := noticeWatches.m[root]
	if w == nil || w.fd < 0 {
		flags := syscall.O_RDONLY | syscall.O_CLOEXEC
		if w != nil {
			if w.looks++; w.looks >= createLook {
				flags |= syscall.O_CREAT
			}
		}
		fd, err := syscall.Open(filepath.Join(root, noticesFile), flags, 0o644)
		if err == syscall.ENOENT && flags&syscall.O_CREAT == 0 {
			fd = -1 // no notices yet: none to read, whatever skip says
			if w != nil {
				return true
			}
		} else if err != nil {
			return false
		}
		if w != nil {
			w.fd = fd
			return false
		}
		if noticeWatches.m == nil {
			noticeWatches.m = map[string]*noticeWatch{}
		}
		if len(noticeWatches.m) >= maxNoticeWatches {
			for r, old := range noticeWatches.m {
				if old.fd >= 0 {
					_ = syscall.Close(old.fd)
				}
				delete(noticeWatches.m, r)
			}
		}
		noticeWatches.m[root] = &noticeWatch{fd: fd, looks: 1}
		return fd < 0 // absent: no notices, whatever skip says
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(w.fd, &st); err != nil || st.Nlink == 0 {
		// the file was removed (its run directory too, perhaps): open
		// it by its path again next time
		_ = syscall.Close(w.fd)
		delete(noticeWatches.m, root)
		return false
	}
	if w.read && st.Size == w.size && skip == w.count {
		return true
	}
	w.read = false
	w.size = st.Size
	return false
}

// noticesRead records that root's notices file, of the size unchangedNotices
// saw last, held count notices.
func noticesRead(root string, count int) {
	noticeWatches.Lock()
	defer noticeWatches.Unlock()
	if w := noticeWatches.m[root]; w != nil && !w.read {
		w.count, w.read = count, true
	}
}
