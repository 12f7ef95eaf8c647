package manifest_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sort"
	"strings"
	"testing"
	"time"

	jsv "github.com/santhosh-tekuri/jsonschema/v6"

	"smith/manifest"
	"smith/source"
)

// exampleDirs hold the shared example workflows and manifests, relative to
// this package.
var exampleDirs = []string{"../testdata", "../examples"}

// exampleFiles returns every *.yaml, *.yml and *.json file under the
// example directories, sorted.
func exampleFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, dir := range exampleDirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "clis" || d.Name() == "node_modules" {
					return filepath.SkipDir // npm pins of the agent CLIs, not workflows
				}
				if d.Name() == "adversarial" {
					return filepath.SkipDir // hostile documents, many invalid on purpose (cmd/smithvm/e2e TestAdversarial)
				}
				return nil
			}
			switch strings.ToLower(filepath.Ext(path)) {
			case ".yaml", ".yml", ".json":
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("walk %s: %v", dir, err)
		}
	}
	sort.Strings(files)
	if len(files) == 0 {
		t.Fatalf("no examples under %s", strings.Join(exampleDirs, ", "))
	}
	return files
}

// printedSchema compiles the text that `smithc schema workflow|manifest`
// prints, independently of manifest's own Validator.
func printedSchema(t *testing.T, isManifest bool) *jsv.Schema {
	t.Helper()
	text, id := manifest.WorkflowSchema(), manifest.WorkflowSchemaID
	if isManifest {
		text, id = manifest.ManifestSchema(), manifest.ManifestSchemaID
	}
	doc, err := jsv.UnmarshalJSON(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("printed schema %s is not JSON: %v", id, err)
	}
	c := jsv.NewCompiler()
	if err := c.AddResource(id, doc); err != nil {
		t.Fatalf("add printed schema %s: %v", id, err)
	}
	sch, err := c.Compile(id)
	if err != nil {
		t.Fatalf("compile printed schema %s: %v", id, err)
	}
	return sch
}

// parse reads a document into a tree the way Load does.
func parse(name string, src []byte) (*manifest.Value, source.Diagnostics) {
	if manifest.IsManifest(name, src) {
		return manifest.ParseJSON(name, src)
	}
	return manifest.ParseYAML(name, src)
}

func formatDiags(ds source.Diagnostics) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString("\n\t" + d.Format())
	}
	return b.String()
}

// TestPrintedSchemaAcceptsExamples checks every example in testdata/ and
// examples/ against the printed schema, and loads it with manifest.Load:
// no E_SCHEMA (nor any other diagnostic) may come out.
func TestPrintedSchemaAcceptsExamples(t *testing.T) {
	t.Parallel()
	wfSchema, mfSchema := printedSchema(t, false), printedSchema(t, true)
	for _, path := range exampleFiles(t) {
		name := filepath.ToSlash(path)
		t.Run(strings.TrimPrefix(name, "../"), func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			isManifest := strings.EqualFold(filepath.Ext(path), ".json")
			if got := manifest.IsManifest(name, src); got != isManifest {
				t.Fatalf("IsManifest(%q) = %v, want %v", name, got, isManifest)
			}
			v, ds := parse(name, src)
			if v == nil || len(ds) > 0 {
				t.Fatalf("parse %s:%s", name, formatDiags(ds))
			}
			sch := wfSchema
			if isManifest {
				sch = mfSchema
			}
			if err := sch.Validate(v.Interface()); err != nil {
				t.Errorf("printed schema rejects %s: %v", name, err)
			}
			wf, mf, ds := manifest.Load(name, src)
			if len(ds) > 0 {
				t.Errorf("Load(%q) diagnostics:%s\nwant none", name, formatDiags(ds))
			}
			if isManifest && mf == nil || !isManifest && wf == nil {
				t.Errorf("Load(%q) = workflow %v, manifest %v; want the %s", name, wf != nil, mf != nil, map[bool]string{true: "manifest", false: "workflow"}[isManifest])
			}
		})
	}
}

