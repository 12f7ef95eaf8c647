package confine

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// MkdirAll creates the directory abs (a path returned by Resolve or
// ResolveIn) and its parents, through an os.Root opened at Base.
func (d Dir) MkdirAll(abs string) error {
	root, rel, err := d.open(abs)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.MkdirAll(rel, dirPerm); err != nil {
		return fmt.Errorf("create %s: %w", abs, err)
	}
	return nil
}

// Rename moves the file from to to (both returned by Resolve or ResolveIn),
// creating to's parent directories, through an os.Root opened at Base: a
// link created after the checks cannot lead outside the project. The
// rename is atomic within one file system.
func (d Dir) Rename(from, to string) error {
	root, relFrom, err := d.open(from)
	if err != nil {
		return err
	}
	defer root.Close()
	relTo, err := d.checked(to)
	if err != nil {
		return err
	}
	if err := root.MkdirAll(filepath.Dir(relTo), dirPerm); err != nil {
		return fmt.Errorf("move %s: %w", from, err)
	}
	if err := root.Rename(relFrom, relTo); err != nil {
		return fmt.Errorf("move %s to %s: %w", from, to, err)
	}
	return nil
}

// Exists reports whether abs (a path returned by Resolve or ResolveIn)
// exists, without following a final symbolic link.
func (d Dir) Exists(abs string) (bool, error) {
	root, rel, err := d.open(abs)
	if err != nil {
		return false, err
	}
	defer root.Close()
	_, err = root.Lstat(rel)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, err
}
