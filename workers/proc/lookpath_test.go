package proc

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// tool writes an executable script named name into dir.
func tool(t *testing.T, dir, name string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLookPathSeesChanges runs the same lookup many times while the PATH
// directories change under it: every answer is what a fresh search gives.
func TestLookPathSeesChanges(t *testing.T) {
	root := t.TempDir()
	early, missing, late := filepath.Join(root, "early"), filepath.Join(root, "missing"), filepath.Join(root, "late")
	if err := os.MkdirAll(early, 0o755); err != nil {
		t.Fatal(err)
	}
	name := "smith-lookpath-tool"
	lateTool := tool(t, late, name)
	env := []string{"PATH=" + early + ":relative:" + missing + ":" + late}
	look := func(want string) {
		t.Helper()
		for range 40 { // a run's steps look the same command up again and again
			got, err := lookPath(name, env)
			if want == "" {
				if err == nil {
					t.Fatalf("lookPath = %s, want not found", got)
				}
				continue
			}
			if err != nil || got != want {
				t.Fatalf("lookPath = %q, %v; want %q", got, err, want)
			}
		}
	}

	look(lateTool)
	// A directory of PATH that did not exist is made, with the tool.
	missingTool := tool(t, missing, name)
	look(missingTool)
	// The tool is installed in an earlier directory.
	earlyTool := tool(t, early, name)
	look(earlyTool)
	// It loses its x bit: the search goes on past it; and gets it back.
	if err := os.Chmod(earlyTool, 0o644); err != nil {
		t.Fatal(err)
	}
	look(missingTool)
	if err := os.Chmod(earlyTool, 0o755); err != nil {
		t.Fatal(err)
	}
	look(earlyTool)
	if err := os.Remove(earlyTool); err != nil {
		t.Fatal(err)
	}
	// Removed where it was found, and the directory with it.
	if err := os.RemoveAll(missing); err != nil {
		t.Fatal(err)
	}
	look(lateTool)
	// A symbolic link whose target goes away, and comes back.
	target := tool(t, filepath.Join(root, "elsewhere"), name)
	if err := os.Symlink(target, filepath.Join(early, name)); err != nil {
		t.Fatal(err)
	}
	look(filepath.Join(early, name))
	if err := os.Remove(target); err != nil {
		t.Fatal(err)
	}
	look(lateTool)
	tool(t, filepath.Join(root, "elsewhere"), name)
	look(filepath.Join(early, name))
	if err := os.Remove(filepath.Join(early, name)); err != nil {
		t.Fatal(err)
	}
	// A PATH directory reached through a symbolic link, re-pointed.
	v1, v2 := filepath.Join(root, "v1"), filepath.Join(root, "v2")
	tool(t, v2, name)
	if err := os.MkdirAll(v1, 0o755); err != nil {
		t.Fatal(err)
	}
	current := filepath.Join(root, "current")
	if err := os.Symlink(v1, current); err != nil {
		t.Fatal(err)
	}
	env = []string{"PATH=" + current + ":" + late}
	look(lateTool)
	if err := os.Remove(current); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(v2, current); err != nil {
		t.Fatal(err)
	}
	look(filepath.Join(current, name))
	// Renamed away, and nowhere left.
	env = []string{"PATH=" + late}
	if err := os.Rename(lateTool, lateTool+".old"); err != nil {
		t.Fatal(err)
	}
	look("")
}

// TestLookPathKeyedByPATH checks that two PATHs are two lookups.
func TestLookPathKeyedByPATH(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	name := "smith-lookpath-keyed"
	at, bt := tool(t, a, name), tool(t, b, name)
	for i := 0; i < 40; i++ {
		for _, c := range []struct{ path, want string }{{a + ":" + b, at}, {b + ":" + a, bt}} {
			got, err := lookPath(name, []string{"PATH=" + c.path})
			if err != nil || got != c.want {
				t.Fatalf("PATH=%s: lookPath = %q, %v; want %q", c.path, got, err, c.want)
			}
		}
	}
}

// TestLookPathWatchesNothing: however often a command is looked up, the
// process holds no inotify (or fanotify) descriptor, whose watches would make
// its exit wait for the kernel to free them (4-13 ms on a 2-core VM: a
// 20-step run took 35 ms instead of 22).
func TestLookPathWatchesNothing(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("inotify is Linux's")
	}
	root := t.TempDir()
	name := "smith-lookpath-watch"
	tool(t, filepath.Join(root, "bin"), name)
	env := []string{"PATH=" + filepath.Join(root, "none") + ":" + filepath.Join(root, "bin")}
	for range 1000 {
		if _, err := lookPath(name, env); err != nil {
			t.Fatal(err)
		}
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && (strings.Contains(target, "inotify") || strings.Contains(target, "fanotify")) {
			t.Fatalf("after 1,000 lookups descriptor %s is %s", fd.Name(), target)
		}
	}
}

// TestLookPathSkipsRepeatedDirectories: a PATH that names a directory twice
// (a common result of shell start-up files) looks in it once.
func TestLookPathSkipsRepeatedDirectories(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	name := "smith-lookpath-repeated"
	bt := tool(t, b, name)
	var looked []string
	defer func(old func(string) bool) { lookExecutable = old }(lookExecutable)
	lookExecutable = func(p string) bool { looked = append(looked, p); return isExecutable(p) }
	got, err := lookPath(name, []string{"PATH=" + a + ":" + a + ":relative:" + a + "/:" + b + ":" + b})
	if err != nil || got != bt {
		t.Fatalf("lookPath = %q, %v; want %q", got, err, bt)
	}
	want := []string{filepath.Join(a, name), filepath.Join(a, name), bt}
	if !slices.Equal(looked, want) {
		t.Errorf("looked at %q, want %q (a/ is another spelling, looked in again)", looked, want)
	}
}
