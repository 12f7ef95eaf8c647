package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRecentBasesIndex: the index keeps the distinct bases, most recent
// first, at most maxRecentBases, and stays small.
func TestRecentBasesIndex(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	e := cacheEnv(cache)
	for i := 0; i < 300; i++ {
		e.rememberBase(fmt.Sprintf("/base/%d", i%70))
	}
	e.rememberBase("/base/5")
	got := e.recentBases()
	if len(got) != maxRecentBases || got[0] != "/base/5" || got[1] != "/base/19" || got[2] != "/base/18" {
		t.Errorf("recent bases = %v (%d), want /base/5, /base/19, /base/18, ... (%d)", got[:3], len(got), maxRecentBases)
	}
	data, err := os.ReadFile(filepath.Join(cache, "smith", "bases"))
	if err != nil || strings.Count(string(data), "\n") > 4*maxRecentBases {
		t.Errorf("the index has %d lines (%v), want at most %d", strings.Count(string(data), "\n"), err, 4*maxRecentBases)
	}
}

// TestRememberSameBaseWritesNothing: a run in the base the index names
// last leaves the file as it is (not a line per run); another base is
// appended, and the first base again after it.
func TestRememberSameBaseWritesNothing(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	e := cacheEnv(cache)
	index := filepath.Join(cache, "smith", "bases")
	for _, c := range []struct{ base, want string }{
		{"/a", "/a\n"},
		{"/a", "/a\n"},
		{"/b/a", "/a\n/b/a\n"},
		{"/a", "/a\n/b/a\n/a\n"},
		{"/a", "/a\n/b/a\n/a\n"},
	} {
		e.rememberBase(c.base)
		if data, _ := os.ReadFile(index); string(data) != c.want {
			t.Fatalf("after %s the index is %q, want %q", c.base, data, c.want)
		}
	}
}

// cacheEnv is an env whose only variable is XDG_CACHE_HOME=cache.
func cacheEnv(cache string) *env {
	return &env{lookup: func(k string) (string, bool) {
		if k == "XDG_CACHE_HOME" {
			return cache, true
		}
		return "", false
	}}
}
