package workers

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"smith/source"
	"smith/workers/builtin"
	"smith/workers/confine"
	"smith/workers/provider"
	"smith/workers/step"
	"smith/workers/steprun"
)

// Local performs a run's effects on this machine: it is the VM's Host
// (vm.Host) unless the caller gives another. Env is the parent environment
// that git runs with (nil is empty).
type Local struct {
	Env func(string) (string, bool)
}

// Now returns the wall clock's time.
func (Local) Now() time.Time { return time.Now() }

// PresetVars returns the presets' table of variables (provider.AllVars).
func (Local) PresetVars() step.PresetVars { return provider.AllVars() }

// RunWorktree returns the run's git worktree, creating or repairing it
// (OpenRunTree; base is the starting commit the run's state recorded), or
// a zero step.RunTree when WORKSPACE is not a git repository and the worktree
// does not exist.
func (l Local) RunWorktree(ctx context.Context, d confine.Dir, runID, base string) (step.RunTree, error) {
	if !isDir(WorktreePath(d, runID)) && !IsGitRepo(ctx, d.Workspace, l.Env) {
		return step.RunTree{}, nil
	}
	return OpenRunTree(ctx, d, runID, base, l.Env)
}

// FileExists reports whether rel, confined to d's WORKSPACE, names a file
// (a file_exists condition). A path violation keeps its E_PATH_ESCAPE.
func (Local) FileExists(d confine.Dir, rel string) (bool, error) {
	abs, err := d.Resolve(rel)
	if err != nil {
		if source.CodeOf(err, "") == source.EPathEscape {
			return false, err
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

// ReadArtifact reads path relative to workdir (the run's worktree or
// WORKSPACE), confined under it, at the moment of use. A file larger than
// a whole prompt (steprun.MaxPrompt, 10 MiB) is not read: E_TOO_LARGE
// names it, its size and the limit.
func (Local) ReadArtifact(d confine.Dir, workdir, path string) (string, error) {
	d.Workspace = workdir // the worktree stands in for WORKSPACE
	abs, err := d.ResolveIn(d.Workspace, path)
	if err != nil {
		return "", source.Wrap(source.EExec, "ARTIFACT:"+path, err)
	}
	s, size, err := steprun.ReadAtMost(d, abs, steprun.MaxPrompt)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", err
	case err != nil:
		return "", source.Wrap(source.EExec, "ARTIFACT:"+path, err)
	case size >= 0:
		return "", source.Errorf(source.ETooLarge, "ARTIFACT:%s: the file is %d bytes, more than the %d bytes (10 MiB) a prompt may hold; name a smaller file in payload_merge_strategy, or give the model the file's path to read itself",
			path, size, steprun.MaxPrompt)
	}
	return s, nil
}

// ChangePlan is builtin.ChangePlan.
func (Local) ChangePlan(runRoot string) ([]string, error) { return builtin.ChangePlan(runRoot) }

// Notices is builtin.Notices.
func (Local) Notices(root string, skip int) ([]step.Conflict, error) {
	return builtin.Notices(root, skip)
}

// WriteFile writes one of the run's own files with confine.WriteFileAtomic.
func (Local) WriteFile(path string, data []byte) error {
	return confine.WriteFileAtomic(path, data, 0o600)
}

// ReadFile is os.ReadFile.
func (Local) ReadFile(path string) ([]byte, error) { return os.ReadFile(path) }

// Remove is os.Remove.
func (Local) Remove(path string) error { return os.Remove(path) }
