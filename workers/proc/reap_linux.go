package proc

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Nothing a step started outlives it (CONTRACT 3.5, STYLE): the step's
// process group is killed when its leader exits, a subreaper catches what
// left the group (a double fork into a new session), and each group is
// recorded in RUN_ROOT/procs-* so that a resume kills what an attempt cut
// off by a crash left running.

var subreaper sync.Once

// becomeSubreaper makes this process the subreaper of its descendants
// (prctl PR_SET_CHILD_SUBREAPER): an orphaned grandchild of a step is
// reparented here, not to init, so reapOrphans can find it.
func becomeSubreaper() {
	subreaper.Do(func() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) })
}

// leaders are the pids of the step processes running now.
var leaders = struct {
	sync.Mutex
	m map[int]bool
}{m: map[int]bool{}}

// starting is held (shared) from a step's fork until its pid is in leaders,
// and exclusively by reapOrphans, which so never mistakes a step being
// started for an orphan.
var starting sync.RWMutex

// startStep runs start (the fork) and registers the new leader's pid.
func startStep(start func() (int, error)) error {
	starting.RLock()
	defer starting.RUnlock()
	pid, err := start()
	if err == nil {
		addLeader(pid)
	}
	return err
}

func addLeader(pid int) {
	leaders.Lock()
	leaders.m[pid] = true
	leaders.Unlock()
}

// isLeader reports whether pid is a step's leader; leaders is held.
func isLeader(pid int) bool { return leaders.m[pid] }

func dropLeader(pid int) {
	leaders.Lock()
	delete(leaders.m, pid)
	leaders.Unlock()
}

// killGroup sends SIGKILL to process group pgid (nothing when it is gone).
func killGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) }

// settleGroup waits, at most groupSettle, until every member of the
// killed group pgid is gone, reaping those that were reparented here, so
// that the grandchildren they leave are orphans already when reapOrphans
// looks (SIGKILL is delivered asynchronously: a member still exiting
// would hand its children over only after the scan). Each round sends
// the group SIGKILL again (a member that forked as the first one came
// gets it too); its ESRCH says the group is empty, the common case, which
// so costs one system call. It reports whether the group is gone (false:
// a member outlived groupSettle).
func settleGroup(pgid int) bool {
	deadline := time.Now().Add(groupSettle)
	for syscall.Kill(-pgid, syscall.SIGKILL) != syscall.ESRCH {
		reaped := false
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-pgid, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
			reaped = true
		}
		if time.Now().After(deadline) {
			return false
		}
		if !reaped {
			time.Sleep(200 * time.Microsecond)
		}
	}
	return true
}

// groupSettle bounds settleGroup.
const groupSettle = 200 * time.Millisecond

// A procInfo is what /proc/<pid>/stat tells about one process.
type procInfo struct {
	pid, ppid, pgrp int
	start           uint64 // clock ticks after boot
}

// readSmall reads a small file (of /proc) with plain system calls: an
// os.File would register it with the poller, which costs more calls than
// the read itself.
func readSmall(path string) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	buf := make([]byte, 0, 512)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// readProc reads /proc/<pid>/stat.
func readProc(pid int) (procInfo, bool) {
	b, err := readSmall("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procInfo{}, false
	}
	// Fields after the command: state ppid pgrp session tty tpgid flags
	// minflt cminflt majflt cmajflt utime stime cutime cstime priority
	// nice threads itrealvalue starttime ...
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return procInfo{}, false
	}
	p := procInfo{pid: pid}
	p.ppid, _ = strconv.Atoi(f[1])
	p.pgrp, _ = strconv.Atoi(f[2])
	p.start, _ = strconv.ParseUint(f[19], 10, 64)
	return p, true
}

// processes lists the live processes.
func processes() []procInfo {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []procInfo
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

// children lists the live children of this process's main thread, from
// /proc/self/task/<pid>/children. A process orphaned below a subreaper is
// reparented to the subreaper's first live thread, the main thread (Go's
// never exits), so every orphan is there: one small read, where a scan of
// /proc reads every process on the machine. ok is false when the kernel
// does not offer the children files (CONFIG_PROC_CHILDREN); then the caller
// scans /proc. self is this process's pid. A pid for which skip (when
// not nil) is true is left out unread: with many steps running, their
// leaders are most of the list.
func children(self int, skip func(pid int) bool) (out []procInfo, ok bool) {
	b, err := readChildren(self)
	if err != nil {
		return nil, false
	}
	for _, field := range strings.Fields(b) {
		pid, err := strconv.Atoi(field)
		if err != nil || skip != nil && skip(pid) {
			continue
		}
		if p, ok := readProc(pid); ok && p.ppid == self {
			out = append(out, p)
		}
	}
	return out, true
}

// selfIDs are this process's pid and process group, read once: neither
// changes while it runs (smithvm never calls setpgid or setsid on itself,
// and a parent can move a child to another group only before it execs).
var selfIDs = sync.OnceValues(func() (int, int) { return os.Getpid(), syscall.Getpgrp() })

// childrenFile is the main thread's children file, opened at its first
// read and kept open: a read at offset 0 of a seq file of /proc makes its
// text afresh, so a step's look is one pread instead of an open (a walk
// through /proc), a read and a close.
var childrenFile = struct {
	sync.Mutex
	fd  int    // -1 until opened
	buf []byte // the last read's text (reused)
}{fd: -1}

// readChildren reads /proc/self/task/<self>/children into a buffer kept
// for the next read (an empty list, the common case, allocates nothing).
func readChildren(self int) (string, error) {
	childrenFile.Lock()
	defer childrenFile.Unlock()
	path := func() string { return "/proc/self/task/" + strconv.Itoa(self) + "/children" }
	if childrenFile.fd < 0 {
		fd, err := syscall.Open(path(), syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return "", &os.PathError{Op: "open", Path: path(), Err: err}
		}
		childrenFile.fd = fd
	}
	buf := childrenFile.buf[:0]
	if buf == nil {
		buf = make([]byte, 0, 512)
	}
	defer func() { childrenFile.buf = buf }()
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Pread(childrenFile.fd, buf[len(buf):cap(buf)], int64(len(buf)))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			_ = syscall.Close(childrenFile.fd)
			childrenFile.fd = -1
			return "", &os.PathError{Op: "read", Path: path(), Err: err}
		}
		if n == 0 {
			return string(buf), nil
		}
		buf = buf[:len(buf)+n]
	}
}

