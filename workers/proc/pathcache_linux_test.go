package proc

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"smith/internal/testchild"
)

// resetPaths forgets the PATH cache and closes its inotify instance.
func resetPaths(t *testing.T) {
	t.Helper()
	paths.Lock()
	defer paths.Unlock()
	if paths.fd > 0 {
		unix.Close(paths.fd)
	}
	paths.fd, paths.looks, paths.found, paths.watched = 0, nil, nil, nil
}

// TestPathCacheNeverStale: a command looked up often enough is answered
// from the cache, and every change that would change a fresh lookup's
// answer is seen at the next one: the command created in an earlier
// directory, that directory created (or moved into place) after the
// answer, the answer removed or made non-executable, PATH changed.
func TestPathCacheNeverStale(t *testing.T) {
	resetPaths(t)
	t.Cleanup(func() { resetPaths(t) })
	root := t.TempDir()
	early := filepath.Join(root, "a", "missing", "bin") // absent at first
	mid := filepath.Join(root, "b", "bin")
	late := filepath.Join(root, "c", "bin")
	for _, d := range []string{mid, late} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exe := func(dir string) string {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "smithcmd")
		if err := os.WriteFile(p, []byte("#!/bin/true\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	env := []string{"PATH=" + strings.Join([]string{early, mid, late}, ":")}
	look := func(want string, wantCached bool) {
		t.Helper()
		got, cached, err := lookPath("smithcmd", env)
		if want == "" {
			if err == nil {
				t.Fatalf("lookPath = %q, want not found", got)
			}
			return
		}
		if err != nil || got != want || cached != wantCached {
			t.Fatalf("lookPath = %q (cached %v), %v; want %q (cached %v)", got, cached, err, want, wantCached)
		}
	}
	inLate := exe(late)
	for i := 1; i < cacheAfter; i++ {
		look(inLate, false)
	}
	look(inLate, false) // the cacheAfter-th: watched, looked up again, kept
	look(inLate, true)
	look(inLate, true)

	inMid := exe(mid) // shadows it
	look(inMid, false)
	look(inMid, true)

	// An earlier directory that did not exist: created by a rename of a
	// directory above it into place.
	staged := filepath.Join(root, "a", "staging")
	exe(filepath.Join(staged, "bin"))
	look(inMid, false) // root/a is new: a change above early, looked up again
	look(inMid, true)
	if err := os.Rename(staged, filepath.Join(root, "a", "missing")); err != nil {
		t.Fatal(err)
	}
	inEarly := filepath.Join(early, "smithcmd")
	look(inEarly, false)
	look(inEarly, true)

	if err := os.Chmod(inEarly, 0o644); err != nil { // no longer executable
		t.Fatal(err)
	}
	look(inMid, false)
	look(inMid, true)
	if err := os.Remove(inMid); err != nil {
		t.Fatal(err)
	}
	look(inLate, false)
	look(inLate, true)
	if err := os.RemoveAll(filepath.Join(root, "c")); err != nil { // a directory above it
		t.Fatal(err)
	}
	look("", false)

	// Another PATH is another key: looked up afresh.
	other := []string{"PATH=" + mid + ":" + early}
	if got, cached, err := lookPath("smithcmd", other); err == nil || cached {
		t.Fatalf("lookPath in another PATH = %q (cached %v), %v; want not found (the only one is not executable)", got, cached, err)
	}
}

// TestPathCacheStaleLinkRetried: a cached answer that is a symbolic link
// whose target went away (a change outside every watched directory) fails
// to start; Run looks the command up again and starts the next one.
func TestPathCacheStaleLinkRetried(t *testing.T) {
	resetPaths(t)
	t.Cleanup(func() { resetPaths(t) })
	root := t.TempDir()
	d1, d2, elsewhere := filepath.Join(root, "d1"), filepath.Join(root, "d2"), filepath.Join(root, "elsewhere")
	for _, d := range []string{d1, d2, elsewhere} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	argv, env := testchild.Argv(t, "exit", "0")
	target := filepath.Join(elsewhere, "helper")
	copyFile(t, argv[0], target)
	if err := os.Symlink(target, filepath.Join(d1, "smithhelper")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(argv[0], filepath.Join(d2, "smithhelper")); err != nil {
		t.Fatal(err)
	}
	env = append(env, "PATH="+d1+":"+d2)
	for range cacheAfter + 1 {
		if _, _, err := lookPath("smithhelper", env); err != nil {
			t.Fatal(err)
		}
	}
	if p, cached, _ := lookPath("smithhelper", env); !cached || p != filepath.Join(d1, "smithhelper") {
		t.Fatalf("lookPath = %q (cached %v); want d1's link, cached", p, cached)
	}
	if err := os.Remove(target); err != nil {
		t.Fatal(err)
	}
	run := append([]string{"smithhelper"}, argv[1:]...)
	res := Run(context.Background(), Spec{Argv: run, Env: env})
	if res.StartErr != nil || res.ExitCode != 0 {
		t.Fatalf("Run after the link's target went away: exit %d, %v; want d2's helper started (exit 0)", res.ExitCode, res.StartErr)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
