package store

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
)

// TestSyncFile checks both ways of making the sync call (without telling
// the scheduler where there is more than one P, the usual way with one):
// a file syncs, and a descriptor that cannot be synced (a pipe) is an
// error that names it.
func TestSyncFile(t *testing.T) {
	for _, procs := range []int{1, 2} {
		prev := runtime.GOMAXPROCS(procs)
		f, err := os.Create(filepath.Join(t.TempDir(), "f"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString("x\n"); err != nil {
			t.Fatal(err)
		}
		if err := datasync(f); err != nil {
			t.Errorf("GOMAXPROCS %d: datasync = %v", procs, err)
		}
		if err := fsync(f); err != nil {
			t.Errorf("GOMAXPROCS %d: fsync = %v", procs, err)
		}
		f.Close()
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		err = fsync(w)
		var pe *os.PathError
		if !errors.As(err, &pe) || !errors.Is(err, syscall.EINVAL) || pe.Path != w.Name() {
			t.Errorf("GOMAXPROCS %d: fsync of a pipe = %v, want EINVAL naming %s", procs, err, w.Name())
		}
		r.Close()
		w.Close()
		runtime.GOMAXPROCS(prev)
	}
}
