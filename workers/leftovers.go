package workers

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"smith/workers/confine"
)

// CleanTemps removes the temporary files that a kill of smithvm in the
// middle of a write leaves behind: confine's ".NAME.tmp-XXXX" files under
// WORKSPACE (the artifacts included; .git is skipped) and RUN_ROOT's tmp
// folder and "*.tmp"/".*.tmp-*" files (state.json.tmp is the store's).
// It also removes the overlay homes of the calls the kill cut off
// (RUN_ROOT/providers/overlays/*: a copy of the user's gemini settings and
// links to their files, which the call would have removed as it ended).
// resume calls it before anything runs again, so a resumed run leaves the
// same files as an uninterrupted one. It reports how many files and
// overlays it removed.
func CleanTemps(runRoot string, dirs confine.Dir) int {
	n := 0
	if dirs.Workspace != "" {
		filepath.WalkDir(dirs.Workspace, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() {
				if d.Name() == ".git" {
					return filepath.SkipDir
				}
				return nil
			}
			if d.Type().IsRegular() && confine.IsTempName(d.Name()) && os.Remove(path) == nil {
				n++
			}
			return nil
		})
	}
	if runRoot == "" {
		return n
	}
	overlays := filepath.Join(runRoot, "providers", "overlays")
	if ents, err := os.ReadDir(overlays); err == nil {
		for _, e := range ents {
			if os.RemoveAll(filepath.Join(overlays, e.Name())) == nil {
				n++
			}
		}
	}
	if ents, err := os.ReadDir(filepath.Join(runRoot, "tmp")); err == nil {
		for _, e := range ents {
			if e.Type().IsRegular() && os.Remove(filepath.Join(runRoot, "tmp", e.Name())) == nil {
				n++
			}
		}
	}
	filepath.WalkDir(runRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		name := d.Name()
		if name == "state.json.tmp" {
			return nil
		}
		if (strings.HasSuffix(name, ".tmp") || (strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-"))) && os.Remove(path) == nil {
			n++
		}
		return nil
	})
	return n
}
