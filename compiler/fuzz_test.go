package compiler

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"smith/internal/goldenfile"
	"smith/isa"
	"smith/source"
)

// fuzzSeedDirs hold the documents that seed FuzzCompile, relative to this
// package: the shared examples and every package's testdata inputs.
var fuzzSeedDirs = []string{"../testdata", "../examples", "testdata", "../manifest/testdata", "../cmd/smithc/testdata"}

// fuzzSeeds returns every *.yaml, *.yml and *.json file under fuzzSeedDirs
// (directories that do not exist are skipped), sorted.
func fuzzSeeds(f *testing.F) []string {
	f.Helper()
	var files []string
	for _, dir := range fuzzSeedDirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) {
					return fs.SkipDir
				}
				return err
			}
			if d.IsDir() {
				return nil
			}
			switch strings.ToLower(filepath.Ext(path)) {
			case ".yaml", ".yml", ".json":
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			f.Fatalf("walk %s: %v", dir, err)
		}
	}
	sort.Strings(files)
	return files
}

// compileWatchdog bounds one Compile call in FuzzCompile. It is not a
// timing assertion: a compile of a fuzz input takes milliseconds, and only
// a hang (an endless loop) gets anywhere near it.
const compileWatchdog = 20 * time.Second

// FuzzCompile checks that Compile never panics and never hangs on any
// input, as a YAML workflow or as a JSON manifest, and that every program
// it returns survives both round trips: Disassemble then isa.Assemble, and
// MarshalBinary then isa.Decode.
func FuzzCompile(f *testing.F) {
	for _, path := range fuzzSeeds(f) {
		src, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		isJSON := strings.EqualFold(filepath.Ext(path), ".json")
		f.Add(src, isJSON)
		f.Add(src, !isJSON) // the same bytes read as the other format
	}
	for _, s := range []string{"", "{}", "[]", "version: \"1.0\"\n", "a: &a [*a]\n", "{\"nodes\": {\"N\": {\"blocks\": {}}}}"} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, src []byte, isJSON bool) {
		name := "fuzz.yaml"
		if isJSON {
			name = "fuzz.json"
		}
		type outcome struct {
			res *Result
			ds  source.Diagnostics
		}
		done := make(chan outcome, 1) // buffered: a late send after a hang report must not block
		go func() {
			res, ds := Compile(name, src, Options{})
			done <- outcome{res, ds}
		}()
		var out outcome
		select {
		case out = <-done:
		case <-time.After(compileWatchdog):
			t.Fatalf("Compile(%q) has not returned after %v", src, compileWatchdog)
		}
		res, ds := out.res, out.ds
		switch {
		case res == nil:
			t.Fatalf("Compile(%q) returned a nil Result", src)
		case res.Prog != nil && ds.HasErrors():
			t.Fatalf("Compile(%q) returned a program and errors:\n%v", src, ds)
		case res.Prog == nil && !ds.HasErrors():
			t.Fatalf("Compile(%q) returned no program and no error:\n%v", src, ds)
		}
		for _, d := range ds {
			if _, ok := d.Code.Info(); !ok || d.Msg == "" {
				t.Errorf("Compile(%q): diagnostic with unknown code or no message: %s", src, d.Format())
			}
		}
		if res.Prog != nil {
			roundTrips(t, name, res.Prog)
		}
	})
}

// roundTrips checks that p disassembles and assembles back to the same
// program, and encodes and decodes back to the same program.
func roundTrips(t *testing.T, name string, p *isa.Program) {
	t.Helper()
	text, err := Disassemble(p)
	if err != nil {
		t.Fatalf("Disassemble(%s) error: %v", name, err)
	}
	bin, err := p.MarshalBinary()
	if err != nil {
		t.Fatalf("MarshalBinary(%s) error: %v", name, err)
	}

	q, err := isa.Assemble(name+".asm", strings.NewReader(text))
	if err != nil {
		t.Fatalf("Assemble(Disassemble(%s)) error: %v\n%s", name, err, text)
	}
	if again, _ := Disassemble(q); again != text {
		t.Errorf("Disassemble(Assemble(Disassemble(%s))) differs at %s", name, goldenfile.FirstDiff(again, text))
	}
	if b, err := q.MarshalBinary(); err != nil || !bytes.Equal(b, bin) {
		t.Errorf("MarshalBinary(Assemble(Disassemble(%s))) = %d bytes, %v; want the %d bytes of the original", name, len(b), err, len(bin))
	}

	r, err := isa.Decode(bin)
	if err != nil {
		t.Fatalf("Decode(MarshalBinary(%s)) error: %v", name, err)
	}
	if again, _ := Disassemble(r); again != text {
		t.Errorf("Disassemble(Decode(MarshalBinary(%s))) differs at %s", name, goldenfile.FirstDiff(again, text))
	}
	if b, err := r.MarshalBinary(); err != nil || !bytes.Equal(b, bin) {
		t.Errorf("MarshalBinary(Decode(MarshalBinary(%s))) = %d bytes, %v; want the %d bytes of the original", name, len(b), err, len(bin))
	}
	if !reflect.DeepEqual(q, r) {
		t.Errorf("Assemble(Disassemble(%s)) and Decode(MarshalBinary(%s)) give different programs", name, name)
	}
	if err := r.Verify(); err != nil {
		t.Errorf("Decode(MarshalBinary(%s)).Verify() = %v", name, err)
	}
}
