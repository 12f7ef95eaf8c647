package compiler

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/topo"
	"gonum.org/v1/gonum/graph/traverse"

	"smith/compiler/ir"
)

func TestCheckGraph(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    func() *ir.Program
		want []string // formatted diagnostics, in order
	}{
		{
			name: "linear workflow is clean",
			p: func() *ir.Program {
				return yamlProg(
					cmd("a", on("SUCCESS", ir.Jump, "b"), on("FAIL_DEFAULT", ir.Fail, "a")),
					cmd("b", on("SUCCESS", ir.End), on("FAILURE", ir.Fail, "b")),
				)
			},
		},
		{
			name: "unreachable step",
			p: func() *ir.Program {
				return yamlProg(
					cmd("a", on("SUCCESS", ir.End), on("FAIL_DEFAULT", ir.Fail, "a")),
					cmd("b", on("SUCCESS", ir.Jump, "c"), on("FAIL_DEFAULT", ir.Fail, "b")),
					cmd("c", on("SUCCESS", ir.End), on("FAIL_DEFAULT", ir.Fail, "c")),
				)
			},
			want: []string{
				"t.yaml:5:3: warning: W_UNREACHABLE: step 'b' is never reached",
				"t.yaml:8:3: warning: W_UNREACHABLE: step 'c' is never reached",
			},
		},
		{
			name: "unreachable block and node in a manifest",
			p: func() *ir.Program {
				return prog(ir.Manifest, "A",
					node("M", "A",
						cmd("A", on("SUCCESS", ir.End), on("FAIL_DEFAULT", ir.Halt)),
						cmd("B", on("SUCCESS", ir.End), on("FAIL_DEFAULT", ir.Halt))),
					node("N", "C", cmd("C", on("SUCCESS", ir.Return), on("FAIL_DEFAULT", ir.Halt))),
				)
			},
			want: []string{
				"t.json:5:3: warning: W_UNREACHABLE: block 'B' is never reached",
				"t.json:9:3: warning: W_UNREACHABLE: block 'C' is never reached",
			},
		},
		{
			name: "loop body is reached through its loop",
			p: func() *ir.Program {
				return yamlProg(loop("l", []*ir.Block{
					cmd("x", on("SUCCESS", ir.Jump, "y"), on("FAIL_DEFAULT", ir.LoopFail)),
					cmd("y", on("SUCCESS", ir.LoopNext), on("FAILURE", ir.LoopBreak), on("FAIL_DEFAULT", ir.LoopFail)),
				}, on("SUCCESS", ir.End), on("FAILURE", ir.Fail, "l")))
			},
		},
		{
			name: "TIMEOUT falls back to FAILURE",
			p: func() *ir.Program {
				return yamlProg(cmd("a", on("SUCCESS", ir.End), on("FAILURE", ir.Fail, "a")))
			},
		},
		{
			name: "uncovered signals",
			p: func() *ir.Program {
				return yamlProg(
					cmd("a", on("SUCCESS", ir.Jump, "b")),
					when(cmd("b", on("SUCCESS", ir.End), on("FAILURE", ir.Fail, "b"))),
				)
			},
			want: []string{
				"t.yaml:2:3: error: E_NO_FALLBACK: block 'a' has no transition for 'SIGNAL:FAILURE' and no SIGNAL:FAIL_DEFAULT; add a transition on one of them",
				"t.yaml:2:3: error: E_NO_FALLBACK: block 'a' has no transition for 'SIGNAL:TIMEOUT' and no SIGNAL:FAIL_DEFAULT; add a transition on one of them",
				"t.yaml:4:3: error: E_NO_FALLBACK: block 'b' has no transition for 'SIGNAL:SKIPPED' and no SIGNAL:FAIL_DEFAULT; add a transition on one of them",
			},
		},
		{
			name: "AI block needs FAIL_DEFAULT",
			p: func() *ir.Program {
				return prog(ir.Manifest, "Gen",
					node("M", "Gen",
						aiStep("Gen", on("SUCCESS", ir.Jump, "Rev"), on("FAILURE", ir.Halt), on("TIMEOUT", ir.Halt)),
						aiStep("Rev", on("SUCCESS", ir.End), on("FAIL_DEFAULT", ir.Halt))))
			},
			want: []string{
				"t.json:2:3: error: E_NO_FALLBACK: block 'Gen' runs an AI worker, which can emit any signal, and has no SIGNAL:FAIL_DEFAULT; add a transition on SIGNAL:FAIL_DEFAULT (usually HALT_AND_FLAG, or FAIL:reason)",
			},
		},
		{
			name: "cycle with no exit",
			p: func() *ir.Program {
				return yamlProg(
					cmd("s", on("SUCCESS", ir.Jump, "a"), on("FAIL_DEFAULT", ir.Fail, "s")),
					cmd("a", on("SUCCESS", ir.Jump, "b"), on("FAIL_DEFAULT", ir.Jump, "a")),
					cmd("b", on("SUCCESS", ir.Jump, "c"), on("FAIL_DEFAULT", ir.Jump, "a")),
					cmd("c", on("SUCCESS", ir.Jump, "a"), on("FAIL_DEFAULT", ir.Jump, "b")),
				)
			},
			want: []string{
				"t.yaml:5:3: error: E_NO_EXIT: cycle 'a' -> 'b' -> 'c' -> 'a' has no exit: no END, RETURN, HALT or failure is reachable from it",
			},
		},
		{
			name: "self loop with no exit",
			p: func() *ir.Program {
				return yamlProg(
					cmd("s", on("SUCCESS", ir.Jump, "a"), on("FAIL_DEFAULT", ir.Fail, "s")),
					cmd("a", on("FAIL_DEFAULT", ir.Jump, "a")),
				)
			},
			want: []string{
				"t.yaml:5:3: error: E_NO_EXIT: cycle 'a' -> 'a' has no exit: no END, RETURN, HALT or failure is reachable from it",
			},
		},
		{
			name: "cycle with an exit",
			p: func() *ir.Program {
				return yamlProg(
					cmd("a", on("SUCCESS", ir.Jump, "b"), on("FAIL_DEFAULT", ir.Jump, "a")),
					cmd("b", on("SUCCESS", ir.Jump, "a"), on("FAILURE", ir.Jump, "c")),
					cmd("c", on("SUCCESS", ir.Jump, "b"), on("FAIL_DEFAULT", ir.Fail, "c")),
				)
			},
		},
		{
			name: "unbounded AI loop",
			p: func() *ir.Program {
				return prog(ir.Manifest, "Gen",
					node("M", "Gen",
						aiStep("Gen", on("SUCCESS", ir.Jump, "Test"), on("FAIL_DEFAULT", ir.Halt)),
						cmd("Test", on("SUCCESS", ir.End), on("FAILURE", ir.Jump, "Gen"))))
			},
			want: []string{
				"t.json:2:3: warning: W_UNBOUNDED_LOOP: cycle 'Gen' -> 'Test' -> 'Gen' passes through AI step 'Gen' and has no max_visits",
			},
		},
		{
			name: "AI loop bounded by max_visits",
			p: func() *ir.Program {
				return prog(ir.Manifest, "Gen",
					node("M", "Gen",
						aiStep("Gen", on("SUCCESS", ir.Jump, "Test"), on("FAIL_DEFAULT", ir.Halt)),
						visits(3, cmd("Test", on("SUCCESS", ir.End), on("FAILURE", ir.Jump, "Gen"), on("MAX_VISITS", ir.Halt)))))
			},
		},
		{
			name: "AI step in a for_each body is bounded by the items",
			p: func() *ir.Program {
				return yamlProg(loop("l", []*ir.Block{
					aiStep("x", on("SUCCESS", ir.LoopNext), on("FAIL_DEFAULT", ir.LoopFail)),
				}, on("SUCCESS", ir.End), on("FAILURE", ir.Fail, "l")))
			},
		},
		{
			name: "CALL reaches the callee and reruns the caller",
			p: func() *ir.Program {
				return prog(ir.Manifest, "Plan",
					node("M", "Plan",
						aiStep("Plan", on("SUCCESS", ir.End), on("SIGNAL:ASK", ir.Call, "Sub"), on("FAIL_DEFAULT", ir.Halt))),
					node("Sub", "Work",
						cmd("Work", on("SUCCESS", ir.Return), on("FAIL_DEFAULT", ir.Return))))
			},
			want: []string{
				"t.json:2:3: warning: W_UNBOUNDED_LOOP: cycle 'Plan' -> 'Plan' passes through AI step 'Plan' and has no max_visits",
			},
		},
		{
			name: "CALL with return_to reaches the return block",
			p: func() *ir.Program {
				return prog(ir.Manifest, "Plan",
					node("M", "Plan",
						cmd("Plan", on("SUCCESS", ir.Call, "Sub", "After"), on("FAIL_DEFAULT", ir.Halt)),
						cmd("After", on("SUCCESS", ir.End), on("FAIL_DEFAULT", ir.Halt))),
					node("Sub", "Work",
						cmd("Work", on("SUCCESS", ir.Return), on("FAIL_DEFAULT", ir.Return))))
			},
		},
		{
			name: "callee without exit",
			p: func() *ir.Program {
				return prog(ir.Manifest, "Plan",
					node("M", "Plan",
						cmd("Plan", on("SUCCESS", ir.Call, "Sub", "After"), on("FAIL_DEFAULT", ir.Halt)),
						cmd("After", on("SUCCESS", ir.End), on("FAIL_DEFAULT", ir.Halt))),
					node("Sub", "Work",
						cmd("Work", on("SUCCESS", ir.Jump, "More"), on("FAIL_DEFAULT", ir.Jump, "Work")),
						cmd("More", on("FAIL_DEFAULT", ir.Jump, "Work"))))
			},
			want: []string{
				"t.json:9:3: error: E_NO_EXIT: cycle 'Work' -> 'More' -> 'Work' has no exit: no END, RETURN, HALT or failure is reachable from it",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ds := CheckGraph(tt.p())
			var got []string
			for _, d := range ds {
				got = append(got, d.Format())
			}
			if g, w := strings.Join(got, "\n"), strings.Join(tt.want, "\n"); g != w {
				t.Errorf("CheckGraph(%s) =\n%s\nwant\n%s", tt.name, g, w)
			}
		})
	}
}

