package bench

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"smith/compiler"
	"smith/isa"
)

// gendir, when set, makes TestGenerate also write the generated documents
// there (bench/run.sh uses it to get the files it times).
var gendir = flag.String("gendir", "", "also write the generated documents to `DIR`")

// Sizes of the generated documents (the issue targets).
const (
	manifestNodes   = 200
	manifestPerNode = 50
	workflowSteps   = 5000
	chainSteps      = 1000
	loopItems       = 10000
)

// doc is one generated document.
type doc struct {
	name   string // file name
	src    []byte
	blocks int      // blocks/steps the compiled program must hold
	ctx    []string // context keys given with --context-file
	ops    []isa.Op // opcodes the program must contain (the constructs used)
}

func docs() []doc {
	return []doc{
		{name: "manifest10k.json", src: Manifest(manifestNodes, manifestPerNode), blocks: manifestNodes * manifestPerNode,
			ops: []isa.Op{isa.OpJump, isa.OpCall, isa.OpReturn, isa.OpHaltAndFlag, isa.OpEnd, isa.OpFail, isa.OpVisit}},
		{name: "workflow5k.yaml", src: Workflow(workflowSteps), blocks: workflowSteps,
			ops: []isa.Op{isa.OpJump, isa.OpWhen, isa.OpLoopBegin, isa.OpLoopNext, isa.OpSetContext, isa.OpFail}},
		{name: "chain1k.yaml", src: TrueChain(chainSteps), blocks: chainSteps, ops: []isa.Op{isa.OpExec, isa.OpEnd}},
		{name: "loop10k.yaml", src: ForEach(), blocks: 2, ctx: []string{"items"}, ops: []isa.Op{isa.OpLoopBegin, isa.OpLoopNext}},
	}
}

// TestGenerate checks that every generated document compiles with no
// diagnostic at all and has the intended number of blocks, so the
// benchmarks measure what they claim to.
func TestGenerate(t *testing.T) {
	for _, d := range docs() {
		t.Run(d.name, func(t *testing.T) {
			res, ds := compiler.Compile(d.name, d.src, compiler.Options{ContextKeys: d.ctx})
			if len(ds) > 0 {
				n := min(len(ds), 5)
				t.Fatalf("Compile(%q) = %d diagnostics, want none; first: %v", d.name, len(ds), ds[:n])
			}
			if res.Prog == nil {
				t.Fatalf("Compile(%q) gave no program", d.name)
			}
			if got := len(res.Prog.Blocks); got != d.blocks {
				t.Errorf("Compile(%q): %d blocks, want %d", d.name, got, d.blocks)
			}
			have := map[isa.Op]bool{}
			for _, in := range res.Prog.Code {
				have[in.Op] = true
			}
			for _, op := range d.ops {
				if !have[op] {
					t.Errorf("Compile(%q): program has no %v, want at least one", d.name, op)
				}
			}
			if *gendir == "" {
				return
			}
			if err := os.WriteFile(filepath.Join(*gendir, d.name), d.src, 0o644); err != nil {
				t.Fatal(err)
			}
		})
	}
	if *gendir != "" {
		if err := os.WriteFile(filepath.Join(*gendir, "items10k.json"), ContextFile(loopItems), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
