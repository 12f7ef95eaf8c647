// Package cache keeps the programs smithvm compiled from source, so that a
// run of a workflow that has not changed since an earlier run decodes its
// program (.smbc) instead of compiling the document again.
//
// An entry's key is everything a compile reads: the exact build of the
// running program (its Go build ID, a hash of its code), the file name as
// the user gave it (diagnostics and positions print it), the source's bytes
// and the compiler's options. The compiler reads nothing else, except the
// run's layout (Options.Layout), which a decoded program is checked against
// at every use (compiler.CheckLayout), as a .smbc is. Only a compile without
// any diagnostic is kept, so a hit prints what a compile would: nothing.
//
// Entries are files under the cache directory (SMITH_CACHE, else
// UserDir/programs), each the SHA-256 of its
// program followed by the program: one that a crash or another writer left
// short or changed is not used, and compiled again; nor is a directory that
// another user could write to (trusted). Nothing in a run
// depends on the cache: with SMITH_CACHE=off, or a directory that cannot be
// written, every run compiles.
package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"smith/compiler"
	"smith/isa"
	"smith/source"
)

// EnvVar names the cache's directory, or "off" to compile every time.
const EnvVar = "SMITH_CACHE"

// keep, trimTo and maxBytes bound the cache: a store that finds more than
// keep files, or more than maxBytes in them, removes the least recently
// written until trimTo files and at most maxBytes are left.
const (
	keep     = 256
	trimTo   = 192
	maxBytes = 64 << 20
)

// magic starts every entry; a change of the entry's form changes it.
const magic = "smith program cache 1\n"

// compileSource compiles on a miss (a variable: tests count the compiles).
var compileSource = compiler.CompileSource

// A Cache is a directory of compiled programs for one build of Smith. The
// nil *Cache compiles every time.
type Cache struct {
	dir string
	id  string // the running program's build ID
}

// Open returns the cache that lookup (an environment) names, or nil when
// it is off: SMITH_CACHE=off, no user cache directory (UserDir), or a
// running program without a build ID.
func Open(lookup func(string) (string, bool)) *Cache {
	dir, _ := lookup(EnvVar)
	switch {
	case dir == "off":
		return nil
	case dir == "":
		base := UserDir(lookup)
		if base == "" {
			return nil
		}
		dir = filepath.Join(base, "programs")
	case !filepath.IsAbs(dir):
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil
		}
		dir = abs
	}
	id := selfBuildID()
	if id == "" {
		return nil
	}
	return &Cache{dir: dir, id: id}
}

// UserDir is Smith's folder in the user's cache directory, as lookup (an
// environment) names it: $XDG_CACHE_HOME/smith when that is absolute, else
// $HOME/.cache/smith (~/Library/Caches/smith on macOS); "" without a HOME.
// The programs and smithvm's index of recent bases are kept there.
func UserDir(lookup func(string) (string, bool)) string {
	dir, ok := lookup("XDG_CACHE_HOME")
	if !ok || dir == "" || !filepath.IsAbs(dir) {
		home, ok := lookup("HOME")
		if !ok || home == "" {
			return ""
		}
		dir = filepath.Join(home, ".cache")
		if runtime.GOOS == "darwin" {
			dir = filepath.Join(home, "Library", "Caches")
		}
	}
	return filepath.Join(dir, "smith")
}

// Dir is the cache's directory ("" for the nil Cache).
func (c *Cache) Dir() string {
	if c == nil {
		return ""
	}
	return c.dir
}

// LoadProgram is compiler.LoadProgram through the cache: a source document
// whose entry exists is decoded and checked against opt.Layout; any other
// is compiled (and kept when the compile said nothing). A decoded program
// whose paths the layout refuses is compiled again, so that its errors
// are the compile's, at their positions.
func (c *Cache) LoadProgram(path string, opt compiler.Options) (*isa.Program, source.Diagnostics) {
	if c == nil || opt.ChecksOnly || compiler.IsBytecode(path) {
		return compiler.LoadProgram(path, opt)
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return compiler.LoadProgram(path, opt) // says why it cannot be read
	}
	name := c.entry(path, src, opt)
	if p := c.get(name); p != nil && len(compiler.CheckLayout(p, opt.Layout)) == 0 {
		return p, nil
	}
	res, ds := compileSource(path, &src, opt)
	if res.Prog != nil && len(ds) == 0 {
		c.put(name, res.Prog)
	}
	return res.Prog, ds
}

