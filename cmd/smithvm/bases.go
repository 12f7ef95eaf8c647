package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"smith/compiler/cache"
	"smith/source"
	"smith/vm/store"
)

// maxRecentBases is how many distinct bases the index keeps.
const maxRecentBases = 50

// basesFile is the index of recent bases: bases in Smith's folder of the
// user's cache directory (cache.UserDir). "" when there is no home to put
// it in.
func (e *env) basesFile() string {
	dir := cache.UserDir(e.lookup)
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "bases")
}

// recentBases returns the distinct bases of the index, most recent first,
// at most maxRecentBases.
func (e *env) recentBases() []string {
	f := e.basesFile()
	if f == "" {
		return nil
	}
	data, err := os.ReadFile(f)
	if err != nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	for i := len(lines) - 1; i >= 0 && len(out) < maxRecentBases; i-- {
		if l := strings.TrimSpace(lines[i]); filepath.IsAbs(l) && !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return out
}

// rememberBase records base (absolute) as the most recent base: one line
// appended (so runs started at the same time do not lose each other's
// line), unless the last line already names it (runs after runs in one
// BASE write nothing); past 4*maxRecentBases lines the file is compacted
// to the distinct recent ones. The index is a convenience: failing to
// write it changes nothing else.
func (e *env) rememberBase(base string) {
	f := e.basesFile()
	if f == "" || strings.ContainsAny(base, "\n\r") {
		return
	}
	data, err := os.ReadFile(f)
	if err == nil && strings.HasSuffix("\n"+string(data), "\n"+base+"\n") {
		return // the last line already
	}
	lines := strings.Count(string(data), "\n") + 1 // with this one
	if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
		return
	}
	w, err := os.OpenFile(f, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	_, err = w.WriteString(base + "\n")
	if cerr := w.Close(); err != nil || cerr != nil || lines <= 4*maxRecentBases {
		return
	}
	keep := e.recentBases()
	var b strings.Builder
	for i := len(keep) - 1; i >= 0; i-- {
		b.WriteString(keep[i] + "\n")
	}
	tmp := fmt.Sprintf("%s.%d.tmp", f, os.Getpid())
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return
	}
	if os.Rename(tmp, f) != nil {
		os.Remove(tmp)
	}
}

// hasRun reports whether base holds a run with this id.
func hasRun(base, id string) bool {
	fi, err := os.Stat(filepath.Join(base, ".orchestrator", "runs", id))
	return err == nil && fi.IsDir()
}

// locateBase is the BASE of run id for resume, status and graph: --base
// when given; else the current directory when it holds the run; else the
// one recent base that holds it. When none or several do, it says exactly
// what to pass and returns false with the exit status.
func (e *env) locateBase(given, id string) (string, int, bool) {
	if given != "" || !store.ValidRunID(id) {
		return given, 0, true
	}
	wd, err := e.getwd()
	if err != nil || hasRun(wd, id) {
		return "", 0, true
	}
	recent := e.recentBases()
	var found []string
	for _, b := range recent {
		if b != wd && hasRun(b, id) {
			found = append(found, b)
		}
	}
	switch len(found) {
	case 1:
		fmt.Fprintf(e.stderr, "INFO: Found run %s under %s.\n", id, found[0])
		return found[0], 0, true
	case 0:
		where := "no recent bases are recorded"
		if len(recent) > 0 {
			where = fmt.Sprintf("nor under the %d recent base(s) in %s", len(recent), e.basesFile())
		}
		return "", e.fail(source.EStateNotFound, "no run '%s' under %s, %s: pass --base DIR, DIR being the folder the run was started in (smithvm list --base DIR lists its runs)",
			id, wd, where), false
	default:
		e.refuse("run '%s' exists under %d recent bases; pass one with --base:", id, len(found))
		for _, b := range found {
			fmt.Fprintf(e.stderr, "  --base %s\n", shellQuote(b))
		}
		return "", source.ExitConfig, false
	}
}

// shellQuote quotes s for a POSIX shell when it needs it, so that a printed
// command can be pasted as it is.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// notFoundHint says where to look when a run id is not under BASE.
func notFoundHint(err error, p *project) string {
	if source.CodeOf(err, source.EInternal) != source.EStateNotFound {
		return ""
	}
	return " (smithvm list --base " + shellQuote(p.base) + " lists its runs; a run started elsewhere needs that folder's --base)"
}
