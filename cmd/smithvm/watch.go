package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"smith/source"
)

// debounce is how long changes must be quiet before a re-run (CONTRACT 6).
const debounce = 500 * time.Millisecond

func (e *env) cmdWatch(args []string) int {
	var c flagVals
	fs := e.watchFlags(&c)
	if st, done := e.parse(fs, args, 1); done {
		return st
	}
	proj, err := e.projectIn(c.base, c.wsDir)
	if err != nil {
		e.failErr(err, source.EUsage, "")
		return source.ExitConfig
	}
	file, err := filepath.Abs(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(e.stderr, "smithvm: %v\n", err)
		return source.ExitConfig
	}
	if err := os.MkdirAll(proj.dirs.Workspace, 0o755); err != nil {
		fmt.Fprintf(e.stderr, "smithvm: %v\n", err)
		return source.ExitConfig
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		fmt.Fprintf(e.stderr, "smithvm watch: %v\n", err)
		return source.ExitExec
	}
	defer w.Close()
	ctx, cancel := signalContext()
	defer cancel()

	wt := &watcher{w: w, file: file, workspace: proj.dirs.Workspace}
	if err := wt.addAll(); err != nil {
		fmt.Fprintf(e.stderr, "smithvm watch: %v\n", err)
		return source.ExitExec
	}
	last := 0
	for {
		last = e.runFile(&c.common, fs.Arg(0), "", "")
		if ctx.Err() != nil {
			return source.ExitInterrupted
		}
		// Folders the run made are watched too (adding one twice is a no-op).
		if err := wt.addAll(); err != nil {
			fmt.Fprintf(e.stderr, "WARNING: watch: %v\n", err)
		}
		seen := wt.snapshot()
		fmt.Fprintln(e.stderr, "INFO: Watching for changes (Ctrl-C to stop).")
		if !wt.waitChange(ctx, seen) {
			if last == 0 {
				return 0
			}
			return last
		}
		fmt.Fprintln(e.stderr, "INFO: Change detected; running again.")
	}
}

// watcher watches the workflow file and the workspace.
type watcher struct {
	w         *fsnotify.Watcher
	file      string
	workspace string
}

// addAll watches the workflow file's directory and every directory under
// WORKSPACE except artifacts/.
func (wt *watcher) addAll() error {
	if err := wt.w.Add(filepath.Dir(wt.file)); err != nil {
		return err
	}
	return wt.addTree(wt.workspace)
}

// addTree watches dir and every directory under it, except the ignored
// ones.
func (wt *watcher) addTree(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if wt.ignored(p) {
				return filepath.SkipDir
			}
			if err := wt.w.Add(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		return nil
	})
}

func (wt *watcher) ignored(p string) bool {
	rel, err := filepath.Rel(wt.workspace, p)
	if err != nil {
		return true
	}
	rel = filepath.ToSlash(rel)
	return rel == "artifacts" || strings.HasPrefix(rel, "artifacts/") || strings.Contains("/"+rel+"/", "/.orchestrator/")
}

// stamp identifies a file's version.
type stamp struct {
	mod  time.Time
	size int64
}

// snapshot records the inputs as they are now: after a run, so what the run
// wrote is part of it and does not count as a change.
func (wt *watcher) snapshot() map[string]stamp {
	m := map[string]stamp{}
	if fi, err := os.Stat(wt.file); err == nil {
		m[wt.file] = stamp{fi.ModTime(), fi.Size()}
	}
	filepath.WalkDir(wt.workspace, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if p != wt.workspace && wt.ignored(p) {
				return filepath.SkipDir
			}
			return nil
		}
		if fi, err := d.Info(); err == nil {
			m[p] = stamp{fi.ModTime(), fi.Size()}
		}
		return nil
	})
	return m
}

func changed(a, b map[string]stamp) bool {
	if len(a) != len(b) {
		return true
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !w.mod.Equal(v.mod) || w.size != v.size {
			return true
		}
	}
	return false
}

// waitChange blocks until an input differs from seen, debounced; false when
// ctx ends first.
func (wt *watcher) waitChange(ctx context.Context, seen map[string]stamp) bool {
	var timer *time.Timer
	var fire <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return false
		case ev, ok := <-wt.w.Events:
			if !ok {
				return false
			}
			if ev.Has(fsnotify.Create) {
				if fi, err := os.Stat(ev.Name); err == nil && fi.IsDir() && !wt.ignored(ev.Name) {
					// mkdir -p a/b/c makes b and c before a is watched:
					// watch the whole new tree, not only its top.
					wt.addTree(ev.Name)
				}
			}
			if timer == nil {
				timer = time.NewTimer(debounce)
			} else {
				timer.Reset(debounce)
			}
			fire = timer.C
		case <-wt.w.Errors:
		case <-fire:
			fire = nil
			if changed(seen, wt.snapshot()) {
				return true
			}
		}
	}
}
