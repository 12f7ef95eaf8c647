package proc

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// A step's process group is recorded in a slot: a fixed-width record in a
// file RUN_ROOT/procs-<pid>-<n> that this process keeps open and rewrites
// in place (one pwrite) to hold "PGID START" while a step runs and "0 0"
// when it does not. Every step of a run root in this process shares one
// file, slot i at offset i*recordWidth: a file created and removed per
// step cost a directory entry each time (open with O_CREAT, unlink), a
// fifth of smithvm's CPU per step, and a file per running step a
// descriptor per step (500 parallel steps, 500 files). The file sits in
// RUN_ROOT itself, not in a directory of its own: a directory made per
// run was 2-3% of the CPU of a short run (an ext4 directory costs a block
// and an inode search). KillLeftovers reads every record of every such
// file (and of the RUN_ROOT/procs/ directory older versions wrote) and
// skips "0 0".

// A slotFile is the open record file of one run root.
type slotFile struct {
	root, path string
	fd         int
	free       []int // free slot indexes
	n          int   // slots in the file
	used       int   // slots taken
	dropped    bool  // dropSlots forgot the file: closed when its last slot is released
}

// A groupSlot is one record of a slotFile.
type groupSlot struct {
	f   *slotFile
	idx int
}

// recordWidth is the size of a record: "PGID START", spaces, '\n'. Every
// record is written whole at its offset, so a shorter one never leaves the
// tail of a longer one behind.
const recordWidth = 48

// maxIdleFiles bounds the record files kept open with no step running
// (all run roots of this process together); one released beyond it is
// closed and removed.
const maxIdleFiles = 8

// slots holds the record file of each run root.
var slots struct {
	sync.Mutex
	files map[string]*slotFile
	idle  int // files with no slot taken
	made  int // record files created by this process: their names
}

// takeSlot returns a free slot of runRoot's record file, creating the
// file when this process has none.
func takeSlot(runRoot string) (*groupSlot, error) {
	slots.Lock()
	f := slots.files[runRoot]
	if f == nil {
		slots.made++
		name := slotPrefix + strconv.Itoa(os.Getpid()) + "-" + strconv.Itoa(slots.made)
		slots.Unlock()
		nf, err := openSlotFile(runRoot, name)
		if err != nil {
			return nil, err
		}
		slots.Lock()
		if f = slots.files[runRoot]; f == nil {
			f = nf
			if slots.files == nil {
				slots.files = map[string]*slotFile{}
			}
			slots.files[runRoot] = f
			slots.idle++
		} else {
			// Another step of the run made one meanwhile.
			_ = syscall.Close(nf.fd)
			_ = syscall.Unlink(nf.path)
		}
	}
	if f.used == 0 {
		slots.idle--
	}
	f.used++
	s := &groupSlot{f: f}
	if k := len(f.free); k > 0 {
		s.idx = f.free[k-1]
		f.free = f.free[:k-1]
	} else {
		s.idx = f.n
		f.n++
	}
	slots.Unlock()
	return s, nil
}

// openSlotFile creates the record file name in runRoot (and runRoot when
// it is missing).
func openSlotFile(runRoot, name string) (*slotFile, error) {
	path := filepath.Join(runRoot, name)
	flags := syscall.O_WRONLY | syscall.O_CREAT | syscall.O_TRUNC | syscall.O_CLOEXEC
	fd, err := syscall.Open(path, flags, 0o644)
	if err == syscall.ENOENT {
		if err = os.MkdirAll(runRoot, 0o755); err == nil {
			fd, err = syscall.Open(path, flags, 0o644)
		}
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return &slotFile{root: runRoot, path: path, fd: fd}, nil
}

// write writes the record "pgid start" into s.
func (s *groupSlot) write(pgid int, start uint64) error {
	rec := make([]byte, 0, recordWidth)
	rec = strconv.AppendInt(rec, int64(pgid), 10)
	rec = append(rec, ' ')
	rec = strconv.AppendUint(rec, start, 10)
	for len(rec) < recordWidth-1 {
		rec = append(rec, ' ')
	}
	rec = append(rec, '\n')
	n, err := syscall.Pwrite(s.f.fd, rec, int64(s.idx)*recordWidth)
	if err == nil && n < len(rec) {
		err = syscall.EIO
	}
	if err != nil {
		return &os.PathError{Op: "write", Path: s.f.path, Err: err}
	}
	return nil
}

// releaseSlot blanks s and gives it back for the next step of its run.
func releaseSlot(s *groupSlot) { putSlot(s, s.write(0, 0) == nil) }

// putSlot gives s back, to be taken again when reuse is set (a slot whose
// blanking failed is not: its record may still name the group), and
// closes its file when no step uses it and it was dropped or too many
// files are idle (the file is then removed).
func putSlot(s *groupSlot, reuse bool) {
	slots.Lock()
	defer slots.Unlock()
	f := s.f
	if reuse {
		f.free = append(f.free, s.idx)
	}
	f.used--
	if f.used > 0 {
		return
	}
	if f.dropped {
		_ = syscall.Close(f.fd)
		return
	}
	if slots.idle >= maxIdleFiles {
		delete(slots.files, f.root)
		_ = syscall.Close(f.fd)
		_ = syscall.Unlink(f.path)
		return
	}
	slots.idle++
}

// dropSlots forgets runRoot's record file and closes it unless a step
// still uses it (KillLeftovers removes the files).
func dropSlots(runRoot string) {
	slots.Lock()
	defer slots.Unlock()
	f := slots.files[runRoot]
	if f == nil {
		return
	}
	delete(slots.files, runRoot)
	if f.used > 0 {
		f.dropped = true
		return
	}
	slots.idle--
	_ = syscall.Close(f.fd)
}
