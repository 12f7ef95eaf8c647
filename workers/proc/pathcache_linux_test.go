package proc

import (
	"os"
	"path/filepath"
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

// TestLookPathCacheSeesChanges runs the same lookup again and again while
// the PATH directories change under it: every answer is what a fresh
// search gives, and an unchanged PATH is answered from the cache.
func TestLookPathCacheSeesChanges(t *testing.T) {
	root := t.TempDir()
	if !watchable(root) {
		t.Skipf("%s is not on a local file system, or its path has a symbolic link: the cache watches neither", root)
	}
	early, missing, late := filepath.Join(root, "early"), filepath.Join(root, "missing"), filepath.Join(root, "late")
	if err := os.MkdirAll(early, 0o755); err != nil {
		t.Fatal(err)
	}
	name := "smith-pathcache-tool"
	lateTool := tool(t, late, name)
	env := []string{"PATH=" + early + ":relative:" + missing + ":" + late}
	pathVar := env[0][len("PATH="):]
	look := func(want string) {
		t.Helper()
		got, err := lookPath(name, env)
		if want == "" {
			if err == nil {
				t.Fatalf("lookPath = %s, want not found", got)
			}
			return
		}
		if err != nil || got != want {
			t.Fatalf("lookPath = %q, %v; want %q", got, err, want)
		}
	}
	cached := func() string {
		pathCache.Lock()
		defer pathCache.Unlock()
		return pathCache.hits[pathKey{pathVar, name}].file
	}

	for range watchFrom - 1 {
		look(lateTool)
		if cached() != "" {
			t.Fatalf("the cache holds %q before the %dth lookup", cached(), watchFrom)
		}
	}
	look(lateTool)
	if cached() != lateTool {
		t.Fatalf("after %d lookups the cache holds %q, want %q", watchFrom, cached(), lateTool)
	}
	look(lateTool)

	// A directory of PATH that did not exist is made, with the tool.
	missingTool := tool(t, missing, name)
	look(missingTool)
	look(missingTool)
	if cached() != missingTool {
		t.Fatalf("cache holds %q, want %q", cached(), missingTool)
	}

	// The tool is installed in an earlier, watched directory.
	earlyTool := tool(t, early, name)
	look(earlyTool)
	look(earlyTool)

	// It loses its x bit: the search goes on past it.
	if err := os.Chmod(earlyTool, 0o644); err != nil {
		t.Fatal(err)
	}
	look(missingTool)
	look(missingTool)

	// It gets its x bit back (a change of the entry itself, which the
	// watches do not report: the entry is looked at again at every lookup).
	if err := os.Chmod(earlyTool, 0o755); err != nil {
		t.Fatal(err)
	}
	look(earlyTool)
	if err := os.Chmod(earlyTool, 0o644); err != nil {
		t.Fatal(err)
	}
	look(missingTool)

	// Removed where it was found, and the directory with it.
	if err := os.RemoveAll(missing); err != nil {
		t.Fatal(err)
	}
	look(lateTool)
	look(lateTool)

	// A symbolic link whose target goes away.
	if err := os.Remove(earlyTool); err != nil {
		t.Fatal(err)
	}
	target := tool(t, filepath.Join(root, "elsewhere"), name)
	if err := os.Symlink(target, filepath.Join(early, name)); err != nil {
		t.Fatal(err)
	}
	look(filepath.Join(early, name))
	look(filepath.Join(early, name))
	if err := os.Remove(target); err != nil {
		t.Fatal(err)
	}
	look(lateTool)
	look(lateTool)
	if cached() != lateTool {
		t.Fatalf("cache holds %q, want %q", cached(), lateTool)
	}
	// The dangling link's target comes back: the link is the command again.
	tool(t, filepath.Join(root, "elsewhere"), name)
	look(filepath.Join(early, name))
	if err := os.Remove(filepath.Join(early, name)); err != nil {
		t.Fatal(err)
	}
	look(lateTool)

	// A PATH directory reached through a symbolic link is looked in at
	// every lookup: re-pointing the link is seen.
	v1, v2 := filepath.Join(root, "v1"), filepath.Join(root, "v2")
	v2Tool := tool(t, v2, name)
	if err := os.MkdirAll(v1, 0o755); err != nil {
		t.Fatal(err)
	}
	current := filepath.Join(root, "current")
	if err := os.Symlink(v1, current); err != nil {
		t.Fatal(err)
	}
	linked := []string{"PATH=" + current + ":" + late}
	for range watchFrom + 2 {
		if got, err := lookPath(name, linked); err != nil || got != lateTool {
			t.Fatalf("lookPath through %s -> v1 = %q, %v; want %q", current, got, err, lateTool)
		}
	}
	if err := os.Remove(current); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(v2, current); err != nil {
		t.Fatal(err)
	}
	if got, err := lookPath(name, linked); err != nil || got != filepath.Join(current, name) {
		t.Fatalf("lookPath after %s -> v2 = %q, %v; want %q (%s)", current, got, err, filepath.Join(current, name), v2Tool)
	}

	// Renamed away, and nowhere left.
	if err := os.Rename(lateTool, lateTool+".old"); err != nil {
		t.Fatal(err)
	}
	look("")
}

// TestLookPathCacheKeyedByPATH checks that two PATHs are two lookups.
func TestLookPathCacheKeyedByPATH(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	name := "smith-pathcache-keyed"
	at, bt := tool(t, a, name), tool(t, b, name)
	for i := 0; i < 3; i++ {
		for _, c := range []struct{ path, want string }{{a + ":" + b, at}, {b + ":" + a, bt}} {
			got, err := lookPath(name, []string{"PATH=" + c.path})
			if err != nil || got != c.want {
				t.Fatalf("PATH=%s: lookPath = %q, %v; want %q", c.path, got, err, c.want)
			}
		}
	}
}

// TestLocalFS: the cache does not watch /proc (nor any file system it does
// not know to report every change).
func TestLocalFS(t *testing.T) {
	if localFS("/proc") {
		t.Error("localFS(/proc) = true")
	}
	if localFS("/no/such/directory") {
		t.Error("localFS of a missing directory = true")
	}
}
