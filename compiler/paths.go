package compiler

import (
	"errors"
	"path/filepath"
	"strings"

	"smith/lang"
	"smith/source"
	"smith/workers/confine"
)

// checkPath reports E_PATH_ESCAPE when a literal path (relative to
// WORKSPACE) is absolute or resolves outside the project. Paths with
// references are checked at run time; empty paths are left to the schema.
func (l *lowerer) checkPath(t *lang.Template, pos source.Pos) {
	if t == nil || !t.IsLiteral() {
		return
	}
	p := t.Literal()
	if p == "" {
		return
	}
	err := confine.Lexical(p)
	if err == nil && l.opt.Layout != nil {
		err = l.opt.Layout.Check(l.opt.Layout.Workspace, p)
	}
	l.pathError(p, err, pos)
}

// checkOutputPath checks an output_file, which is relative to
// WORKSPACE/artifacts/STEP.
func (l *lowerer) checkOutputPath(t *lang.Template, step string, pos source.Pos) {
	if t == nil || !t.IsLiteral() {
		return
	}
	p := t.Literal()
	if p == "" || filepath.Clean(p) == "." || strings.HasSuffix(p, "/") {
		l.errorf(pos, source.ESchema, "output_file '%s' names no file: give a file name relative to WORKSPACE/artifacts/%s/", p, step)
		return
	}
	if filepath.IsAbs(p) {
		l.pathError(p, confine.Lexical(p), pos)
		return
	}
	err := confine.Lexical(filepath.Join("artifacts", step, p))
	if err == nil && l.opt.Layout != nil {
		err = l.opt.Layout.Check(filepath.Join(l.opt.Layout.Workspace, "artifacts", step), p)
	}
	l.pathError(p, err, pos)
}

// pathError reports a violation err of path p, naming p as the user wrote
// it.
func (l *lowerer) pathError(p string, err error, pos source.Pos) {
	if err == nil {
		return
	}
	reason := "resolves outside the project"
	var ce *confine.Error
	if errors.As(err, &ce) {
		reason = ce.Reason
	}
	l.errorf(pos, source.EPathEscape, "path '%s' %s", p, reason)
}
