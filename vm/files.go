package vm

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"smith/manifest/source"
	"smith/workers/confine"
)

// Files performs the VM's own reads of the project's files (Config.Files).
// Paths are as the workflow wrote them: an implementation confines them
// where it reads them.
type Files interface {
	// Exists reports whether rel, relative to WORKSPACE, exists
	// (file_exists). A path that escapes the project is an E_PATH_ESCAPE
	// error.
	Exists(rel string) (bool, error)
	// Read returns the content of rel, relative to dir (the run's
	// worktree or WORKSPACE), for an ARTIFACT: layer. A missing file is an
	// error wrapping fs.ErrNotExist.
	Read(dir, rel string) (string, error)
}

// files returns Config.Files, or the local file system.
func (m *Machine) files() Files {
	if m.cfg.Files != nil {
		return m.cfg.Files
	}
	return LocalFiles{Dirs: m.cfg.Dirs}
}

// LocalFiles reads the files of the project Dirs, confined (confine.Dir)
// at the moment of use.
type LocalFiles struct{ Dirs confine.Dir }

// Exists implements Files.
func (l LocalFiles) Exists(rel string) (bool, error) {
	abs, err := l.Dirs.Resolve(rel)
	if err != nil {
		if errors.Is(err, confine.ErrEscape) {
			return false, &codedError{source.EPathEscape, err.Error()}
		}
		return false, fmt.Errorf("file_exists: %w", err)
	}
	_, err = os.Stat(abs)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("file_exists: %w", err)
}

// Read implements Files.
func (l LocalFiles) Read(dir, path string) (string, error) {
	dirs := l.Dirs
	dirs.Workspace = dir // the run's worktree stands in for WORKSPACE
	abs, err := dirs.ResolveIn(dir, path)
	if err != nil {
		return "", &codedError{codeOfPath(err), fmt.Sprintf("ARTIFACT:%s: %v", path, err)}
	}
	f, err := dirs.Open(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		return "", &codedError{codeOfPath(err), fmt.Sprintf("ARTIFACT:%s: %v", path, err)}
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return "", &codedError{source.EExec, fmt.Sprintf("ARTIFACT:%s: %v", path, err)}
	}
	return string(b), nil
}