// TestPrintedSchemaRejectsBroken breaks one value of an example and checks
// that the printed schema rejects it and that Load reports E_SCHEMA at the
// broken value's position.
func TestPrintedSchemaRejectsBroken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		file string
		old  string // text replaced in the example; the broken value starts at the first changed byte
		new  string
		at   string // the offending key or value in new (a string value is positioned after its quote)
		want string // substring of the E_SCHEMA message
	}{
		{"manifest unknown block key", "../testdata/feature.json",
			`"worker": "Worker:CodeGenerator",`, `"wroker": "Worker:CodeGenerator",`,
			`"wroker"`, "unknown key 'wroker'"},
		{"manifest wrong type", "../testdata/feature.json",
			`"max_visits": 5,`, `"max_visits": "five",`,
			`five`, "max_visits"},
		{"workflow wrong type", "../testdata/constructs.yaml",
			"timeout: 60", "timeout: sixty",
			"sixty", "timeout"},
		{"workflow unknown step key", "../testdata/constructs.yaml",
			"output_capture: lines", "output_captur: lines",
			"output_captur", "did you mean 'output_capture'?"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			orig, err := os.ReadFile(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			i := bytes.Index(orig, []byte(tt.old))
			if i < 0 {
				t.Fatalf("%s does not contain %q", tt.file, tt.old)
			}
			src := bytes.Replace(orig, []byte(tt.old), []byte(tt.new), 1)
			off := i + strings.Index(tt.new, tt.at)
			want := source.NewFile(tt.file, src).Pos(off)

			v, ds := parse(tt.file, src)
			if v == nil || len(ds) > 0 {
				t.Fatalf("parse broken %s:%s", tt.file, formatDiags(ds))
			}
			if err := printedSchema(t, manifest.IsManifest(tt.file, src)).Validate(v.Interface()); err == nil {
				t.Errorf("printed schema accepts %s with %q, want a rejection", tt.file, tt.new)
			}

			_, _, ds = manifest.Load(tt.file, src)
			found := false
			for _, d := range ds {
				if d.Code != source.ESchema {
					t.Errorf("Load(%s with %q): unexpected %s", tt.file, tt.new, d.Format())
					continue
				}
				if d.Pos == want && strings.Contains(d.Msg, tt.want) {
					found = true
				}
			}
			if !found {
				t.Errorf("Load(%s with %q) =%s\nwant %s: error: E_SCHEMA: ...%s...", tt.file, tt.new, formatDiags(ds), want, tt.want)
			}
		})
	}
}

// laughs is a "billion laughs" alias bomb: 10^depth strings from a few
// lines, under a workflow's context.
func laughs(depth int) string {
	var b strings.Builder
	b.WriteString("version: \"1.0\"\nname: lol\nsteps: []\ncontext:\n")
	b.WriteString("  a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < depth; i++ {
		fmt.Fprintf(&b, "  a%d: &a%d [", i, i)
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// TestLoadBillionLaughs checks that an alias bomb is an E_PARSE through the
// whole loader, not a hang or an out-of-memory.
func TestLoadBillionLaughs(t *testing.T) {
	t.Parallel()
	for _, depth := range []int{9, 12} {
		t.Run(fmt.Sprint(depth), func(t *testing.T) {
			t.Parallel()
			wf, _, ds := manifest.Load("lol.yaml", []byte(laughs(depth)))
			if wf != nil {
				t.Errorf("Load(billion laughs, depth %d) returned a workflow, want none", depth)
			}
			if len(ds) != 1 || ds[0].Code != source.EParse {
				t.Errorf("Load(billion laughs, depth %d) =%s\nwant one E_PARSE", depth, formatDiags(ds))
			}
		})
	}
}

// bigWorkflow builds a valid YAML workflow of about size bytes: a large
// context and many steps.
func bigWorkflow(size int) []byte {
	var b bytes.Buffer
	b.Grow(size + 1024)
	b.WriteString("version: \"1.0\"\nname: big\nstrict_flow: false\ncontext:\n")
	pad := strings.Repeat("x", 80)
	for i := 0; b.Len() < size/2; i++ {
		fmt.Fprintf(&b, "  key%07d: {text: \"%s ü\", n: %d, ok: true}\n", i, pad, i)
	}
	b.WriteString("steps:\n")
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "  - name: Step%07d\n    command: [\"echo\", \"%s\", \"${context.key%07d}\"]\n    timeout: 30\n", i, pad, i%1000)
	}
	return b.Bytes()
}

