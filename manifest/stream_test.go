package manifest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// loadWhole is loadManifest without the node-by-node read.
func loadWhole(t *testing.T, vr *Validator, name string, src []byte) *Manifest {
	t.Helper()
	mf, ds := load(vr, name, src, ParseJSON, newLazyManifestValidator, DecodeManifest)
	if len(ds) > 0 {
		t.Fatalf("%s: read node by node, but whole it has diagnostics:\n%s", name, showDiags(ds))
	}
	return mf
}

// TestStreamManifest checks that a manifest read node by node decodes as
// when read whole: the repository's manifests and random ones whose nodes
// outgrow the arenas' chunks (so that a value kept from a node's arena
// memory would be overwritten by the next node).
func TestStreamManifest(t *testing.T) {
	t.Parallel()
	vr := mustValidator(newLazyManifestValidator())
	if vr.byNode == nil {
		t.Fatal("the manifest schema's nodes is not split: no manifest is read node by node")
	}
	var files []string
	for _, dir := range []string{"testdata", "../compiler/testdata", "../examples", "../testdata", "../vm/testdata", "../cmd/smithc/testdata"} {
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".json") {
				files = append(files, path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	streamed := 0
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if mf, ok := streamManifest(vr, path, src); ok {
			streamed++
			if want := loadWhole(t, vr, path, src); !reflect.DeepEqual(mf, want) {
				t.Errorf("%s: read node by node, the manifest differs from the one read whole", path)
			}
		}
	}
	t.Logf("%d of %d manifests read node by node", streamed, len(files))
	if streamed < 5 {
		t.Errorf("%d of %d manifests read node by node, want at least 5", streamed, len(files))
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 40 {
		src := randomManifest(rng)
		name := fmt.Sprintf("random%d.json", i)
		mf, ok := streamManifest(vr, name, src)
		if !ok {
			t.Fatalf("%s: not read node by node:\n%s", name, src)
		}
		if want := loadWhole(t, vr, name, src); !reflect.DeepEqual(mf, want) {
			t.Fatalf("%s: read node by node, the manifest differs from the one read whole:\n%s", name, src)
		}
	}
}

// randomManifest writes a valid manifest of a few nodes with random
// blocks and static_memory (large arrays, nesting, non-ASCII text).
func randomManifest(rng *rand.Rand) []byte {
	var b strings.Builder
	b.WriteString("{\"version\": \"1\", \"entry\": \"Node:N0\",\n \"nodes\": {")
	nodes := 1 + rng.IntN(6)
	for n := range nodes {
		if n > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "\n  \"Node:N%d\": {\"entry_block\": \"Block:N%d_B0\"", n, n)
		if rng.IntN(2) == 0 {
			b.WriteString(", \"static_memory\": ")
			writeFree(&b, rng, 3)
		}
		b.WriteString(", \"blocks\": {")
		for k := range rng.IntN(80) {
			if k > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "\n   \"Block:N%d_B%d\": {\"worker\": \"Command:é%d\", \"transitions\": [", n, k, k)
			for j := range rng.IntN(4) {
				if j > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "{\"on_signal\": \"SIGNAL:S%d\", \"action\": \"JUMP:N%d_B%d\"}", j, n, k+1)
			}
			b.WriteString("]")
			if rng.IntN(3) == 0 {
				fmt.Fprintf(&b, ", \"max_visits\": %d", 1+rng.IntN(8)) // at least 1
			}
			b.WriteString("}")
		}
		b.WriteString("}}")
	}
	b.WriteString("},\n \"workers\": {\"Command:é0\": {\"command\": [\"true\"]}}}\n")
	return []byte(b.String())
}

// writeFree writes a random JSON value, nested up to depth.
func writeFree(b *strings.Builder, rng *rand.Rand, depth int) {
	switch k := rng.IntN(6); {
	case depth > 0 && k == 0:
		b.WriteString("[")
		n := rng.IntN(5)
		if depth == 1 {
			n = rng.IntN(700) // more than a chunk of the arenas
		}
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			writeFree(b, rng, depth-1)
		}
		b.WriteString("]")
	case depth > 0 && k == 1:
		b.WriteString("{")
		for i := range rng.IntN(20) {
			if i > 0 {
				b.WriteString(",\n")
			}
			fmt.Fprintf(b, "\"ké%d\": ", i)
			writeFree(b, rng, depth-1)
		}
		b.WriteString("}")
	case k == 2:
		fmt.Fprintf(b, "%d.5", rng.IntN(1000))
	case k == 3:
		b.WriteString([]string{"true", "false", "null"}[rng.IntN(3)])
	default:
		fmt.Fprintf(b, "\"vä\\u00e9%d\"", rng.IntN(100))
	}
}

// TestStreamManifestRefuses checks that a manifest the fast validator or
// the parser refuses is left to the whole-document path, which words the
// diagnostics, and that Load's diagnostics are those of that path.
func TestStreamManifestRefuses(t *testing.T) {
	t.Parallel()
	vr := mustValidator(newLazyManifestValidator())
	node := `"Node:N": {"entry_block": "Block:B", "blocks": {"Block:B": {"worker": "w", "transitions": []}}}`
	for _, tt := range []struct{ name, src string }{
		{"a node without blocks", `{"version": "1", "entry": "N", "nodes": {` + node + `, "Node:M": {"entry_block": "B"}}}`},
		{"an unknown key in a block", `{"version": "1", "entry": "N", "nodes": {"Node:N": {"entry_block": "B", "blocks": {"B": {"worker": "w", "transitions": [], "x": 1}}}}}`},
		{"a node twice", `{"version": "1", "entry": "N", "nodes": {` + node + `, ` + node + `}}`},
		{"no entry", `{"version": "1", "nodes": {` + node + `}}`},
		{"an unknown top-level key", `{"version": "1", "entry": "N", "nodes": {` + node + `}, "x": 1}`},
		{"nodes not an object", `{"version": "1", "entry": "N", "nodes": []}`},
		{"a syntax error after nodes", `{"version": "1", "entry": "N", "nodes": {` + node + `},}`},
		{"a syntax error in a node", `{"version": "1", "entry": "N", "nodes": {"Node:N": {"entry_block": "B",}}}`},
		{"an infinite number in a node", `{"version": "1", "entry": "N", "nodes": {"Node:N": {"entry_block": "B", "static_memory": 1e999, "blocks": {}}}}`},
		{"a list at the top level", `[1]`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, ok := streamManifest(vr, "m.json", []byte(tt.src)); ok {
				t.Fatal("read node by node")
			}
			_, got := LoadManifest("m.json", []byte(tt.src))
			_, want := load(vr, "m.json", []byte(tt.src), parseJSONExplained, newLazyManifestValidator, DecodeManifest)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("LoadManifest diagnostics:\n%s\nwant:\n%s", showDiags(got), showDiags(want))
			}
		})
	}
}
