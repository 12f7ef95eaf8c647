// Package confine is the one place where a path that comes from a user or a model
// is checked against the project directory (CONTRACT.md section 2).
//
// BASE is the project root and WORKSPACE is BASE/workspace (or the directory
// given). A relative path is relative to WORKSPACE (or to another directory
// below it given by the caller), and it is a violation when it is absolute,
// when it resolves outside WORKSPACE (into BASE, into BASE/.orchestrator), or
// when any existing component of it below BASE is a symbolic link. Every
// violation wraps ErrEscape. The checks are lexical (filepath.IsLocal) plus
// os.Lstat, never string prefixes, and every open, write, rename and mkdir
// walks from BASE one component at a time with openat(O_NOFOLLOW), so a link
// created after the check is refused at the moment of use. A WORKSPACE outside
// BASE (smithvm --workspace DIR --base B) is its own root: everything above
// is BASE for WORKSPACE itself.
package confine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"smith/source"
)

// ErrEscape is wrapped by every path violation, so callers can map it to
// E_PATH_ESCAPE with errors.Is.
var ErrEscape = errors.New("path escapes the project")

// An Error is a path violation: Path is the path as the user or model gave it,
// Reason says what is wrong with it ("is absolute", ...).
type Error struct {
	Path   string
	Reason string
}

// Error returns "path 'P' <reason>".
func (e *Error) Error() string {
	return fmt.Sprintf("path '%s' %s", e.Path, e.Reason)
}

// ErrCode returns E_PATH_ESCAPE: every path violation carries that code,
// which source.CodeOf reads back.
func (e *Error) ErrCode() source.Code { return source.EPathEscape }

// Unwrap returns ErrEscape.
func (e *Error) Unwrap() error { return ErrEscape }

const (
	reasonEmpty     = "is empty"
	reasonAbsolute  = "is absolute"
	reasonOutside   = "resolves outside the project"
	reasonOutsideWS = "resolves outside the workspace"
	// WORKSPACE is BASE (smithvm --workspace without --base): the path is
	// in it, but in Smith's own files.
	reasonOrchestrator = "resolves into .orchestrator/, Smith's run folder (run state and logs), which no step may read or write: choose a path outside it"
	workspaceName      = "workspace"
	// orchestratorName is BASE/.orchestrator: Smith's own files, never a
	// user's or a model's path, even when WORKSPACE is BASE.
	orchestratorName = ".orchestrator"
)

// Lexical checks rel without touching the file system, so the compiler can use it
// on literal paths: rel must be non-empty, relative, and must stay below
// WORKSPACE when joined to BASE/workspace. It does not look for symbolic links.
func Lexical(rel string) error {
	joined, err := lexical(workspaceName, rel)
	if err == nil && !within(joined, workspaceName) {
		err = &Error{Path: rel, Reason: reasonOutsideWS}
	}
	return err
}

// within reports whether rel (a local path) is dir or below it.
func within(rel, dir string) bool {
	if dir == "." {
		return true
	}
	r, err := filepath.Rel(dir, rel)
	return err == nil && filepath.IsLocal(r)
}

// inWorkspace checks that joined (relative to Base) lies in WORKSPACE and,
// unless WORKSPACE itself does (a run's git worktree), not in
// BASE/.orchestrator.
func (d Dir) inWorkspace(rel, joined string) error {
	ws, err := d.local(d.Workspace)
	if err != nil {
		return err
	}
	if !within(joined, ws) {
		return &Error{Path: rel, Reason: reasonOutsideWS}
	}
	if inOrchestrator(joined) && !inOrchestrator(ws) {
		return &Error{Path: rel, Reason: reasonOrchestrator}
	}
	return nil
}

// inOrchestrator reports whether rel (a local path relative to Base) is
// BASE/.orchestrator or below it. Its first component is compared as
// gitComponent compares .git: in any case and without trailing dots and
// spaces, so a file system that folds case or ignores them (macOS,
// Windows, ext4 casefold folders) does not lead into Smith's run folder.
func inOrchestrator(rel string) bool {
	first, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
	return strings.EqualFold(strings.TrimRight(first, ". "), orchestratorName)
}

