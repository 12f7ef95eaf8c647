package confine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// WriteFileNew writes data to abs (a path returned by Resolve or
// ResolveIn) only when abs does not exist yet, atomically: the data goes
// to a temporary file that is then hard-linked as abs, which fails when
// abs exists. Of several writers of the same abs exactly one wins; the
// others get an error wrapping fs.ErrExist. A reader sees all the data or
// no file.
func (d Dir) WriteFileNew(abs string, data []byte, perm os.FileMode) error {
	dirfd, name, tmp, err := d.writeTemp(abs, data, perm)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	defer unix.Unlinkat(dirfd, tmp, 0)
	return linkNew(dirfd, tmp, dirfd, name, abs)
}

// LinkNew gives the file from (a path returned by Resolve or ResolveIn)
// the second name to, creating to's parent directories, only when to does
// not exist yet (else an error wrapping fs.ErrExist). Both parents are
// opened from Base without following links. Unlike Rename it never
// replaces a file: of several writers of one name exactly one wins.
func (d Dir) LinkNew(from, to string) error {
	fromDir, fromName, toDir, toName, err := d.openPair(from, to)
	if err != nil {
		return err
	}
	defer unix.Close(fromDir)
	defer unix.Close(toDir)
	return linkNew(fromDir, fromName, toDir, toName, to)
}

// linkNew is linkat without following links; an existing destination is
// fs.ErrExist.
func linkNew(fromDir int, from string, toDir int, to, shown string) error {
	err := unix.Linkat(fromDir, from, toDir, to, 0)
	if errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("create %s: %w", shown, fs.ErrExist)
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", shown, err)
	}
	return nil
}

// Remove deletes the file abs (a path returned by Resolve or ResolveIn),
// walking from Base without following links. A file that does not exist
// (a parent that is a file included) is not an error.
func (d Dir) Remove(abs string) error {
	d = d.rooted()
	rel, err := d.checked(abs)
	if err != nil {
		return err
	}
	return d.unlink(abs, rel, 0, "", true)
}

// unlink removes the entry rel of the rooted d (abs as shown) with
// unlinkat's flags, its parents walked from Base without following links
// (a final link is removed, never followed). With missingOK, nothing there
// (nor any parent) is not an error. what names the kind in the error.
func (d Dir) unlink(abs, rel string, flags int, what string, missingOK bool) error {
	dirfd, err := d.walk(abs, filepath.Dir(rel), false)
	if missingOK && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR)) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	if err := unix.Unlinkat(dirfd, filepath.Base(rel), flags); err != nil && !(missingOK && errors.Is(err, unix.ENOENT)) {
		return fmt.Errorf("remove %s%s: %w", what, abs, err)
	}
	return nil
}
