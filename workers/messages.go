package workers

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"smith/lang"
	"smith/source"
	"smith/workers/confine"
	"smith/workers/step"
	"smith/workers/steprun"
)

// Messages between agents (CONTRACT 12.2): a send step delivers a file
// into an agent's inbox atomically, and a wait_for with consume: true moves
// what it matched to the agent's processed folder once the step's
// completion is durable.

// sendingDir is the folder beside an inbox where a message is written
// before it is renamed into the inbox, so a reader never sees half of one.
const sendingDir = ".sending"

// defaultMessageName is the name of a message sent as content.
const defaultMessageName = "message.md"

// MessageName is the file name a send delivers: NNNN-name, NNNN the run's
// message counter zero-padded to 4.
func MessageName(seq int, name string) string { return fmt.Sprintf("%04d-%s", seq, name) }

// runSend delivers req.Send. Its output is the delivered path (relative to
// WORKSPACE). Delivering the same Seq again (a resumed step) replaces the
// same file, so a message is never delivered twice.
func (r *Registry) runSend(req *step.Request) step.Result {
	s := req.Send
	if s == nil {
		return step.Failed(step.ExitNotRun, source.Errorf(source.EInternal, "internal error: send step '%s' has no send", req.Step))
	}
	data := []byte(s.Content)
	name := s.Name
	if s.File != "" {
		abs, err := req.Dirs.Resolve(s.File)
		if err != nil {
			return step.Failed(step.ExitNotRun, source.Wrap(source.EExec, "send.file", err))
		}
		text, err := steprun.ReadConfined(req.Dirs, abs)
		if err != nil {
			return step.Failed(step.ExitNotRun, steprun.FileErr("send.file", s.File, err))
		}
		data = []byte(text)
		if name == "" {
			name = path.Base(filepath.ToSlash(s.File))
		}
	}
	if name == "" {
		name = defaultMessageName
	}
	// A message is masked like every other place a value enters the run
	// (CONTRACT 12.2): content: "${env.SECRET}", or a file holding one.
	data, name = req.Mask.Bytes(data), req.Mask.String(name)
	if strings.ContainsAny(name, "/\\") || name == "." || name == ".." {
		return step.Failed(step.ExitNotRun, source.Errorf(source.EPathEscape, "send.name '%s' is not a plain file name", name))
	}
	rel, sendTo := path.Join(s.Inbox, MessageName(s.Seq, name)), "send to '"+s.To+"'"
	dst, err := req.Dirs.Resolve(rel)
	if err != nil {
		return step.Failed(step.ExitNotRun, source.Wrap(source.EExec, sendTo, err))
	}
	tmp, err := req.Dirs.Resolve(path.Join(path.Dir(s.Inbox), sendingDir, MessageName(s.Seq, name)))
	if err != nil {
		return step.Failed(step.ExitNotRun, source.Wrap(source.EExec, sendTo, err))
	}
	if err := req.Dirs.WriteFile(tmp, data, 0o644); err != nil {
		return step.Failed(step.ExitNotRun, source.Wrap(source.EExec, sendTo, err))
	}
	if err := req.Dirs.Rename(tmp, dst); err != nil {
		return step.Failed(step.ExitNotRun, source.Wrap(source.EExec, sendTo, err))
	}
	return step.Result{Signal: lang.SigSuccess, Output: rel}
}

// consumed returns the moves of the files that satisfied req's wait_for:
// each to the agent's processed folder, under the same name.
func consumed(req *step.Request, matched []string) []step.Move {
	var out []step.Move
	for _, abs := range matched {
		rel, err := filepath.Rel(req.Dirs.Workspace, abs)
		if err != nil || !filepath.IsLocal(rel) {
			continue
		}
		out = append(out, step.Move{From: filepath.ToSlash(rel), To: path.Join(req.WaitFor.Processed, path.Base(filepath.ToSlash(rel)))})
	}
	return out
}

// ConsumeMessages carries out moves (relative to dirs.Workspace). It is
// idempotent: a move whose source is gone and whose destination exists was
// done before (a crash cut the list short), so running it again after a
// crash finishes the list and consumes nothing twice. It returns the moves
// it made now.
func (Local) ConsumeMessages(dirs confine.Dir, moves []step.Move) ([]step.Move, error) {
	var done []step.Move
	for _, mv := range moves {
		from, err := dirs.Resolve(mv.From)
		if err != nil {
			return done, err
		}
		to, err := dirs.Resolve(mv.To)
		if err != nil {
			return done, err
		}
		ok, err := dirs.Exists(from)
		if err != nil {
			return done, err
		}
		if !ok {
			continue // moved before
		}
		if err := dirs.Rename(from, to); err != nil {
			return done, err
		}
		done = append(done, mv)
	}
	return done, nil
}

// PrepareAgents creates every agent's inbox and processed folders
// (relative to dirs.Workspace) at run start (CONTRACT 12.1).
func (Local) PrepareAgents(dirs confine.Dir, folders []string) error {
	for _, f := range folders {
		abs, err := dirs.Resolve(f)
		if err != nil {
			return err
		}
		if err := dirs.MkdirAll(abs); err != nil {
			return err
		}
	}
	return nil
}

// CleanProcessed deletes the processed messages of every agent under
// workspace (the files directly in agents/*/processed/ and in the processed
// folders given), those older than olderThan when it is positive. It
// touches nothing else and returns how many files it removed.
func CleanProcessed(workspace string, extra []string, olderThan time.Duration, now time.Time) (int, error) {
	dirs, _ := filepath.Glob(filepath.Join(workspace, "agents", "*", "processed"))
	for _, e := range extra {
		dirs = append(dirs, filepath.Join(workspace, filepath.FromSlash(e)))
	}
	sort.Strings(dirs)
	seen := map[string]bool{}
	n := 0
	for _, d := range dirs {
		if seen[d] {
			continue
		}
		seen[d] = true
		if fi, err := os.Lstat(d); err != nil || !fi.IsDir() {
			continue // missing, or a link: never followed
		}
		root, err := os.OpenRoot(d)
		if err != nil {
			return n, err
		}
		entries, err := fs.ReadDir(root.FS(), ".")
		if err != nil {
			root.Close()
			return n, err
		}
		for _, e := range entries {
			if !e.Type().IsRegular() {
				continue
			}
			if olderThan > 0 {
				info, err := e.Info()
				if err != nil || now.Sub(info.ModTime()) < olderThan {
					continue
				}
			}
			if err := root.Remove(e.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
				root.Close()
				return n, err
			}
			n++
		}
		root.Close()
	}
	return n, nil
}
