package workers

import (
	"errors"
	"io"
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

// defaultMessageName is the name of a message sent as content.
const defaultMessageName = "message.md"

// runSend delivers req.Send. Its output is the delivered path (relative to
// WORKSPACE). The message is streamed file to file (a file of any size
// costs no memory), masked, into the sending folder beside the inbox, then
// linked into the inbox under a name no other message has (O_EXCL: never
// overwritten) and removed from the sending folder. A send run again after
// a crash (Again) delivers under the same name, replacing its half-done
// copy, and delivers nothing when the message was consumed already.
func (r *Registry) runSend(req *step.Request) step.Result {
	s := req.Send
	if s == nil {
		return step.Failed(step.ExitNotRun, source.Errorf(source.EInternal, "internal error: send step '%s' has no send", req.Step))
	}
	var src io.Reader = strings.NewReader(s.Content)
	name := s.Name
	if s.File != "" {
		abs, err := req.Dirs.Resolve(s.File)
		if err != nil {
			return step.Failed(step.ExitNotRun, source.Wrap(source.EExec, "send.file", err))
		}
		f, err := req.Dirs.Open(abs)
		if err != nil {
			return step.Failed(step.ExitNotRun, steprun.FileErr("send.file", s.File, err))
		}
		defer f.Close()
		src = f
		if name == "" {
			name = path.Base(filepath.ToSlash(s.File))
		}
	}
	if name == "" {
		name = defaultMessageName
	}
	// A message is masked like every other place a value enters the run
	// (CONTRACT 12.2): content: "${env.SECRET}", or a file holding one.
	name = req.Mask.String(name)
	if strings.ContainsAny(name, "/\\\n\r") || name == "." || name == ".." {
		return step.Failed(step.ExitNotRun, source.Errorf(source.EPathEscape, "send.name '%s' is not a plain file name", name))
	}
	tag := ""
	dirs := req.Dirs
	if m := req.Mail; m != nil {
		tag = m.Tag
		if m.Workspace != "" {
			dirs.Workspace = m.Workspace
		}
	}
	msg := step.MessageName(s.Seq, tag, s.Thread, s.Sub, name)
	rel, sendTo := path.Join(s.Inbox, msg), "send to '"+s.To+"'"
	fail := func(err error) step.Result {
		return step.Failed(step.ExitNotRun, source.Wrap(source.EExec, sendTo, err))
	}
	dst, err := dirs.Resolve(rel)
	if err != nil {
		return fail(err)
	}
	if s.Again {
		if done, err := delivered(dirs, s.Inbox, msg, path.Join(path.Dir(s.Inbox), "processed", msg)); err != nil {
			return fail(err)
		} else if done {
			return step.Result{Signal: lang.SigSuccess, Output: rel}
		}
	}
	tmp, err := dirs.Resolve(path.Join(path.Dir(s.Inbox), step.SendingDir, msg))
	if err != nil {
		return fail(err)
	}
	f, err := dirs.Create(tmp)
	if err != nil {
		return fail(err)
	}
	defer dirs.Remove(tmp)
	w := req.Mask.Writer(f)
	_, err = io.Copy(w, src)
	if err == nil {
		err = w.Close()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fail(err)
	}
	if s.Again {
		err = dirs.Rename(tmp, dst)
	} else {
		err = dirs.LinkNew(tmp, dst)
	}
	if errors.Is(err, fs.ErrExist) {
		return step.Failed(step.ExitNotRun, source.Errorf(source.EExec, "%s: the inbox already holds a message named '%s'", sendTo, msg))
	}
	if err != nil {
		return fail(err)
	}
	return step.Result{Signal: lang.SigSuccess, Output: rel}
}

// delivered reports whether message msg, sent before a crash, is in the
// inbox or was consumed already (it is in processed, or claimed).
func delivered(dirs confine.Dir, inbox, msg, processed string) (bool, error) {
	for _, rel := range []string{path.Join(inbox, msg), processed, step.ClaimPath(inbox, msg)} {
		abs, err := dirs.Resolve(rel)
		if err != nil {
			return false, err
		}
		if ok, err := dirs.Exists(abs); err != nil || ok {
			return ok && rel != path.Join(inbox, msg), err
		}
	}
	return false, nil
}

// consumed returns the moves of the files that satisfied req's wait_for:
// each to the agent's processed folder, under the same name, with the
// claim the step took on it.
func consumed(req *step.Request, matched []string) []step.Move {
	var out []step.Move
	for _, abs := range matched {
		rel, claim := steprun.ClaimOf(req, abs)
		if rel == "" {
			r, err := filepath.Rel(req.Dirs.Workspace, abs)
			if err != nil || !filepath.IsLocal(r) {
				continue
			}
			rel = filepath.ToSlash(r)
		}
		out = append(out, step.Move{From: rel, To: path.Join(req.WaitFor.Processed, path.Base(rel)), Claim: claim})
	}
	return out
}

// ConsumeMessages carries out moves (relative to dirs.Workspace); a move
// with no To gives the message's claim back (it stays in the inbox). It is
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
		to := ""
		if mv.To != "" {
			if to, err = dirs.Resolve(mv.To); err != nil {
				return done, err
			}
		}
		ok, err := dirs.Exists(from)
		if err != nil {
			return done, err
		}
		if ok && mv.To != "" {
			if err := dirs.Rename(from, to); err != nil {
				return done, err
			}
			done = append(done, mv)
		} // else moved before
		if mv.Claim != "" {
			// The claim goes after the move: a step that globbed the
			// message before the move then finds it gone.
			c, err := dirs.Resolve(mv.Claim)
			if err != nil {
				return done, err
			}
			if err := dirs.Remove(c); err != nil {
				return done, err
			}
		}
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
	ws, err := os.OpenRoot(workspace)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil
		}
		return 0, err
	}
	defer ws.Close()
	dirs, _ := fs.Glob(ws.FS(), "agents/*/processed")
	for _, e := range extra {
		dirs = append(dirs, path.Clean(filepath.ToSlash(e)))
	}
	sort.Strings(dirs)
	seen := map[string]bool{}
	n := 0
	for _, d := range dirs {
		if seen[d] {
			continue
		}
		seen[d] = true
		if fi, err := ws.Lstat(d); err != nil || !fi.IsDir() {
			continue // missing, or a link: never followed
		}
		// Opened through WORKSPACE's root: a linked agents/NAME that leads
		// out of WORKSPACE is not followed either.
		root, err := ws.OpenRoot(d)
		if err != nil {
			continue
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
