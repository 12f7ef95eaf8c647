package confine

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ResolveLeaf is Resolve for a path whose last component may itself be a
// symbolic link, which is then named, not passed through: the path of a
// link to create, replace or remove (a recorded call's file changes,
// CONTRACT 5.2). Every component above it is checked as Resolve checks it.
func (d Dir) ResolveLeaf(rel string) (string, error) {
	r := d.rooted()
	dirRel, joined, err := r.lexicalIn(r.Workspace, rel)
	if err != nil {
		return "", err
	}
	if err := r.checkLinks(filepath.Dir(joined), r.throughLink(rel, dirRel)); err != nil {
		return "", err
	}
	return filepath.Join(r.Base, joined), nil
}

// A LeafKind is what a path names, its last link not followed.
type LeafKind int

// The kinds of Leaf. LeafAbsent is also a path below a file (ENOTDIR).
const (
	LeafAbsent LeafKind = iota
	LeafFile
	LeafDir
	LeafLink
	LeafOther
)

// Leaf says what abs (a path returned by ResolveLeaf) names, without
// following a final link, and for a link its target. The parents are
// walked from Base without following links.
func (d Dir) Leaf(abs string) (LeafKind, string, error) {
	d = d.rooted()
	rel, err := d.checkedLeaf(abs)
	if err != nil {
		return LeafAbsent, "", err
	}
	dirfd, err := d.walk(abs, filepath.Dir(rel), false)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
		return LeafAbsent, "", nil
	}
	if err != nil {
		return LeafAbsent, "", err
	}
	defer unix.Close(dirfd)
	name := filepath.Base(rel)
	var st unix.Stat_t
	err = unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR):
		return LeafAbsent, "", nil
	case err != nil:
		return LeafAbsent, "", fmt.Errorf("stat %s: %w", abs, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return LeafFile, "", nil
	case unix.S_IFDIR:
		return LeafDir, "", nil
	case unix.S_IFLNK:
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return LeafAbsent, "", fmt.Errorf("read link %s: %w", abs, err)
		}
		return LeafLink, string(buf[:n]), nil
	}
	return LeafOther, "", nil
}

// Symlink makes abs (a path returned by ResolveLeaf) a symbolic link to
// target, replacing a file or link there atomically and creating the
// parent directories without following links. The link is made, never
// followed: what reads through it later is confined as always.
func (d Dir) Symlink(target, abs string) error {
	d = d.rooted()
	rel, err := d.checkedLeaf(abs)
	if err != nil {
		return err
	}
	dirfd, err := d.walk(abs, filepath.Dir(rel), true)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	name := filepath.Base(rel)
	tmp := tempName(name)
	if err := unix.Symlinkat(target, dirfd, tmp); err != nil {
		return fmt.Errorf("create link %s: %w", abs, err)
	}
	if err := unix.Renameat(dirfd, tmp, dirfd, name); err != nil {
		_ = unix.Unlinkat(dirfd, tmp, 0)
		return fmt.Errorf("create link %s: %w", abs, err)
	}
	return nil
}

// RemoveLeaf deletes the file or symbolic link abs (a path returned by
// ResolveLeaf; a link is removed, never followed), walking its parents
// from Base without following links. Nothing there is not an error.
func (d Dir) RemoveLeaf(abs string) error {
	d = d.rooted()
	rel, err := d.checkedLeaf(abs)
	if err != nil {
		return err
	}
	return d.unlink(abs, rel, 0, "", true)
}

// checkedLeaf is checked for a path returned by ResolveLeaf: its last
// component may be a link.
func (d Dir) checkedLeaf(abs string) (string, error) {
	rel, err := d.local(abs)
	if err != nil {
		return "", err
	}
	if _, err := d.checked(filepath.Dir(abs)); err != nil && filepath.Dir(rel) != "." {
		return "", err
	}
	if c := gitComponent(rel); c != "" {
		return "", &Error{Path: abs, Reason: gitReason(c)}
	}
	if rel == "." {
		return "", &Error{Path: abs, Reason: "is the project directory itself"}
	}
	return rel, nil
}

// RemoveEmptyDir removes the directory abs (a path returned by Resolve or
// ResolveLeaf) when it is empty, walking from Base without following
// links; a directory that is not empty is an error.
func (d Dir) RemoveEmptyDir(abs string) error {
	d = d.rooted()
	rel, err := d.checked(abs)
	if err != nil {
		return err
	}
	return d.unlink(abs, rel, unix.AT_REMOVEDIR, "the folder ", false)
}
