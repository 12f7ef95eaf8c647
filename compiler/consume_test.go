package compiler

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"smith/manifest"
)

// TestLowerManifestConsume checks that lowering a manifest while taking it
// apart (Options.consume, what Compile does for a large manifest) gives the
// same IR and diagnostics as lowering it intact, for the repository's
// manifests, and that it does take the blocks' transitions.
func TestLowerManifestConsume(t *testing.T) {
	var files []string
	for _, pat := range []string{"../testdata/*.json", "../testdata/*/*/*.json", "../examples/*/*.json", "../examples/*/*/*.json", "../manifest/testdata/*.json", "../vm/testdata/*/*.json", "testdata/*.json", "../cmd/smithc/testdata/*.json"} {
		m, _ := filepath.Glob(pat)
		files = append(files, m...)
	}
	n := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		mf1, ds1 := manifest.LoadManifest(f, src)
		mf2, _ := manifest.LoadManifest(f, src)
		if mf1 == nil || !strings.Contains(string(src), `"nodes"`) {
			continue
		}
		n++
		p1, d1 := LowerManifest(mf1, Options{})
		p2, d2 := LowerManifest(mf2, Options{consume: true})
		if a, b := irText(t, p1), irText(t, p2); a != b {
			t.Errorf("%s: the IR differs when consumed:\n%s\n---\n%s", f, a, b)
		}
		if a, b := fmt.Sprint(ds1, d1), fmt.Sprint(ds1, d2); a != b {
			t.Errorf("%s: the diagnostics differ when consumed:\n%s\n---\n%s", f, a, b)
		}
		for _, nd := range mf2.Nodes {
			for _, b := range nd.Blocks {
				if b != nil && b.Transitions != nil {
					t.Errorf("%s: block %s keeps its transitions", f, b.Key)
				}
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d manifests found", n)
	}
}

// TestCompileLargeManifest compiles a manifest above collectAfterLoad, read
// node by node and lowered consumed, and compares its IR with the one
// lowered from a whole, intact load.
func TestCompileLargeManifest(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"version": "1", "entry": "Node:N0", "workers": {"Command:Echo": {"command": ["echo", "x"]}}, "nodes": {`)
	const nodes, blocks = 60, 90
	for i := range nodes {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "\n\"Node:N%d\": {\"entry_block\": \"Block:N%d_B0\", \"blocks\": {", i, i)
		for j := range blocks {
			if j > 0 {
				b.WriteString(",")
			}
			next := fmt.Sprintf(`"JUMP:N%d_B%d"`, i, j+1)
			if j == blocks-1 {
				next = `"END"`
				if i < nodes-1 {
					next = fmt.Sprintf(`"CALL:N%d", "return_to": "Block:N%d_B0"`, i+1, i)
				}
			}
			fmt.Fprintf(&b, "\n\"Block:N%d_B%d\": {\"worker\": \"Command:Echo\", \"timeout\": %d, \"transitions\": [{\"on_signal\": \"SIGNAL:SUCCESS\", \"action\": %s}, {\"on_signal\": \"SIGNAL:FAIL_DEFAULT\", \"action\": \"FAIL:block %d of node %d\"}]}", i, j, 10+j, next, j, i)
		}
		b.WriteString("}}")
	}
	b.WriteString("}}\n")
	src := []byte(b.String())
	if len(src) < collectAfterLoad {
		t.Fatalf("the manifest has %d bytes, below %d", len(src), collectAfterLoad)
	}
	want, wds := lowerSource("big.json", src, Options{})
	res, ds := Compile("big.json", src, Options{})
	if fmt.Sprint(ds) != fmt.Sprint(wds) {
		t.Errorf("diagnostics: got %v, want %v", ds, wds)
	}
	if res.Prog == nil {
		t.Fatalf("no program: %v", ds)
	}
	if a, b := irText(t, res.IR), irText(t, want); a != b {
		t.Errorf("the IR differs")
	}
}
