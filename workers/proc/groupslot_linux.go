package proc

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// A step's process group is recorded in a slot: a file of RUN_ROOT/procs
// that this process keeps open and rewrites in place (one pwrite) to hold
// "PGID START" while a step runs and "0 0" when it does not. A file
// created and removed per step cost a directory entry each time (open with
// O_CREAT, unlink), a fifth of smithvm's CPU per step. KillLeftovers
// reads every file of RUN_ROOT/procs the same way and skips "0 0".

// A groupSlot is one open record file.
type groupSlot struct {
	root string // RUN_ROOT
	path string
	fd   int
}

// recordWidth is the size of a record: "PGID START", spaces, '\n'. Every
// record is written whole at offset 0, so a shorter one never leaves the
// tail of a longer one behind.
const recordWidth = 48

// maxFreeSlots bounds the slots kept open between steps (all runs of this
// process together); a slot released beyond it is closed and removed.
const maxFreeSlots = 32

// slots holds the free slots by RUN_ROOT.
var slots struct {
	sync.Mutex
	free map[string][]*groupSlot
	n    int // free slots in all
	made int // slot files created by this process: their names
}

// takeSlot returns a free slot of runRoot, or creates one.
func takeSlot(runRoot string) (*groupSlot, error) {
	slots.Lock()
	if l := slots.free[runRoot]; len(l) > 0 {
		s := l[len(l)-1]
		slots.free[runRoot] = l[:len(l)-1]
		slots.n--
		slots.Unlock()
		return s, nil
	}
	slots.made++
	name := "slot-" + strconv.Itoa(os.Getpid()) + "-" + strconv.Itoa(slots.made)
	slots.Unlock()
	dir := procsDir(runRoot)
	if _, made := procsMade.Load(dir); !made {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		procsMade.Store(dir, true)
	}
	path := filepath.Join(dir, name)
	fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_TRUNC|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		procsMade.Delete(dir) // perhaps the directory was removed: make it again next time
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return &groupSlot{root: runRoot, path: path, fd: fd}, nil
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
	n, err := syscall.Pwrite(s.fd, rec, 0)
	if err == nil && n < len(rec) {
		err = syscall.EIO
	}
	if err != nil {
		return &os.PathError{Op: "write", Path: s.path, Err: err}
	}
	return nil
}

// drop closes and removes s.
func (s *groupSlot) drop() {
	_ = syscall.Close(s.fd)
	_ = syscall.Unlink(s.path)
}

// releaseSlot blanks s and keeps it for the next step of its run.
func releaseSlot(s *groupSlot) {
	if s.write(0, 0) != nil {
		s.drop()
		return
	}
	slots.Lock()
	defer slots.Unlock()
	if slots.n >= maxFreeSlots {
		s.drop()
		return
	}
	if slots.free == nil {
		slots.free = map[string][]*groupSlot{}
	}
	slots.free[s.root] = append(slots.free[s.root], s)
	slots.n++
}

// dropSlots closes the free slots of runRoot (KillLeftovers removes their
// files).
func dropSlots(runRoot string) {
	slots.Lock()
	defer slots.Unlock()
	for _, s := range slots.free[runRoot] {
		_ = syscall.Close(s.fd)
	}
	slots.n -= len(slots.free[runRoot])
	delete(slots.free, runRoot)
}
