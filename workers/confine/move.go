package confine

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// MkdirAll creates the directory abs (a path returned by Resolve or
// ResolveIn) and its parents, walking from Base without following links.
func (d Dir) MkdirAll(abs string) error {
	d = d.rooted()
	rel, err := d.checked(abs)
	if err != nil {
		return err
	}
	fd, err := d.walk(abs, rel, true)
	if err != nil {
		return err
	}
	unix.Close(fd)
	return nil
}

// Rename moves the file from to to (both returned by Resolve or ResolveIn),
// creating to's parent directories; both parents are opened from Base
// without following links, so a link created after the checks is refused.
// The rename is atomic within one file system.
func (d Dir) Rename(from, to string) error {
	fromDir, fromName, toDir, toName, err := d.openPair(from, to)
	if err != nil {
		return err
	}
	defer unix.Close(fromDir)
	defer unix.Close(toDir)
	if err := unix.Renameat(fromDir, fromName, toDir, toName); err != nil {
		return fmt.Errorf("move %s to %s: %w", from, to, err)
	}
	return nil
}

// openPair opens the parents of from and to (both returned by Resolve or
// ResolveIn) from Base without following links, creating to's, and returns
// them with the two names: what Rename and LinkNew act on.
func (d Dir) openPair(from, to string) (fromDir int, fromName string, toDir int, toName string, err error) {
	d = d.rooted()
	relFrom, err := d.checked(from)
	if err != nil {
		return -1, "", -1, "", err
	}
	relTo, err := d.checked(to)
	if err != nil {
		return -1, "", -1, "", err
	}
	fromDir, err = d.walk(from, filepath.Dir(relFrom), false)
	if err != nil {
		return -1, "", -1, "", err
	}
	toDir, err = d.walk(to, filepath.Dir(relTo), true)
	if err != nil {
		unix.Close(fromDir)
		return -1, "", -1, "", err
	}
	return fromDir, filepath.Base(relFrom), toDir, filepath.Base(relTo), nil
}

// Exists reports whether abs (a path returned by Resolve or ResolveIn)
// exists, without following a final symbolic link.
func (d Dir) Exists(abs string) (bool, error) {
	d = d.rooted()
	rel, err := d.checked(abs)
	if err != nil {
		return false, err
	}
	dirfd, err := d.walk(abs, filepath.Dir(rel), false)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer unix.Close(dirfd)
	var st unix.Stat_t
	err = unix.Fstatat(dirfd, filepath.Base(rel), &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, err
}
