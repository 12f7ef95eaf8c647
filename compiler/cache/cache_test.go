package cache

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"smith/compiler"
	"smith/isa"
	"smith/source"
	"smith/workers/confine"
)

const flow = `version: "1.0"
name: cached
steps:
  - name: A
    command: ["echo", "one"]
    on: {success: {goto: B}, failure: {error: "A failed"}}
  - name: B
    set_context: {n: "1"}
    on: {success: {end: true}, failure: {error: "B failed"}}
`

// counting replaces the compile of a miss with one that counts, for the
// test's length; tests that use it do not run in parallel.
func counting(t *testing.T) *atomic.Int32 {
	t.Helper()
	var n atomic.Int32
	old := compileSource
	compileSource = func(name string, src *[]byte, opt compiler.Options) (*compiler.Result, source.Diagnostics) {
		n.Add(1)
		return old(name, src, opt)
	}
	t.Cleanup(func() { compileSource = old })
	return &n
}

func newCache(t *testing.T) *Cache {
	t.Helper()
	dir := t.TempDir()
	c := Open(func(k string) (string, bool) {
		if k == EnvVar {
			return dir, true
		}
		return "", false
	})
	if c == nil {
		t.Fatal("Open returned nil: the test binary's build ID was not found")
	}
	return c
}

func write(t *testing.T, path, src string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

// flowFile writes src as w.yaml in a new folder and returns its path.
func flowFile(t *testing.T, src string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "w.yaml")
	write(t, f, src)
	return f
}

