package compiler

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// viewStatus gives every third block a status, in turn each of the
// statuses DOT colours, and one block "running": a run's page mid-way.
func viewStatus(blocks []string) map[string]string {
	statuses := []string{"completed", "failed", "skipped", "halted", "interrupted", "completed"}
	m := map[string]string{}
	for i, id := range blocks {
		if i%3 == 0 {
			m[id] = statuses[(i/3)%len(statuses)]
		}
	}
	if len(blocks) > 1 {
		m[blocks[len(blocks)/2]] = "running"
	}
	return m
}

// TestDOTViewsGolden compiles testdata/graph/NAME.yaml|json and compares
// its views, coloured by viewStatus, with NAME.views.golden: the overview,
// then each Node alone (what smithvm serve sends the run page).
func TestDOTViewsGolden(t *testing.T) {
	t.Parallel()
	for _, path := range goldenInputs(t, "testdata/graph") {
		stem := strings.TrimSuffix(path, filepath.Ext(path))
		t.Run(filepath.Base(stem), func(t *testing.T) {
			t.Parallel()
			_, prog := compileFile(t, path)
			var ids []string
			for _, b := range prog.Blocks {
				ids = append(ids, b.ID)
			}
			status := viewStatus(ids)
			var b bytes.Buffer
			b.WriteString("# overview\n")
			if err := DOT(prog, &b, DOTOptions{Status: status, View: DOTOverview()}); err != nil {
				t.Fatal(err)
			}
			for k := range prog.Nodes {
				fmt.Fprintf(&b, "# node %d\n", k)
				if err := DOT(prog, &b, DOTOptions{Status: status, View: DOTNode(k)}); err != nil {
					t.Fatal(err)
				}
			}
			var nn *NoNodeError
			if err := DOT(prog, &b, DOTOptions{View: DOTNode(len(prog.Nodes))}); !errors.As(err, &nn) || err.Error() != fmt.Sprintf("no node %d in the graph", len(prog.Nodes)) {
				t.Errorf("DOTNode(%d) of %d nodes: %v, want a NoNodeError", len(prog.Nodes), len(prog.Nodes), err)
			}
			if err := DOT(prog, &b, DOTOptions{View: DOTNode(-1)}); !errors.As(err, &nn) {
				t.Errorf("DOTNode(-1): %v, want a NoNodeError", err)
			}
			golden(t, stem+".views.golden", b.String())
		})
	}
}

// TestDOTID: the views quote an ID exactly where the whole graph's encoder
// does.
func TestDOTID(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]string{
		"b12": "b12", "_x": "_x", "é": "é", "日本": `"日本"`, "graph": `"graph"`, "Node": `"Node"`,
		"1.5": "1.5", "-3": "-3", ".5": ".5", "1.": "1.", "-": `"-"`, ".": `"."`, "1.2.3": `"1.2.3"`,
		"a b": `"a b"`, `"q"`: `"q"`, `"a`: `"\"a"`, "<x>": "<x>", "": `""`, "Node:A": `"Node:A"`,
	} {
		if got := dotID(s); got != want {
			t.Errorf("dotID(%q) = %s, want %s", s, got, want)
		}
	}
}
