package steprun

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"smith/lang"
	"smith/source"
	"smith/workers/confine"
	"smith/workers/proc"
	"smith/workers/step"
)

const (
	defaultWaitTimeout = 300 * time.Second
	defaultWaitPoll    = 500 * time.Millisecond
)

// Inject modes of depends_on.
const (
	injectNone    = "none"
	injectList    = "list"
	injectContent = "content"
	injectTrue    = "true" // inject: true
)

// waitFor blocks until at least MinCount files match the wait_for glob. It
// polls every Poll (default 500 ms) and gives up after Timeout (default
// 300 s) with SIGNAL:TIMEOUT, exit code 124 and E_WAIT_TIMEOUT. The clock and
// the pause are Env's, so tests need no real time.
func (e Env) waitFor(ctx context.Context, req *step.Request) (step.Result, bool) {
	wf := req.WaitFor
	if wf == nil {
		return step.Result{}, true
	}
	timeout, poll, minCount := wf.Timeout, wf.Poll, wf.MinCount
	if timeout <= 0 {
		timeout = defaultWaitTimeout
	}
	if poll <= 0 {
		poll = defaultWaitPoll
	}
	minCount = max(minCount, 1)
	deadline := e.Now().Add(timeout)
	// A step that consumes what it waits for claims it first: of several
	// steps waiting on one inbox, one takes each message and the others
	// keep waiting (CONTRACT 12.2).
	consume := wf.Processed != "" && req.Mail != nil
	for {
		matches, serr := globFiles(req, wf.Glob)
		if serr != nil {
			return step.Failed(step.ExitNotRun, serr), false
		}
		if consume {
			matches = claim(req, matches)
		}
		if len(matches) >= minCount {
			req.WaitMatched = matches
			return step.Result{}, true
		}
		if !e.Now().Before(deadline) {
			Release(req, matches)
			return step.Result{
				Signal:   lang.SigTimeout,
				ExitCode: proc.ExitTimeout,
				Err: source.Errorf(source.EWaitTimeout, "wait_for '%s' matched %d of %d files within %s",
					wf.Glob, len(matches), minCount, timeout),
			}, false
		}
		if err := e.sleep(ctx, poll); err != nil {
			Release(req, matches)
			return step.Failed(step.ExitNotRun, source.Errorf(source.EInterrupted, "step '%s' was interrupted while waiting for '%s'", req.Step, wf.Glob)), false
		}
	}
}

// dependsOn checks depends_on: every required glob must match at least one
// file. It returns every matched file (required globs first, then optional
// ones, each glob's matches sorted, without repeats) as absolute paths.
func dependsOn(req *step.Request) ([]string, *source.Error) {
	d := req.DependsOn
	if d == nil {
		return nil, nil
	}
	var files []string
	for i, g := range slices.Concat(d.Required, d.Optional) {
		ms, serr := globFiles(req, g)
		if serr != nil {
			return nil, serr
		}
		if len(ms) == 0 && i < len(d.Required) {
			return nil, source.Errorf(source.EDepMissing, "depends_on: required '%s' matches no file", g)
		}
		for _, m := range ms {
			if !slices.Contains(files, m) {
				files = append(files, m)
			}
		}
	}
	return files, nil
}

// globFiles returns the files matching pattern (relative to WORKSPACE, the
// syntax of filepath.Match, no "**"), sorted. The pattern is confined first
// (absolute, ".." out of BASE, and symlinks along its literal components are
// E_PATH_ESCAPE), and then every match, so a wildcard cannot lead through a
// symlink either.
func globFiles(req *step.Request, pattern string) ([]string, *source.Error) {
	d := DirsFor(req, pattern)
	abs, err := d.Resolve(pattern)
	if err != nil {
		return nil, source.Wrap(source.EExec, "glob", err)
	}
	if _, err := filepath.Match(pattern, ""); err != nil {
		return nil, source.Errorf(source.EExec, "glob '%s' is malformed: %v", pattern, err)
	}
	rel, err := filepath.Rel(d.Base, abs)
	if err != nil {
		return nil, source.Errorf(source.EExec, "glob '%s': %v", pattern, err)
	}
	matches, err := filepath.Glob(filepath.Join(escapeGlob(d.Base), rel))
	if err != nil {
		return nil, source.Errorf(source.EExec, "glob '%s' is malformed: %v", pattern, err)
	}
	slices.Sort(matches)
	for _, m := range matches {
		mrel, err := filepath.Rel(d.Workspace, m)
		if err != nil {
			return nil, source.Errorf(source.EExec, "glob '%s': %v", pattern, err)
		}
		if _, err := d.Resolve(mrel); err != nil {
			return nil, source.Wrap(source.EExec, "glob '"+pattern+"'", err)
		}
	}
	// Another run's messages, and those another step claimed, are not
	// this step's to see.
	return slices.DeleteFunc(matches, func(m string) bool { return hidden(req, m) }), nil
}