// TestCyclesCore checks cycles, which runs Tarjan on the core of the graph
// only, against Tarjan on the whole graph, on random graphs: chains into
// and out of cycles, self edges inside and outside cycles, the exit sink.
func TestCyclesCore(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 2000 {
		n := 1 + rng.IntN(12)
		e := randomEdges(rng, n, 4, true)
		f := buildFlow(&flatProgram{blocks: make([]flatBlock, n)}, e, true)
		var want [][]int
		for _, scc := range topo.TarjanSCC(f) {
			if len(scc) == 1 && (scc[0].ID() == f.exit || !f.self[scc[0].ID()]) {
				continue
			}
			c := make([]int, len(scc))
			for i, v := range scc {
				c[i] = int(v.ID())
			}
			slices.Sort(c)
			want = append(want, c)
		}
		slices.SortFunc(want, func(a, b []int) int { return a[0] - b[0] })
		if got := cycles(f); !reflect.DeepEqual(got, want) {
			t.Fatalf("graph %d (%d blocks, edges %v -> %v): cycles = %v, want %v", iter, n, e.from, e.to, got, want)
		}
	}
}

// randomEdges returns random edges between n blocks and the exit sink (n),
// fewer than outs from each block, in block order; forward makes two in
// three go forward (chains, as most workflows are).
func randomEdges(rng *rand.Rand, n, outs int, forward bool) *flowEdges {
	e := &flowEdges{}
	for from := range n {
		for range rng.IntN(outs) {
			to := rng.IntN(n + 1)
			if forward && rng.IntN(3) > 0 && to < from {
				to = from + rng.IntN(n+1-from)
			}
			e.from = append(e.from, int32(from))
			e.to = append(e.to, int32(to))
			e.each = append(e.each, false)
		}
	}
	return e
}

// TestReach checks reach against gonum's breadth-first walk, forwards from
// every node and backwards from the exit sink, on random graphs.
func TestReach(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for iter := range 1000 {
		n := 1 + rng.IntN(12)
		e := randomEdges(rng, n, 3, false)
		f := buildFlow(&flatProgram{blocks: make([]flatBlock, n)}, e, true)
		check := func(g traverse.Graph, adj [][]graph.Node, from int) {
			var bfs traverse.BreadthFirst
			bfs.Walk(g, f.nodes[from], nil)
			got := reach(adj, from)
			for i := range f.nodes {
				if got[i] != bfs.Visited(f.nodes[i]) {
					t.Fatalf("graph %d (edges %v -> %v), from %d: reach[%d] = %v, gonum %v", iter, e.from, e.to, from, i, got[i], !got[i])
				}
			}
		}
		for from := range n {
			check(f, f.succ, from)
		}
		check(backwards{f}, f.pred, int(f.exit))
	}
}

// backwards is a flow graph with its edges reversed.
type backwards struct{ g *flowGraph }

func (r backwards) From(id int64) graph.Nodes      { return r.g.To(id) }
func (r backwards) Edge(uid, vid int64) graph.Edge { return r.g.Edge(vid, uid) }
