package manifest

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestFastSchemaAgrees checks the fast validator against the validation
// library on every workflow and manifest of the repository and on
// variants of the rich inputs with one value removed or replaced: the fast
// validator must never accept what the library rejects, and should accept
// what the library accepts (else a valid document takes the slow path).
func TestFastSchemaAgrees(t *testing.T) {
	t.Parallel()
	wv := mustValidator(NewWorkflowValidator())
	mv := mustValidator(NewManifestValidator())
	var docs []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		switch filepath.Ext(path) {
		case ".yaml", ".yml", ".json":
			if !strings.Contains(path, "schema") {
				docs = append(docs, path)
			}
		}
		return nil
	})
	if err != nil || len(docs) < 50 {
		t.Fatalf("found %d documents: %v", len(docs), err)
	}
	accepted, variants := 0, 0
	check := func(name string, vr *Validator, v *Value) bool {
		fast := vr.fast.valid(v)
		// The library's own verdict: its reporter leaves out some errors
		// (a number out of range, which the compiler reports).
		sch, err := vr.sch()
		if err != nil {
			t.Fatal(err)
		}
		slow := sch.Validate(v.Interface()) == nil
		if fast && !slow {
			t.Errorf("%s: the fast validator accepts it, the library does not: %v", name, vr.validateSlow(v))
		}
		if slow && !fast {
			t.Errorf("%s: the library accepts it, the fast validator does not", name)
		}
		return fast
	}
	for _, path := range docs {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		parse, vr := ParseYAML, wv
		if IsManifest(path, src) {
			parse, vr = ParseJSON, mv
		}
		v, _ := parse(path, src)
		if v == nil || v.Kind != KMap {
			continue
		}
		if check(path, vr, v) {
			accepted++
		}
		if !strings.Contains(path, "_rich.") {
			continue
		}
		// variants: every value in turn removed (from its object), set to a
		// number, to a string, to an empty object
		for _, edit := range []func(m *MapEntry) (undo func()){
			func(m *MapEntry) func() {
				old := m.Val
				m.Val = &Value{Kind: KNumber, Num: 7, Str: "7"}
				return func() { m.Val = old }
			},
			func(m *MapEntry) func() {
				old := m.Val
				m.Val = &Value{Kind: KString, Str: "x"}
				return func() { m.Val = old }
			},
			func(m *MapEntry) func() {
				old := m.Val
				m.Val = &Value{Kind: KMap}
				return func() { m.Val = old }
			},
			func(m *MapEntry) func() {
				old := m.Key
				m.Key = "zz" + old
				return func() { m.Key = old }
			},
		} {
			walkEntries(v, func(m *MapEntry) {
				undo := edit(m)
				check(path+" variant at '"+m.Key+"'", vr, v)
				variants++
				undo()
			})
		}
	}
	t.Logf("%d documents, %d accepted; %d variants", len(docs), accepted, variants)
	if accepted < 20 || variants < 100 {
		t.Errorf("the fast validator accepted %d documents, checked %d variants; want at least 20 and 100", accepted, variants)
	}
}

// walkEntries calls f for every object entry of the tree v.
func walkEntries(v *Value, f func(m *MapEntry)) {
	if v == nil {
		return
	}
	for i := range v.Map {
		f(&v.Map[i])
		walkEntries(v.Map[i].Val, f)
	}
	for _, e := range v.List {
		walkEntries(e, f)
	}
}

// TestCutDefs checks that cutDefs splits both schemas into the very values
// ParseJSON reads from the whole text: the root without $defs, and each
// definition.
func TestCutDefs(t *testing.T) {
	for _, text := range []string{workflowSchemaText, manifestSchemaText} {
		whole, ds := ParseJSON("schema", []byte(text))
		if ds.Err() != nil {
			t.Fatal(ds)
		}
		root, defs, err := cutDefs(text)
		if err != nil {
			t.Fatal(err)
		}
		rv, ds := ParseJSON("root", []byte(root))
		if ds.Err() != nil {
			t.Fatal(ds)
		}
		want := *whole
		want.Map = nil
		for _, e := range whole.Map {
			if e.Key != "$defs" {
				want.Map = append(want.Map, e)
			}
		}
		if got, w := string(rv.AppendJSON(nil)), string(want.AppendJSON(nil)); got != w {
			t.Errorf("root:\n%s\nwant\n%s", got, w)
		}
		wdefs := whole.Get("$defs")
		if len(defs) != len(wdefs.Map) {
			t.Errorf("%d definitions, want %d", len(defs), len(wdefs.Map))
		}
		for _, e := range wdefs.Map {
			if got, w := strings.TrimSpace(defs[e.Key]), string(e.Val.AppendJSON(nil)); got != w {
				if v, _ := ParseJSON(e.Key, []byte(got)); v == nil || string(v.AppendJSON(nil)) != w {
					t.Errorf("$defs/%s: %q, want %s", e.Key, got, w)
				}
			}
		}
	}
}