// escapeGlob quotes the glob metacharacters of a literal path.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// InjectDeps adds the files that depends_on matched to prompt. Mode list adds
// their paths (relative to WORKSPACE) one per line, mode content adds
// "--- path ---\n<content>" for each regular file; either is preceded by the
// instruction line when there is one. The block goes before the prompt
// (position prepend, the default) or after it (append), separated from it by
// one empty line.
func InjectDeps(req *step.Request, files []string, prompt string) (string, *source.Error) {
	d := req.DependsOn
	if d == nil {
		return prompt, nil
	}
	var b strings.Builder
	if d.Instruction != "" {
		b.WriteString(d.Instruction)
		b.WriteString("\n")
	}
	switch d.Inject {
	case "", injectNone:
		return prompt, nil
	case injectList, injectTrue:
		for _, f := range files {
			b.WriteString(displayPath(req, f))
			b.WriteString("\n")
		}
	case injectContent:
		for _, f := range files {
			if fi, err := os.Stat(f); err != nil || !fi.Mode().IsRegular() {
				continue
			}
			content, serr := ReadIntoPrompt(req, f, "depends_on", displayPath(req, f), len(prompt)+b.Len())
			if serr != nil {
				return "", serr
			}
			b.WriteString("--- " + displayPath(req, f) + " ---\n")
			b.WriteString(content)
			if !strings.HasSuffix(content, "\n") {
				b.WriteString("\n")
			}
		}
	default:
		return "", source.Errorf(source.EExec, "depends_on inject mode '%s' is not list, content or none", d.Inject)
	}
	block := strings.TrimRight(b.String(), "\n")
	switch {
	case prompt == "":
		return block, nil
	case block == "":
		return prompt, nil
	case d.Position == "append":
		return prompt + "\n\n" + block, nil
	}
	return block + "\n\n" + prompt, nil
}

// MaxPrompt is the most a provider step's prompt may hold: 10 MiB, the
// size every preset delivers whole (CONTRACT 5). The files read into a
// prompt (prompt_file, input_file, depends_on content, instructions_file)
// are read only while the prompt stays within it.
const MaxPrompt = 10 << 20

// ReadIntoPrompt reads abs, a confined path, the file that key (prompt_file,
// input_file, ...) names as rel, into the prompt of req's step, which holds
// used bytes already. A file that would make the prompt larger than
// MaxPrompt is not read (at most MaxPrompt+1 bytes of one that grows): an
// E_TOO_LARGE error names it, its size and the limit.
func ReadIntoPrompt(req *step.Request, abs, key, rel string, used int) (string, *source.Error) {
	s, size, err := ReadAtMost(req.Dirs, abs, int64(max(MaxPrompt-used, 0)))
	if err != nil {
		return "", FileErr(key, rel, err)
	}
	if size < 0 {
		return s, nil
	}
	before := ""
	if used > 0 {
		before = fmt.Sprintf(" with the prompt's other %d bytes,", used)
	}
	return "", source.Errorf(source.ETooLarge, "%s '%s' is %d bytes:%s the prompt of step '%s' would pass the %d bytes (10 MiB) a prompt may hold; give the model a smaller file, or the file's path to read itself (for depends_on: inject mode list)",
		key, rel, size, before, req.Step, MaxPrompt)
}

// ReadAtMost reads abs, a confined path, through the project root d when
// it holds at most limit bytes: size is then -1. A larger file is not read
// (its size comes from stat), and one that grows or is no regular file is
// read to limit+1 bytes at most: s is then "" and size what was seen, more
// than limit.
func ReadAtMost(d confine.Dir, abs string, limit int64) (s string, size int64, err error) {
	f, err := d.Open(abs)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	s, size, err = readLimited(f, limit)
	if err != nil || size > limit {
		return "", size, err
	}
	return s, -1, nil
}

// readLimited reads f when it holds at most limit bytes, and returns its
// size. A larger file is not read (its size comes from stat); one that
// grows, or is no regular file, is read to limit+1 bytes at most: s is
// then "" and size what was seen, more than limit.
func readLimited(f *os.File, limit int64) (s string, size int64, err error) {
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > limit {
		return "", fi.Size(), nil
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return "", 0, err
	}
	if int64(len(b)) > limit {
		return "", int64(len(b)), nil
	}
	return string(b), int64(len(b)), nil
}

// ReadConfined reads abs, a confined path, through the project root d.
func ReadConfined(d confine.Dir, abs string) (string, error) {
	f, err := d.Open(abs)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	return string(b), err
}