// lexical joins rel to dirRel (a local path relative to BASE) and returns the
// result relative to BASE, or a violation.
func lexical(dirRel, rel string) (string, error) {
	switch {
	case rel == "":
		return "", &Error{Path: rel, Reason: reasonEmpty}
	case filepath.IsAbs(rel):
		return "", &Error{Path: rel, Reason: reasonAbsolute}
	}
	joined := filepath.Join(dirRel, rel)
	if !filepath.IsLocal(joined) {
		return "", &Error{Path: rel, Reason: reasonOutside}
	}
	if c := gitComponent(joined); c != "" {
		return "", &Error{Path: rel, Reason: gitReason(c)}
	}
	return joined, nil
}

// gitComponent returns the first component of rel (a local path) that git
// would take for its own metadata, ".git" in any case, or "" when there is
// none. Trailing dots and spaces are ignored, as Windows and macOS file
// systems (and git's own core.protectNTFS check) ignore them, so ".git."
// and ".GIT " count too. A file or folder of that name inside a work tree
// is a repository's configuration (hooks, core.fsmonitor, filters: commands
// git runs), never a file Smith writes for a user or a model.
func gitComponent(rel string) string {
	for part := range strings.SplitSeq(filepath.ToSlash(rel), "/") {
		if strings.EqualFold(strings.TrimRight(part, ". "), ".git") && part != "." && part != ".." {
			return part
		}
	}
	return ""
}

// gitReason is the reason of a violation for the component c of gitComponent.
func gitReason(c string) string {
	return fmt.Sprintf("has the component '%s', which git reads as a repository's own files (hooks, configuration); Smith never writes or reads there for a user or a model: choose another name", c)
}

// A Dir is a project layout. Both fields are absolute and cleaned, and
// Workspace is Base/workspace (New), or any directory (smithvm --workspace:
// Base or below it, or a directory outside Base, CONTRACT 2).
type Dir struct {
	Base      string
	Workspace string
}

// Contains reports whether abs (absolute) is Base, Workspace or a path
// below one of them, lexically (no link is looked at).
func (d Dir) Contains(abs string) bool {
	for _, root := range []string{d.Base, d.Workspace} {
		if rel, err := filepath.Rel(root, filepath.Clean(abs)); root != "" && err == nil && (rel == "." || filepath.IsLocal(rel)) {
			return true
		}
	}
	return false
}

// rooted is the layout the checks walk from: d itself when Workspace is
// Base or below it, else Workspace alone (its own root), since confinement
// is to WORKSPACE, not to BASE: the paths of steps and models never reach
// Base from a workspace outside it.
func (d Dir) rooted() Dir {
	if d.Base == "" || d.Workspace == "" {
		return d
	}
	if rel, err := filepath.Rel(d.Base, d.Workspace); err == nil && (rel == "." || filepath.IsLocal(rel)) {
		return d
	}
	return Dir{Base: d.Workspace, Workspace: d.Workspace}
}

// New returns the layout for the project rooted at base (made absolute).
func New(base string) (Dir, error) {
	abs, err := filepath.Abs(base)
	if err != nil {
		return Dir{}, fmt.Errorf("project directory %s: %w", base, err)
	}
	return Dir{Base: abs, Workspace: filepath.Join(abs, workspaceName)}, nil
}

// Resolve checks rel, a path relative to the workspace, and returns it as an
// absolute path. See ResolveIn.
func (d Dir) Resolve(rel string) (string, error) {
	return d.ResolveIn(d.Workspace, rel)
}