// reapOrphans kills and reaps the processes that were reparented to this
// process (its subreaper) and run in a process group of their own: the
// leftovers of steps that left their group. Steps running now and this
// process's own children (git, in its group) are left alone.
func reapOrphans() {
	self, own := selfIDs()
	starting.Lock()
	defer starting.Unlock()
	leaders.Lock()
	defer leaders.Unlock()
	procs, ok := children(self, isLeader)
	if !ok {
		procs = processes()
	}
	for _, p := range procs {
		if p.ppid != self || p.pgrp == own || leaders.m[p.pid] || leaders.m[p.pgrp] {
			continue
		}
		killGroup(p.pgrp)
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(p.pid, &ws, 0, nil)
	}
}

// slotPrefix begins the name of a record file in RUN_ROOT
// (groupslot_linux.go): procs-<pid>-<n>.
const slotPrefix = "procs-"

// legacyProcsDir is RUN_ROOT/procs, where earlier versions kept the
// record files: what a crash of one of them left running is still killed
// by a resume with this one.
func legacyProcsDir(runRoot string) string { return filepath.Join(runRoot, "procs") }

// recordGroup records the group pgid and start, its leader's start time
// or earlier (bootTicks read before the fork), in a slot of a record file
// of RUN_ROOT (groupslot_linux.go), so a resume after a crash of smithvm finds the
// group. It is not fsynced, on purpose: the record only matters while the
// machine keeps running (a crash of the operating system ends the group
// with it), and a record written before smithvm is SIGKILLed stays in the
// page cache, where the resume reads it.
func recordGroup(runRoot string, pgid int, start uint64) (*groupSlot, error) {
	s, err := takeSlot(runRoot)
	if err != nil {
		return nil, err
	}
	if err := s.write(pgid, start); err != nil {
		releaseSlot(s)
		return nil, err
	}
	return s, nil
}

// clockTicks is USER_HZ, the unit of the start time in /proc/<pid>/stat:
// 100 on every architecture Go runs Linux on.
const clockTicks = 100

// bootTicks is the time since boot (CLOCK_BOOTTIME, the clock of a
// process's start time in /proc/<pid>/stat) in clock ticks, rounded down.
// Read before a fork, it is no later than the child's start time, which a
// process in the child's group then never precedes: the group's record
// costs one clock reading instead of a read of /proc/<pid>/stat (an open,
// two reads and a close per step). It is 0 if the clock cannot be read,
// which spares nothing a record of the true start would kill.
func bootTicks() uint64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return 0
	}
	return uint64(ts.Sec)*clockTicks + uint64(ts.Nsec)/(1e9/clockTicks)
}

// forgetGroup blanks the record of a group whose step is over.
func forgetGroup(s *groupSlot) { releaseSlot(s) }

// KillLeftovers kills every process of the step process groups that the
// record files of RUN_ROOT record (an attempt cut off by a crash of
// smithvm) and forgets them. A process counts only if it is in the
// recorded group and started no earlier than the group's leader, so a
// reused pid is spared. It reports how many processes it killed.
func KillLeftovers(runRoot string) int {
	dropSlots(runRoot)
	var files []string
	if ents, err := os.ReadDir(runRoot); err == nil {
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), slotPrefix) && e.Type().IsRegular() {
				files = append(files, filepath.Join(runRoot, e.Name()))
			}
		}
	}
	legacy := legacyProcsDir(runRoot)
	ents, err := os.ReadDir(legacy)
	for _, e := range ents {
		files = append(files, filepath.Join(legacy, e.Name()))
	}
	var procs []procInfo
	killed := 0
	for _, path := range files {
		b, _ := os.ReadFile(path)
		// Records of recordWidth bytes, one per slot of a smithvm (a slot
		// not written yet reads as zero bytes and is skipped).
		for off := 0; off+recordWidth <= len(b); off += recordWidth {
			var pgid int
			var start uint64
			if _, err := fmt.Sscanf(string(b[off:off+recordWidth]), "%d %d", &pgid, &start); err != nil || pgid <= 1 {
				continue
			}
			if procs == nil {
				procs = processes()
			}
			for _, p := range procs {
				if p.pgrp == pgid && p.start >= start {
					if syscall.Kill(p.pid, syscall.SIGKILL) == nil {
						killed++
					}
				}
			}
		}
		os.Remove(path)
	}
	if err == nil {
		os.Remove(legacy) // once empty
	}
	return killed
}

// dieWithParent has the child killed when smithvm dies (Spec.DieWithParent).
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
