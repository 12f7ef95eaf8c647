package serve

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"smith/bench"
	"smith/compiler"
	"smith/isa"
	"smith/vm"
)

// bigProgram compiles the 2,000-block manifest of bench (40 Nodes of 50
// blocks).
func bigProgram(t testing.TB) *isa.Program {
	t.Helper()
	path := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(path, bench.Manifest(40, 50), 0o644); err != nil {
		t.Fatal(err)
	}
	p, ds := compiler.LoadProgram(path, compiler.Options{})
	if p == nil || ds.Err() != nil {
		t.Fatalf("compile: %v", ds.Err())
	}
	if len(p.Blocks) != 2000 {
		t.Fatalf("%d blocks, want 2000", len(p.Blocks))
	}
	return p
}

// bigState is a run of the big program halfway through Node 1.
func bigState(p *isa.Program) *vm.State {
	st := &vm.State{Status: vm.StatusRunning, Steps: map[string]*vm.StepResult{}}
	for _, b := range p.Blocks[:60] {
		st.Steps[b.ID] = &vm.StepResult{Status: vm.StepCompleted}
	}
	st.CurrentStep = p.Blocks[60].ID
	return st
}

func TestBlockStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		st   vm.State
		want string
	}{
		{"running", vm.State{Status: "running", CurrentStep: "B", Steps: map[string]*vm.StepResult{"A": {Status: "completed"}}}, "A=completed B=running"},
		{"halted", vm.State{Status: "halted", IsHalted: true, HaltedBlock: "B", CurrentStep: "B", Steps: map[string]*vm.StepResult{"A": {Status: "failed"}, "B": {Status: "completed"}}}, "A=failed B=halted"},
		{"completed", vm.State{Status: "completed", CurrentStep: "B", Steps: map[string]*vm.StepResult{"B": {Status: "completed"}}}, "B=completed"},
		{"interrupted", vm.State{Status: "interrupted", CurrentStep: "B", Steps: map[string]*vm.StepResult{"A": {Status: "completed"}, "B": {Status: "running"}}}, "A=completed B=interrupted"},
		// cut off: the state says running, no process drives it
		{"cut off", vm.State{Status: "running", CurrentStep: "B", Steps: map[string]*vm.StepResult{"A": {Status: "completed"}, "B": {Status: "running"}}}, "A=completed B=interrupted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := BlockStatus(tt.st.Shown(tt.name == "cut off"))
			var got []string
			for _, k := range []string{"A", "B"} {
				if v, ok := m[k]; ok {
					got = append(got, k+"="+v)
				}
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("BlockStatus = %v, want %s", got, tt.want)
			}
		})
	}
}

// TestGraphViews: the 2,000-block program's overview has one box per Node
// (40), coloured by its blocks, and each Node alone has its 50 blocks plus
// a box per Node it reaches.
func TestGraphViews(t *testing.T) {
	t.Parallel()
	p := bigProgram(t)
	st := bigState(p)
	view := func(v compiler.DOTView) (string, error) {
		var b bytes.Buffer
		err := compiler.DOT(p, &b, compiler.DOTOptions{Status: BlockStatus(st), View: v})
		return b.String(), err
	}
	over, err := view(compiler.DOTOverview())
	if err != nil {
		t.Fatal(err)
	}
	boxes := regexp.MustCompile(`(?m)^  c\d+ \[`).FindAllString(over, -1)
	if len(boxes) != 40 {
		t.Errorf("overview has %d boxes, want 40\n%s", len(boxes), over)
	}
	if !strings.Contains(over, `c0 [label="Node:N0\n50 blocks" shape=box3d style=filled fillcolor=palegreen]`) ||
		!strings.Contains(over, `c1 [label="Node:N1\n50 blocks" shape=box3d style=filled fillcolor=lightskyblue]`) ||
		!strings.Contains(over, `c2 [label="Node:N2\n50 blocks" shape=box3d];`) {
		t.Errorf("overview colours wrong:\n%s", over[:min(len(over), 600)])
	}
	if !strings.Contains(over, "c0 -> c1;") || !strings.Contains(over, "c0 -> c2;") {
		t.Errorf("overview lacks the CALL edges of Node 0")
	}
	one, err := view(compiler.DOTNode(1))
	if err != nil {
		t.Fatal(err)
	}
	blocks := map[string]bool{}
	for _, id := range regexp.MustCompile(`\bb\d+\b`).FindAllString(one, -1) {
		blocks[id] = true
	}
	if len(blocks) != 50 || !blocks["b50"] || !blocks["b99"] {
		t.Errorf("node 1 alone names %d blocks, want b50..b99", len(blocks))
	}
	if !strings.Contains(one, "c3 [") || !strings.Contains(one, "c4 [") {
		t.Errorf("node 1 alone lacks the boxes of the nodes it calls (3, 4)")
	}
	if _, err := view(compiler.DOTNode(40)); err == nil {
		t.Errorf("DOTNode(40) of 40 nodes: no error")
	}
}

// BenchmarkGraph2000 is the server's side of drawing the 2,000-block
// program's overview coloured by state.
func BenchmarkGraph2000(b *testing.B) {
	p := bigProgram(b)
	st := bigState(p)
	for b.Loop() {
		var out bytes.Buffer
		if err := compiler.DOT(p, &out, compiler.DOTOptions{Status: BlockStatus(st), View: compiler.DOTOverview()}); err != nil {
			b.Fatal(err)
		}
	}
}