func entries(t *testing.T, c *Cache) []string {
	t.Helper()
	des, err := os.ReadDir(c.Dir())
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

func disasm(t *testing.T, p *isa.Program) string {
	t.Helper()
	s, err := compiler.Disassemble(p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestHitIsTheCompiledProgram: the second load of an unchanged file compiles
// nothing, and gives the program a compile gives (the same hash, so a
// resume sees no change, and the same code and positions), for every
// example workflow and manifest of the repository.
func TestHitIsTheCompiledProgram(t *testing.T) {
	n := counting(t)
	files, err := filepath.Glob("../../examples/*/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	jsons, _ := filepath.Glob("../../examples/*/*.json")
	files = append(files, jsons...)
	if len(files) < 5 {
		t.Fatalf("only %d examples found", len(files))
	}
	c := newCache(t)
	tested := 0
	for _, f := range files {
		want, ds := compiler.LoadProgram(f, compiler.Options{})
		if want == nil || len(ds) > 0 {
			continue // not kept: a document with diagnostics is compiled every time
		}
		tested++
		n.Store(0)
		for i, what := range []string{"miss", "hit"} {
			got, ds := c.LoadProgram(f, compiler.Options{})
			if got == nil || len(ds) > 0 {
				t.Fatalf("%s: %s: %v", f, what, ds)
			}
			if int(n.Load()) != 1 {
				t.Fatalf("%s: %s: %d compiles after %d loads, want 1", f, what, n.Load(), i+1)
			}
			if got.Hash() != want.Hash() || disasm(t, got) != disasm(t, want) {
				t.Errorf("%s: the %s's program differs from the compiled one", f, what)
			}
		}
	}
	if tested < 5 {
		t.Fatalf("only %d examples compile without diagnostics", tested)
	}
	if got := len(entries(t, c)); got != tested {
		t.Errorf("%d entries for %d documents", got, tested)
	}
}

// TestKeyedByEverythingACompileReads: a change of the source (even one that
// keeps its size and modification time), of the file's name as given, of
// the context keys or of the start node is a miss, and gives the program
// of what changed.
func TestKeyedByEverythingACompileReads(t *testing.T) {
	n := counting(t)
	c := newCache(t)
	dir := t.TempDir()
	f := filepath.Join(dir, "w.yaml")
	write(t, f, flow)
	load := func(path string, opt compiler.Options) *isa.Program {
		t.Helper()
		p, ds := c.LoadProgram(path, opt)
		if p == nil || len(ds) > 0 {
			t.Fatalf("LoadProgram(%s): %v", path, ds)
		}
		return p
	}
	first := load(f, compiler.Options{})
	mt := time.Now().Add(-time.Hour)
	os.Chtimes(f, mt, mt)
	load(f, compiler.Options{})
	if n.Load() != 1 {
		t.Fatalf("%d compiles of an unchanged file, want 1", n.Load())
	}

	write(t, f, strings.Replace(flow, `"one"`, `"two"`, 1)) // same size
	os.Chtimes(f, mt, mt)
	changed := load(f, compiler.Options{})
	if n.Load() != 2 || changed.Hash() == first.Hash() || !strings.Contains(disasm(t, changed), "two") {
		t.Fatalf("a changed source: %d compiles, program changed %v", n.Load(), changed.Hash() != first.Hash())
	}

	rel, err := filepath.Rel(mustWd(t), f)
	if err != nil {
		t.Fatal(err)
	}
	viaRel := load(rel, compiler.Options{})
	if n.Load() != 3 {
		t.Fatalf("another name for the file: %d compiles, want 3", n.Load())
	}
	if !strings.Contains(disasm(t, viaRel), rel+":") {
		t.Errorf("the program of %s does not name it in its positions", rel)
	}
	load(f, compiler.Options{ContextKeys: []string{"k"}})
	load(f, compiler.Options{ContextKeys: []string{"k", "l"}})
	load(f, compiler.Options{ContextKeys: []string{"kl"}})
	if n.Load() != 6 {
		t.Fatalf("other context keys: %d compiles, want 6", n.Load())
	}
	load(f, compiler.Options{ContextKeys: []string{"k", "l"}})
	if n.Load() != 6 {
		t.Fatalf("the same context keys again: %d compiles, want 6", n.Load())
	}
}

func mustWd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

// TestKeyNamesEveryOption fails when compiler.Options gains a field: the key
// (entry) must then name it, or the cache would answer a compile with other
// options with this one's program.
func TestKeyNamesEveryOption(t *testing.T) {
	t.Parallel()
	// Layout is checked at every hit (CheckLayout); ChecksOnly is never
	// cached; the others are in the key.
	known := []string{"ContextKeys", "Start", "ChecksOnly", "Layout"}
	typ := reflect.TypeFor[compiler.Options]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.IsExported() && !slices.Contains(known, f.Name) {
			t.Errorf("compiler.Options.%s is not in the cache's key: add it to Cache.entry and to this list", f.Name)
		}
	}
}

// TestDiagnosticsAreNotKept: a document with a warning is compiled at every
// load and its warning returned every time.
func TestDiagnosticsAreNotKept(t *testing.T) {
	n := counting(t)
	c := newCache(t)
	f := flowFile(t, flow+`  - name: Orphan
    command: ["true"]
    on: {success: {end: true}, failure: {error: "x"}}
`)
	for i := 1; i <= 2; i++ {
		p, ds := c.LoadProgram(f, compiler.Options{})
		if p == nil || len(ds) != 1 || ds[0].Code != source.WUnreachable {
			t.Fatalf("load %d: %v", i, ds)
		}
		if int(n.Load()) != i {
			t.Fatalf("load %d: %d compiles", i, n.Load())
		}
	}
	if es := entries(t, c); len(es) != 0 {
		t.Errorf("entries %v for a document with a warning", es)
	}
}

// TestBrokenEntryIsCompiledAgain: an entry cut short, with a byte changed,
// or emptied (what a crash before the data reached the disk leaves) is not
// used: the document is compiled and the entry written again.
func TestBrokenEntryIsCompiledAgain(t *testing.T) {
	n := counting(t)
	c := newCache(t)
	f := flowFile(t, flow)
	want, _ := c.LoadProgram(f, compiler.Options{})
	es := entries(t, c)
	if len(es) != 1 {
		t.Fatalf("entries %v", es)
	}
	path := filepath.Join(c.Dir(), es[0])
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	flipped := slices.Clone(whole)
	flipped[len(flipped)-3] ^= 0x20
	for i, broken := range [][]byte{whole[:len(whole)-1], flipped, nil, whole[:10]} {
		write(t, path, string(broken))
		got, ds := c.LoadProgram(f, compiler.Options{})
		if got == nil || len(ds) > 0 || got.Hash() != want.Hash() {
			t.Fatalf("broken entry %d: %v", i, ds)
		}
		if int(n.Load()) != i+2 {
			t.Fatalf("broken entry %d: %d compiles, want %d", i, n.Load(), i+2)
		}
		if again, _ := os.ReadFile(path); string(again) != string(whole) {
			t.Fatalf("broken entry %d was not written again", i)
		}
	}
}

// TestLayoutIsCheckedAtEveryHit: a program kept from a run whose layout
// accepted its paths is refused by one whose layout does not (the same
// path into .orchestrator/, once WORKSPACE is BASE), with the compile's own
// error at the path's position.
func TestLayoutIsCheckedAtEveryHit(t *testing.T) {
	n := counting(t)
	c := newCache(t)
	base := t.TempDir()
	f := filepath.Join(base, "w.yaml")
	write(t, f, `version: "1.0"
name: paths
steps:
  - name: A
    command: ["true"]
    input_file: .orchestrator/in
    on: {success: {end: true}, failure: {error: "A failed"}}
`)
	apart := &confine.Dir{Base: base, Workspace: filepath.Join(base, "workspace")}
	if p, ds := c.LoadProgram(f, compiler.Options{Layout: apart}); p == nil || len(ds) > 0 {
		t.Fatalf("first load: %v", ds)
	}
	same := &confine.Dir{Base: base, Workspace: base}
	want, wantDs := compiler.LoadProgram(f, compiler.Options{Layout: same})
	p, ds := c.LoadProgram(f, compiler.Options{Layout: same})
	if want != nil || p != nil || len(ds) == 0 || ds.Error() != wantDs.Error() {
		t.Fatalf("WORKSPACE is BASE: program %v, diagnostics %v, want the compile's %v", p != nil, ds, wantDs)
	}
	if ds[0].Code != source.EPathEscape || ds[0].Pos.Line != 6 {
		t.Errorf("diagnostic %v, want E_PATH_ESCAPE at line 6", ds[0])
	}
	if n.Load() != 2 {
		t.Errorf("%d compiles, want 2 (the refused hit compiles again)", n.Load())
	}
}

// TestOpen: SMITH_CACHE names the directory (a relative one from the
// current directory) or turns the cache off; without it the cache is in
// XDG_CACHE_HOME, else HOME/.cache, else off.
func TestOpen(t *testing.T) {
	t.Parallel()
	wd := mustWd(t)
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"off", map[string]string{EnvVar: "off", "HOME": "/h"}, ""},
		{"named", map[string]string{EnvVar: "/c", "HOME": "/h"}, "/c"},
		{"relative", map[string]string{EnvVar: "c"}, filepath.Join(wd, "c")},
		{"xdg", map[string]string{"XDG_CACHE_HOME": "/x", "HOME": "/h"}, "/x/smith/programs"},
		{"home", map[string]string{"XDG_CACHE_HOME": "rel", "HOME": "/h"}, "/h/.cache/smith/programs"},
		{"no home", map[string]string{"XDG_CACHE_HOME": "/x", EnvVar: ""}, "/x/smith/programs"},
		{"nothing", map[string]string{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lookup := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			if got := Open(lookup).Dir(); got != tt.want {
				t.Errorf("Dir() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestOffCompilesEveryTime: the nil Cache is compiler.LoadProgram.
func TestOffCompilesEveryTime(t *testing.T) {
	var c *Cache
	f := flowFile(t, flow)
	for range 2 {
		if p, ds := c.LoadProgram(f, compiler.Options{}); p == nil || len(ds) > 0 {
			t.Fatal(ds)
		}
	}
	if _, ds := c.LoadProgram(f+".missing", compiler.Options{}); len(ds) != 1 || !strings.Contains(ds[0].Msg, "cannot read file") {
		t.Errorf("a missing file: %v", ds)
	}
}

// TestSelfBuildID: the build ID read from the running test binary is the
// one the go command reports for it.
func TestSelfBuildID(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "tool", "buildid", exe).Output()
	if err != nil {
		t.Skipf("go tool buildid: %v", err)
	}
	if got, want := selfBuildID(), strings.TrimSpace(string(out)); got != want || got == "" {
		t.Errorf("selfBuildID() = %q, want %q", got, want)
	}
	if got := buildIDIn([]byte("junk\xff Go build ID: \"abc/def\"\n \xff")); got != "abc/def" {
		t.Errorf("the marked form: %q", got)
	}
	if got := buildIDIn([]byte("no id here")); got != "" {
		t.Errorf("no build ID: %q", got)
	}
}

// TestTrim: past keep files, a store removes the oldest until trimTo are
// left, and keeps the one it wrote.
func TestTrim(t *testing.T) {
	t.Parallel()
	c := newCache(t)
	if err := os.MkdirAll(c.Dir(), 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	for i := range keep {
		p := filepath.Join(c.Dir(), fmt.Sprintf("old-%03d", i))
		write(t, p, "x")
		mt := old.Add(time.Duration(i) * time.Second)
		os.Chtimes(p, mt, mt)
	}
	f := flowFile(t, flow)
	if p, ds := c.LoadProgram(f, compiler.Options{}); p == nil || len(ds) > 0 {
		t.Fatal(ds)
	}
	es := entries(t, c)
	if len(es) != trimTo {
		t.Fatalf("%d files after the trim, want %d", len(es), trimTo)
	}
	oldest := keep + 1 - trimTo
	if !slices.Contains(es, fmt.Sprintf("old-%03d", oldest)) || slices.Contains(es, fmt.Sprintf("old-%03d", oldest-1)) {
		t.Errorf("old-%03d is not the oldest file left: %v", oldest, es)
	}
	if !slices.Contains(es, c.entry(f, []byte(flow), compiler.Options{})) {
		t.Error("the new entry was trimmed")
	}
}

// TestTrimBytes: past maxBytes in fewer than keep files, a store removes the
// oldest until the rest fit.
func TestTrimBytes(t *testing.T) {
	t.Parallel()
	c := newCache(t)
	if err := os.MkdirAll(c.Dir(), 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	for i := range 3 {
		p := filepath.Join(c.Dir(), fmt.Sprintf("big-%d", i))
		write(t, p, "")
		if err := os.Truncate(p, maxBytes*4/10); err != nil { // sparse
			t.Fatal(err)
		}
		mt := old.Add(time.Duration(i) * time.Second)
		os.Chtimes(p, mt, mt)
	}
	f := flowFile(t, flow)
	if p, ds := c.LoadProgram(f, compiler.Options{}); p == nil || len(ds) > 0 {
		t.Fatal(ds)
	}
	es := entries(t, c)
	if len(es) != 3 || slices.Contains(es, "big-0") || !slices.Contains(es, c.entry(f, []byte(flow), compiler.Options{})) {
		t.Errorf("after the trim: %v, want big-1, big-2 and the new entry", es)
	}
}

// TestSharedDirectoryIsNotRead: a cache directory that others may write to
// is neither read nor written (a program read from it runs commands).
func TestSharedDirectoryIsNotRead(t *testing.T) {
	n := counting(t)
	c := newCache(t)
	f := flowFile(t, flow)
	c.LoadProgram(f, compiler.Options{})
	if len(entries(t, c)) != 1 {
		t.Fatal("no entry in the user's own directory")
	}
	if err := os.Chmod(c.Dir(), 0o777); err != nil {
		t.Fatal(err)
	}
	g := flowFile(t, flow)
	for range 2 {
		if p, ds := c.LoadProgram(f, compiler.Options{}); p == nil || len(ds) > 0 {
			t.Fatal(ds)
		}
		c.LoadProgram(g, compiler.Options{})
	}
	if n.Load() != 5 || len(entries(t, c)) != 1 {
		t.Errorf("a directory others can write to: %d compiles (want 5), %d entries (want 1)", n.Load(), len(entries(t, c)))
	}
}