// TestSkipJSON checks where skipJSON finds the end of values with escapes
// and nesting.
func TestSkipJSON(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int // the end, -1: none
	}{
		{`"a"x`, 3},
		{`"a\"b"x`, 6},
		{`"a\\"x`, 5},
		{`"a\\\"b"x`, 8},
		{`{"a": ["}", {"b": "]\\"}], "c": true}, 1`, 37},
		{`true,`, 4},
		{`12}`, 2},
		{`{"a": [1}`, -1},
		{`"open`, -1},
	} {
		if got := skipJSON(tt.in, 0); got != tt.want {
			t.Errorf("skipJSON(%s) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

// TestLazyValidatorConcurrent validates the rich documents from several
// goroutines with fresh lazy validators, which compile their definitions
// while the goroutines race to them (run it with -race).
func TestLazyValidatorConcurrent(t *testing.T) {
	t.Parallel()
	wsrc, err := os.ReadFile("testdata/workflow_rich.yaml")
	if err != nil {
		t.Fatal(err)
	}
	msrc, err := os.ReadFile("testdata/manifest_rich.json")
	if err != nil {
		t.Fatal(err)
	}
	wv := mustValidator(newLazyWorkflowValidator())
	mv := mustValidator(newLazyManifestValidator())
	wdoc, _ := ParseYAML("w.yaml", wsrc)
	mdoc, _ := ParseJSON("m.json", msrc)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if !wv.fast.valid(wdoc) || !mv.fast.valid(mdoc) {
				t.Error("a rich document is not valid by the lazy fast validator")
			}
		})
	}
	wg.Wait()
}

// TestSchemaRanges: the printed workflow schema refuses a number out of its
// key's range, as an editor validating with it shows (poll_ms: 0), and
// accepts the bounds; Validate leaves that error to the compiler, which
// names the key and the range (one diagnostic per mistake).
func TestSchemaRanges(t *testing.T) {
	t.Parallel()
	vr := mustValidator(NewWorkflowValidator())
	sch, err := vr.sch()
	if err != nil {
		t.Fatal(err)
	}
	const head = "version: \"1.0\"\nname: t\nsteps:\n  - name: S\n    command: [\"true\"]\n"
	for _, tt := range []struct {
		yaml string
		ok   bool
	}{
		{"    wait_for: {glob: \"x/*\", poll_ms: 0}\n", false},
		{"    wait_for: {glob: \"x/*\", poll_ms: 60001}\n", false},
		{"    wait_for: {glob: \"x/*\", poll_ms: 1}\n", true},
		{"    wait_for: {glob: \"x/*\", poll_ms: 60000}\n", true},
		{"    wait_for: {glob: \"x/*\", poll_ms: 2.5}\n", false},
		{"    max_visits: 2.0\n", true},
		{"    timeout: 0\n", false},
		{"    timeout: 0.5\n", true},
		{"    max_visits: 0\n", false},
		{"    retry: {backoff_sec: -1}\n", false},
		{"    retry: {backoff_sec: 0}\n", true},
	} {
		v, ds := ParseYAML("w.yaml", []byte(head+tt.yaml))
		if len(ds) > 0 {
			t.Fatal(ds)
		}
		if err := sch.Validate(v.Interface()); (err == nil) != tt.ok {
			t.Errorf("%s: the schema says %v, want valid %v", strings.TrimSpace(tt.yaml), err, tt.ok)
		}
		if vr.fast.valid(v) != tt.ok {
			t.Errorf("%s: the fast validator says %v, want %v", strings.TrimSpace(tt.yaml), !tt.ok, tt.ok)
		}
		if ds := vr.Validate(v); len(ds) > 0 {
			t.Errorf("%s: Validate reports %v; the compiler reports a range", strings.TrimSpace(tt.yaml), ds)
		}
	}
	// Another type is the schema's to report, once.
	v, _ := ParseYAML("w.yaml", []byte(head+"    max_visits: five\n"))
	if ds, want := vr.Validate(v), "w.yaml:6:17: error: E_SCHEMA: 'max_visits' must be an integer, found string"; len(ds) != 1 || ds[0].Format() != want {
		t.Errorf("max_visits: five: Validate reports %v, want %s", ds, want)
	}
}
