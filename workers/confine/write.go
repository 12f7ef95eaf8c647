package confine

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
)

// dirPerm is the mode of directories created for a file.
const dirPerm = 0o755

// open checks abs again and opens an os.Root at Base. The caller closes the
// root; the returned path is relative to Base.
func (d Dir) open(abs string) (*os.Root, string, error) {
	rel, err := d.checked(abs)
	if err != nil {
		return nil, "", err
	}
	root, err := os.OpenRoot(d.Base)
	if err != nil {
		return nil, "", fmt.Errorf("open project %s: %w", d.Base, err)
	}
	return root, rel, nil
}

// WriteFile writes data to abs, a path returned by Resolve or ResolveIn,
// creating its parent directories. The write goes through an os.Root opened at
// Base, so a link created after the check cannot lead outside the project, and
// it is atomic: the data goes to a temporary file in the same directory, which
// is then renamed over abs.
func (d Dir) WriteFile(abs string, data []byte, perm os.FileMode) (err error) {
	root, rel, err := d.open(abs)
	if err != nil {
		return err
	}
	defer root.Close()
	parent := filepath.Dir(rel)
	if err := root.MkdirAll(parent, dirPerm); err != nil {
		return fmt.Errorf("write %s: %w", abs, err)
	}
	tmp := filepath.Join(parent, "."+filepath.Base(rel)+".tmp-"+rand.Text())
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", abs, err)
	}
	defer func() {
		if err != nil {
			_ = root.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", abs, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", abs, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", abs, err)
	}
	if err := root.Rename(tmp, rel); err != nil {
		return fmt.Errorf("write %s: %w", abs, err)
	}
	return nil
}

// Create creates or truncates abs, a path returned by Resolve or ResolveIn, for
// streaming writes, creating its parent directories. Like WriteFile it goes
// through an os.Root opened at Base. The caller closes the file.
func (d Dir) Create(abs string) (*os.File, error) {
	root, rel, err := d.open(abs)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	if err := root.MkdirAll(filepath.Dir(rel), dirPerm); err != nil {
		return nil, fmt.Errorf("create %s: %w", abs, err)
	}
	f, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", abs, err)
	}
	return f, nil
}

// Open opens abs, a path returned by Resolve or ResolveIn, for reading through
// an os.Root opened at Base. The caller closes the file.
func (d Dir) Open(abs string) (*os.File, error) {
	root, rel, err := d.open(abs)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.Open(rel)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", abs, err)
	}
	return f, nil
}