// entry is the file name of the entry for the compile of src as file path
// with opt: the hex SHA-256 of the key. Every exported field of
// compiler.Options but Layout is in it (TestKeyNamesEveryOption).
func (c *Cache) entry(path string, src []byte, opt compiler.Options) string {
	h := sha256.New()
	field := func(s string) {
		h.Write(binary.AppendUvarint(nil, uint64(len(s))))
		io.WriteString(h, s)
	}
	field(magic)
	field(c.id)
	field(path)
	field(opt.Start)
	h.Write(binary.AppendUvarint(nil, uint64(len(opt.ContextKeys))))
	for _, k := range opt.ContextKeys {
		field(k)
	}
	h.Write(binary.AppendUvarint(nil, uint64(len(src))))
	h.Write(src)
	return hex.EncodeToString(h.Sum(nil))
}

// get decodes entry name, or returns nil when there is none or it is not
// whole, or when the directory is not the user's own (trusted).
func (c *Cache) get(name string) *isa.Program {
	if !c.trusted() {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(c.dir, name))
	if err != nil || len(data) < len(magic)+sha256.Size || string(data[:len(magic)]) != magic {
		return nil
	}
	sum, code := data[len(magic):len(magic)+sha256.Size], data[len(magic)+sha256.Size:]
	if got := sha256.Sum256(code); !bytes.Equal(sum, got[:]) {
		return nil
	}
	p, err := isa.Decode(code)
	if err != nil {
		return nil
	}
	return p
}

// put writes p as entry name: into a new file, renamed into place, so that
// a reader sees a whole entry or none. It is not synced: an entry a crash
// cut short fails its sum and is compiled again. Errors are dropped: the
// cache only saves time.
func (c *Cache) put(name string, p *isa.Program) {
	code, err := p.MarshalBinary()
	if err != nil {
		return
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil || !c.trusted() {
		return
	}
	f, err := os.CreateTemp(c.dir, "tmp-*")
	if err != nil {
		return
	}
	sum := sha256.Sum256(code)
	buf := make([]byte, 0, len(magic)+len(sum)+len(code))
	buf = append(append(append(buf, magic...), sum[:]...), code...)
	_, werr := f.Write(buf)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil || os.Rename(f.Name(), filepath.Join(c.dir, name)) != nil {
		os.Remove(f.Name())
		return
	}
	c.trim()
}

// trusted reports whether the cache's directory is a directory that only
// its owner, this process's user, can write to: a program read from it
// runs commands, so one that another user could have put there is never
// read (nor is one written there).
func (c *Cache) trusted() bool {
	fi, err := os.Stat(c.dir)
	return err == nil && fi.IsDir() && fi.Mode().Perm()&0o022 == 0 && ownedBySelf(fi)
}

// trim removes the least recently written files, entries and temporary
// files alike (a crashed writer's), while there are more than keep of them
// or more than maxBytes in them. A writer whose temporary file it removed
// keeps no entry, which is harmless.
func (c *Cache) trim() {
	des, err := os.ReadDir(c.dir)
	if err != nil {
		return
	}
	type ent struct {
		name      string
		mod, size int64
	}
	var es []ent
	var total int64
	for _, de := range des {
		if fi, err := de.Info(); err == nil && fi.Mode().IsRegular() {
			es = append(es, ent{de.Name(), fi.ModTime().UnixNano(), fi.Size()})
			total += fi.Size()
		}
	}
	if len(es) <= keep && total <= maxBytes {
		return
	}
	slices.SortFunc(es, func(a, b ent) int {
		switch {
		case a.mod < b.mod:
			return -1
		case a.mod > b.mod:
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	left := len(es)
	for _, e := range es {
		if left <= trimTo && (total <= maxBytes || left == 1) {
			break
		}
		if os.Remove(filepath.Join(c.dir, e.name)) == nil {
			left--
			total -= e.size
		}
	}
}
