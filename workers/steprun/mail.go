package steprun

import (
	"errors"
	"io/fs"
	"path"
	"path/filepath"

	"smith/workers/confine"
	"smith/workers/step"
)

// Messages belong to the run (CONTRACT 12.2): a path in an agent's inbox
// or processed folder is relative to the run's Mail workspace, not to the
// thread's worktree; a waiting step sees only its run's messages and those
// no run sent, and takes a message by claiming it.

// DirsFor returns the project root to resolve rel (relative to WORKSPACE,
// maybe a glob) in: the request's, with the run's mail workspace as
// WORKSPACE when rel lies in an agent's folder.
func DirsFor(req *step.Request, rel string) confine.Dir {
	d := req.Dirs
	if _, ok := req.Mail.Folder(filepath.ToSlash(rel)); ok && req.Mail.Workspace != "" {
		d.Workspace = req.Mail.Workspace
	}
	return d
}

// mailRel returns abs relative to the mail workspace when it lies in an
// agent's folder there.
func mailRel(req *step.Request, abs string) (string, bool) {
	if req.Mail == nil || req.Mail.Workspace == "" {
		return "", false
	}
	rel, err := filepath.Rel(req.Mail.Workspace, abs)
	if err != nil || !filepath.IsLocal(rel) {
		return "", false
	}
	rel = filepath.ToSlash(rel)
	_, ok := req.Mail.Folder(rel)
	return rel, ok
}

// hidden reports whether the file abs is not for this step to see: a
// message in an agent's folder that another run sent, or that another
// step has claimed.
func hidden(req *step.Request, abs string) bool {
	rel, ok := mailRel(req, abs)
	if !ok {
		return false
	}
	if req.Mail.Foreign(path.Base(rel)) {
		return true
	}
	owner, ok := claimOwner(req, rel)
	return ok && owner != req.Mail.Claimant
}

// claimPath returns the claim file (absolute) of the message rel in its
// inbox.
func claimPath(req *step.Request, rel string) (string, string, error) {
	inbox, _ := req.Mail.Folder(rel)
	inner, err := filepath.Rel(inbox, rel)
	if err != nil {
		return "", "", err
	}
	cp := step.ClaimPath(inbox, filepath.ToSlash(inner))
	d := DirsFor(req, rel)
	abs, err := d.Resolve(cp)
	return abs, cp, err
}

// claimOwner returns who claimed the message rel, if anyone did.
func claimOwner(req *step.Request, rel string) (string, bool) {
	abs, _, err := claimPath(req, rel)
	if err != nil {
		return "", false
	}
	owner, err := ReadConfined(DirsFor(req, rel), abs)
	if err != nil {
		return "", false
	}
	return owner, true
}

// claim takes the messages matched (absolute paths in the mail workspace)
// for this step: it creates each one's claim file unless another step
// holds it. It returns the files this step holds, those claimed before by
// the same step (run again after a crash) included. A message that was
// moved away meanwhile is let go.
func claim(req *step.Request, matched []string) []string {
	var held []string
	for _, abs := range matched {
		rel, ok := mailRel(req, abs)
		if !ok {
			continue
		}
		cabs, _, err := claimPath(req, rel)
		if err != nil {
			continue
		}
		d := DirsFor(req, rel)
		err = d.WriteFileNew(cabs, []byte(req.Mail.Claimant), 0o644)
		if errors.Is(err, fs.ErrExist) {
			if owner, _ := ReadConfined(d, cabs); owner == req.Mail.Claimant {
				held = append(held, abs)
			}
			continue
		}
		if err != nil {
			continue
		}
		if ok, _ := d.Exists(abs); !ok {
			_ = d.Remove(cabs) // consumed by another step before this claim
			continue
		}
		held = append(held, abs)
	}
	return held
}

// Release gives up this step's claims on files (absolute paths), so that
// another waiting step may take them: the step failed or timed out.
func Release(req *step.Request, files []string) {
	if req.Mail == nil {
		return
	}
	for _, abs := range files {
		rel, ok := mailRel(req, abs)
		if !ok {
			continue
		}
		if owner, ok := claimOwner(req, rel); !ok || owner != req.Mail.Claimant {
			continue
		}
		if cabs, _, err := claimPath(req, rel); err == nil {
			_ = DirsFor(req, rel).Remove(cabs)
		}
	}
}

// ClaimOf returns the claim file (relative to the mail workspace) of the
// message abs, "" when it has none.
func ClaimOf(req *step.Request, abs string) (from, claim string) {
	rel, ok := mailRel(req, abs)
	if !ok {
		return "", ""
	}
	_, cp, err := claimPath(req, rel)
	if err != nil {
		return rel, ""
	}
	return rel, cp
}