// ResolveIn checks rel, a path relative to dir (which itself lies below Base,
// for example Workspace/artifacts/Step), and returns it as an absolute path.
// rel must be non-empty and relative, must resolve to Base or below, and no
// existing component of the result below Base may be a symbolic link, even one
// whose target lies inside the project. The walk stops at the first component
// that does not exist, since nothing below it can be a link yet.
func (d Dir) ResolveIn(dir, rel string) (string, error) {
	d = d.rooted()
	dirRel, joined, err := d.lexicalIn(dir, rel)
	if err != nil {
		return "", err
	}
	if err := d.checkLinks(joined, d.throughLink(rel, dirRel)); err != nil {
		return "", err
	}
	return filepath.Join(d.Base, joined), nil
}

// throughLink returns the error of rel (relative to dirRel, below Base)
// passing through the link (relative to Base), which names the link as the
// user sees it: relative to dir when it lies below dir, else (dir itself or
// one of its parents is the link, e.g. a linked artifacts/<Step>) relative
// to the workspace or Base.
func (d Dir) throughLink(rel, dirRel string) func(link string) error {
	return func(link string) error {
		shown, rerr := filepath.Rel(filepath.Join(d.Base, dirRel), filepath.Join(d.Base, link))
		if rerr != nil || shown == "." || !filepath.IsLocal(shown) {
			shown = link
			if w, werr := filepath.Rel(d.Workspace, filepath.Join(d.Base, link)); werr == nil && filepath.IsLocal(w) {
				shown = w
			}
		}
		return &Error{Path: rel, Reason: fmt.Sprintf("passes through the symlink '%s'", filepath.ToSlash(shown))}
	}
}

// Check is ResolveIn without the file system: the checks of rel (relative
// to dir, which lies below Base) that depend only on the layout, so smithvm
// can refuse a literal path of a workflow before its run starts. Symbolic
// links are looked for only at use (ResolveIn), since a step may still
// create or remove one.
func (d Dir) Check(dir, rel string) error {
	_, _, err := d.rooted().lexicalIn(dir, rel)
	return err
}

// lexicalIn checks rel relative to dir (absolute, below Base of the rooted
// layout d) and returns dir and the joined path, both relative to Base.
func (d Dir) lexicalIn(dir, rel string) (dirRel, joined string, err error) {
	if dirRel, err = d.local(dir); err != nil {
		return "", "", err
	}
	if joined, err = lexical(dirRel, rel); err != nil {
		return "", "", err
	}
	if err = d.inWorkspace(rel, joined); err != nil {
		return "", "", err
	}
	return dirRel, joined, nil
}

// local returns abs relative to Base, or a violation when abs is not Base or
// below it.
func (d Dir) local(abs string) (string, error) {
	if !filepath.IsAbs(abs) {
		return "", &Error{Path: abs, Reason: "is not absolute"}
	}
	rel, err := filepath.Rel(d.Base, filepath.Clean(abs))
	if err != nil || !filepath.IsLocal(rel) {
		return "", &Error{Path: abs, Reason: reasonOutside}
	}
	return rel, nil
}

// checkLinks walks the components of rel (relative to Base) from Base down and
// returns violation(prefix) for the first one that is a symbolic link.
func (d Dir) checkLinks(rel string, violation func(link string) error) error {
	if rel == "." {
		return nil
	}
	prefix := ""
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		prefix = filepath.Join(prefix, part)
		fi, err := os.Lstat(filepath.Join(d.Base, prefix))
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("check path %s: %w", rel, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return violation(prefix)
		}
	}
	return nil
}

// checked repeats the checks of ResolveIn for abs, a path that Resolve or
// ResolveIn returned, and returns it relative to Base.
func (d Dir) checked(abs string) (string, error) {
	rel, err := d.local(abs)
	if err != nil {
		return "", err
	}
	if rel == "." {
		return "", &Error{Path: abs, Reason: "is the project directory itself"}
	}
	if c := gitComponent(rel); c != "" {
		return "", &Error{Path: abs, Reason: gitReason(c)}
	}
	err = d.checkLinks(rel, func(link string) error {
		return &Error{Path: abs, Reason: fmt.Sprintf("passes through the symlink '%s'", filepath.Join(d.Base, link))}
	})
	return rel, err
}
