package confine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// walk opens the directory rel (relative to Base, "." for Base) one
// component at a time with O_NOFOLLOW, creating missing components when
// mkdirs is set, and returns its descriptor. A symbolic link anywhere on the
// way, even one created after the checks of ResolveIn, is a violation: the
// file that is finally opened is the one the path names, never a link's
// target (CONTRACT 2).
func (d Dir) walk(shown, rel string, mkdirs bool) (int, error) {
	fd, err := unix.Open(d.Base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open project %s: %w", d.Base, err)
	}
	if rel == "." {
		return fd, nil
	}
	prefix := ""
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		prefix = filepath.Join(prefix, part)
		next, err := openat(fd, part, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) && mkdirs {
			if merr := unix.Mkdirat(fd, part, dirPerm); merr != nil && !errors.Is(merr, unix.EEXIST) {
				unix.Close(fd)
				return -1, fmt.Errorf("create %s: %w", filepath.Join(d.Base, prefix), merr)
			}
			next, err = openat(fd, part, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
		if err != nil {
			err = d.linkErr(fd, part, shown, prefix, err)
			unix.Close(fd)
			return -1, err
		}
		unix.Close(fd)
		fd = next
	}
	return fd, nil
}

// openat is unix.Openat retried on EINTR.
func openat(dirfd int, name string, flags int, perm uint32) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags, perm)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// linkErr turns err, from opening name in dirfd without following links,
// into a violation when name is a symbolic link.
func (d Dir) linkErr(dirfd int, name, shown, prefix string, err error) error {
	var st unix.Stat_t
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return &Error{Path: shown, Reason: fmt.Sprintf("passes through the symlink '%s'", filepath.Join(d.Base, prefix))}
		}
	}
	return &os.PathError{Op: "open", Path: filepath.Join(d.Base, prefix), Err: err}
}

// openFile opens abs, a path returned by Resolve or ResolveIn, walking from
// Base without following any link (see walk); flag is as for os.OpenFile,
// and mkdirs creates the parent directories.
func (d Dir) openFile(abs string, flag int, perm os.FileMode, mkdirs bool) (*os.File, error) {
	d = d.rooted()
	rel, err := d.checked(abs)
	if err != nil {
		return nil, err
	}
	dirfd, err := d.walk(abs, filepath.Dir(rel), mkdirs)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	name := filepath.Base(rel)
	fd, err := openat(dirfd, name, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return nil, d.linkErr(dirfd, name, abs, rel, err)
	}
	return os.NewFile(uintptr(fd), abs), nil
}

// OpenBelow opens rel, a local path below the directory root, for reading,
// walking from root one component at a time without following any link
// (see walk), and returns it only when it is a regular file. Unlike Open it
// takes a .git component: it is for Smith's own reads of git's files in a
// work tree (a nested repository's HEAD and refs), which must neither leave
// root nor follow a link a step planted; it opens nothing for a user or a
// model. A FIFO does not block it (O_NONBLOCK) and is refused. The caller
// closes the file.
func OpenBelow(root, rel string) (*os.File, error) {
	if !filepath.IsLocal(rel) {
		return nil, &Error{Path: rel, Reason: reasonOutside}
	}
	rel = filepath.Clean(rel)
	d := Dir{Base: root, Workspace: root}
	dirfd, err := d.walk(filepath.Join(root, rel), filepath.Dir(rel), false)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	name := filepath.Base(rel)
	fd, err := openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, d.linkErr(dirfd, name, filepath.Join(root, rel), rel, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, fmt.Errorf("%s is not a regular file", filepath.Join(root, rel))
	}
	return os.NewFile(uintptr(fd), filepath.Join(root, rel)), nil
}
