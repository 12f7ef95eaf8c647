package confine

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// dirPerm is the mode of directories created for a file.
const dirPerm = 0o755

// tempSuffix separates a file's name from the random part of its
// temporary twin: ".NAME.tmp-XXXX" (XXXX is rand.Text, 26 characters of
// the base32 alphabet).
const tempSuffix = ".tmp-"

// IsTempName reports whether name is the name of one of WriteFile's
// temporary files, which a kill in the middle of a write leaves behind.
func IsTempName(name string) bool {
	i := strings.LastIndex(name, tempSuffix)
	if !strings.HasPrefix(name, ".") || i < 2 {
		return false
	}
	r := name[i+len(tempSuffix):]
	if len(r) != 26 {
		return false
	}
	for _, c := range r {
		if !('A' <= c && c <= 'Z' || '2' <= c && c <= '7') {
			return false
		}
	}
	return true
}

// maxName is the longest name of one file the file systems take (NAME_MAX).
const maxName = 255

// tempName is the name of a new temporary twin of the file name:
// ".NAME.tmp-XXXX", with NAME cut (at a rune's start) so that a name as long
// as a file system takes still has a twin it takes.
func tempName(name string) string {
	r := rand.Text()
	if over := 1 + len(name) + len(tempSuffix) + len(r) - maxName; over > 0 {
		n := len(name) - over
		for n > 0 && !utf8.RuneStart(name[n]) {
			n--
		}
		name = name[:n]
	}
	return "." + name + tempSuffix + r
}

// WriteFile writes data to abs, a path returned by Resolve or ResolveIn,
// creating its parent directories. Every directory on the way is opened
// without following links (a link created after the check is a violation,
// even one that stays inside the project), and the write is atomic: the data
// goes to a temporary file in the same directory, which is then renamed over
// abs.
func (d Dir) WriteFile(abs string, data []byte, perm os.FileMode) error {
	dirfd, name, tmp, err := d.writeTemp(abs, data, perm)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	if err := unix.Renameat(dirfd, tmp, dirfd, name); err != nil {
		_ = unix.Unlinkat(dirfd, tmp, 0)
		return fmt.Errorf("write %s: %w", abs, err)
	}
	return nil
}

// writeTemp writes data, synced, to a new temporary file beside abs (a
// path returned by Resolve or ResolveIn), creating abs's parent
// directories without following links. It returns the open parent, abs's
// name and the temporary file's name; the caller gives the file its name
// (rename, link) and closes dirfd. On error nothing is left behind.
func (d Dir) writeTemp(abs string, data []byte, perm os.FileMode) (dirfd int, name, tmp string, err error) {
	d = d.rooted()
	rel, err := d.checked(abs)
	if err != nil {
		return -1, "", "", err
	}
	dirfd, err = d.walk(abs, filepath.Dir(rel), true)
	if err != nil {
		return -1, "", "", err
	}
	name = filepath.Base(rel)
	tmp = tempName(name)
	fd, err := openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		unix.Close(dirfd)
		return -1, "", "", fmt.Errorf("write %s: %w", abs, err)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(filepath.Dir(abs), tmp))
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = unix.Unlinkat(dirfd, tmp, 0)
		unix.Close(dirfd)
		return -1, "", "", fmt.Errorf("write %s: %w", abs, err)
	}
	return dirfd, name, tmp, nil
}

// Create creates or truncates abs, a path returned by Resolve or ResolveIn, for
// streaming writes, creating its parent directories. Like WriteFile it opens
// every component without following links. The caller closes the file.
func (d Dir) Create(abs string) (*os.File, error) {
	f, err := d.openFile(abs, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644, true)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, err
		}
		return nil, fmt.Errorf("create %s: %w", abs, err)
	}
	return f, nil
}

// Open opens abs, a path returned by Resolve or ResolveIn, for reading,
// opening every component without following links at the moment of use. The
// caller closes the file.
func (d Dir) Open(abs string) (*os.File, error) {
	f, err := d.openFile(abs, os.O_RDONLY, 0, false)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, err
		}
		return nil, fmt.Errorf("open %s: %w", abs, err)
	}
	return f, nil
}

// WriteFileAtomic writes data to path, one of Smith's own files (under
// RUN_ROOT or BASE/.orchestrator, or an output smithc was told to write),
// never a user's or a model's path (those go through Dir.WriteFile). It is
// the one atomic write: the parent directories are created, the data goes
// to a fresh temporary file in the same directory, which is fsynced,
// given mode perm and renamed over path, and the directory is fsynced, so
// after a crash path holds the old data or the new, never a mix, and a
// completed write survives.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return CopyFileAtomic(path, bytes.NewReader(data), perm)
}

// CopyFileAtomic is WriteFileAtomic with the data read from src as it is
// written: a file of any size costs no more memory than a small one.
func CopyFileAtomic(path string, src io.Reader, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := filepath.Join(dir, "."+filepath.Base(path)+tempSuffix+rand.Text())
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = io.Copy(f, src)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, perm)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("write %s: sync directory: %w", path, err)
	}
	err = d.Sync()
	d.Close()
	if err != nil {
		return fmt.Errorf("write %s: sync directory: %w", path, err)
	}
	return nil
}