// heapObjects is the runtime metric of the bytes held by heap objects,
// live or not yet collected.
const heapObjects = "/memory/classes/heap/objects:bytes"

func readHeap() uint64 {
	s := []metrics.Sample{{Name: heapObjects}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// liveHeap returns the bytes of live heap after a collection.
func liveHeap() uint64 {
	runtime.GC()
	return readHeap()
}

// peakHeap runs f while sampling the heap every millisecond and returns the
// highest heap seen (a lower bound of the true peak).
func peakHeap(f func()) uint64 {
	stop, done := make(chan struct{}), make(chan uint64)
	go func() {
		peak := readHeap()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				done <- max(peak, readHeap())
				return
			case <-tick.C:
				peak = max(peak, readHeap())
			}
		}
	}()
	f()
	close(stop)
	return <-done
}

// TestLoadLarge loads a 50 MB workflow and a 50 MB manifest and checks that
// the heap, during the load and after it, stays within a small multiple of
// the input. Not parallel: it measures the heap.
func TestLoadLarge(t *testing.T) {
	if os.Getenv("SMITH_LARGE") != "1" || testing.Short() {
		t.Skip("50 MB documents: run with SMITH_LARGE=1 (docs/testing.md)")
	}
	const size = 50 << 20
	const maxLive = 8 // live heap growth after the load, per input byte
	// maxPeak is the heap growth during the load, garbage not yet collected
	// included, per input byte. YAML's is larger: go.yaml.in/yaml/v3 builds
	// its own node tree (about 18 bytes per input byte, measured) before
	// the Value tree exists.
	tests := []struct {
		name    string
		file    string
		build   func() []byte
		maxPeak int
	}{
		{"workflow", "big.yaml", func() []byte { return bigWorkflow(size) }, 48},
		{"manifest", "big.json", bigManifest, 32},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.build()
			before := liveHeap()
			var (
				wf *manifest.Workflow
				mf *manifest.Manifest
				ds source.Diagnostics
			)
			peak := peakHeap(func() { wf, mf, ds = manifest.Load(tt.file, src) })
			after := liveHeap()
			if len(ds) > 0 {
				if len(ds) > 5 {
					ds = ds[:5]
				}
				t.Fatalf("Load(%s, %d MB) diagnostics:%s", tt.file, len(src)>>20, formatDiags(ds))
			}
			if wf == nil && mf == nil {
				t.Fatalf("Load(%s) returned nothing", tt.file)
			}
			live, peakGrowth := int64(after)-int64(before), int64(peak)-int64(before)
			t.Logf("Load(%s, %d MB): heap grew by %d MB at the peak, %d MB live after", tt.file, len(src)>>20, peakGrowth>>20, live>>20)
			if live > int64(maxLive*len(src)) {
				t.Errorf("Load(%s, %d MB): live heap grew by %d MB, want at most %d MB", tt.file, len(src)>>20, live>>20, maxLive*len(src)>>20)
			}
			if peakGrowth > int64(tt.maxPeak*len(src)) {
				t.Errorf("Load(%s, %d MB): heap grew by %d MB during the load, want at most %d MB", tt.file, len(src)>>20, peakGrowth>>20, tt.maxPeak*len(src)>>20)
			}
			runtime.KeepAlive(wf)
			runtime.KeepAlive(mf)
		})
	}
}

// bigManifest builds a valid manifest of about 50 MB: a large static
// memory and many blocks.
func bigManifest() []byte {
	const size = 50 << 20
	var b bytes.Buffer
	b.Grow(size + 1024)
	b.WriteString(`{"version": "1", "entry": "Node:Main", "nodes": {"Node:Main": {"entry_block": "Block:B0000000", "static_memory": {`)
	pad := strings.Repeat("x", 80)
	for i := 0; b.Len() < size/2; i++ {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `"key%07d": {"text": "%s ü", "n": %d, "ok": true}`, i, pad, i)
	}
	b.WriteString("},\n\"blocks\": {")
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `"Block:B%07d": {"worker": "Internal:TestRunner", "transitions": [{"on_signal": "SIGNAL:SUCCESS", "action": "JUMP:B%07d"}, {"on_signal": "SIGNAL:FAIL_DEFAULT", "action": "END"}]}`, i, i+1)
	}
	b.WriteString("}}}}\n")
	return b.Bytes()
}
