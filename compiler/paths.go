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
	l.pathError(p, pathViolation(p, l.opt.Layout), pos)
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
	l.pathError(p, outputViolation(p, step, l.opt.Layout), pos)
}

// pathViolation is confine's verdict on the literal path p, relative to
// WORKSPACE: lexically, then against layout (nil: no run's layout).
func pathViolation(p string, layout *confine.Dir) error {
	err := confine.Lexical(p)
	if err == nil && layout != nil {
		err = layout.Check(layout.Workspace, p)
	}
	return err
}

// outputViolation is pathViolation for the output_file p of step, which is
// relative to WORKSPACE/artifacts/STEP.
func outputViolation(p, step string, layout *confine.Dir) error {
	if filepath.IsAbs(p) {
		return confine.Lexical(p)
	}
	err := confine.Lexical(filepath.Join("artifacts", step, p))
	if err == nil && layout != nil {
		err = layout.Check(filepath.Join(layout.Workspace, "artifacts", step), p)
	}
	return err
}

// pathError reports a violation err of path p, naming p as the user wrote
// it.
func (l *lowerer) pathError(p string, err error, pos source.Pos) {
	if err == nil {
		return
	}
	l.errorf(pos, source.EPathEscape, "path '%s' %s", p, violationReason(err))
}

// violationReason says what is wrong with a path, from confine's error.
func violationReason(err error) string {
	var ce *confine.Error
	if errors.As(err, &ce) {
		return ce.Reason
	}
	return "resolves outside the project"
}
