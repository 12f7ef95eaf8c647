package compiler

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"smith/compiler/ir"
	"smith/internal/goldenfile"
	"smith/isa"
	"smith/lang"
)

// dotManifest has every action kind of a manifest.
func dotManifest() *ir.Program {
	return prog(ir.Manifest, "Plan",
		node("Main", "Plan",
			aiStep("Plan", on("SUCCESS", ir.Jump, "Build"), on("SIGNAL:NEEDS_INFO", ir.Call, "Sub"),
				on("SIGNAL:ASK", ir.Call, "Sub", "Build"), on("FAILURE", ir.Jump, "Build"),
				on("VALIDATION_FAIL", ir.Jump, "Plan"), on("FAIL_DEFAULT", ir.Halt)),
			cmd("Build", on("SUCCESS", ir.End), on("FAILURE", ir.Fail, `build "broke"`),
				on("TIMEOUT", ir.Fail, `build "broke"`), on("FAIL_DEFAULT", ir.Halt))),
		node("Sub", "Work",
			cmd("Work", on("SUCCESS", ir.Return), on("FAIL_DEFAULT", ir.Fail, "sub failed"))),
	)
}

// dotLoop is a workflow with a for_each using every loop action.
func dotLoop() *ir.Program {
	return yamlProg(
		loop("L", []*ir.Block{
			cmd("x", on("SUCCESS", ir.Jump, "y"), on("FAILURE", ir.LoopFail), on("SIGNAL:STOP", ir.LoopBreak)),
			setCtx("y", on("SUCCESS", ir.LoopNext)),
		}, on("SUCCESS", ir.End), on("FAIL_DEFAULT", ir.Fail, "loop failed")),
	)
}

func dotText(t *testing.T, p *ir.Program, opt DOTOptions) string {
	t.Helper()
	var b bytes.Buffer
	if err := DOT(mustGenerate(t, p), &b, opt); err != nil {
		t.Fatalf("DOT(%s) error: %v", p.Name, err)
	}
	return b.String()
}

func TestDOT(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    func() *ir.Program
		opt  DOTOptions
		want string
	}{
		{
			name: "manifest",
			p:    dotManifest,
			want: `digraph t {
  subgraph cluster_0 {
    graph [
      label=Main
    ];

    // Node definitions.
    b0 [
      label=Plan
      shape=box
      style=rounded
    ];
    b1 [
      label=Build
      shape=box
    ];
  }
  subgraph cluster_1 {
    graph [
      label=Sub
    ];

    // Node definitions.
    b2 [
      label=Work
      shape=box
    ];
  }
  // Node definitions.
  b0;
  b1;
  b2;
  halt_0 [
    label=HALT
    shape=octagon
  ];
  end [
    label=END
    shape=doublecircle
  ];
  fail_0 [
    label="FAIL: build \"broke\""
    shape=doubleoctagon
  ];
  return [
    label=RETURN
    shape=cds
  ];
  fail_1 [
    label="FAIL: sub failed"
    shape=doubleoctagon
  ];

  // Edge definitions.
  b0 -> b1 [label="SIGNAL:SUCCESS\nSIGNAL:FAILURE"];
  b0 -> b1 [
    label=return
    style=dotted
  ];
  b0 -> b2 [
    label="SIGNAL:NEEDS_INFO\nSIGNAL:ASK"
    style=dashed
  ];
  b0 -> halt_0 [label=FAIL_DEFAULT];
  b1 -> end [label="SIGNAL:SUCCESS"];
  b1 -> fail_0 [label="SIGNAL:FAILURE\nSIGNAL:TIMEOUT"];
  b2 -> return [label="SIGNAL:SUCCESS"];
  b2 -> fail_1 [label=FAIL_DEFAULT];
}
`,
		},
		{
			name: "for_each",
			p:    dotLoop,
			opt:  DOTOptions{Status: map[string]string{"L": "running", "x": "completed", "y": "failed", "nope": "halted"}},
			want: `digraph t {
  subgraph cluster_0 {
    graph [
      label=t
    ];

    // Node definitions.
    b0 [
      label=L
      shape=box
      fillcolor=lightskyblue
      style=filled
    ];
    b1 [
      label=x
      shape=box
      fillcolor=palegreen
      style=filled
    ];
    b2 [
      label=y
      shape=box
      fillcolor=lightcoral
      style=filled
    ];
  }
  // Node definitions.
  b0;
  b1;
  b2;
  end [
    label=END
    shape=doublecircle
  ];
  fail_0 [
    label="FAIL: loop failed"
    shape=doubleoctagon
  ];

  // Edge definitions.
  b0 -> b1 [label=each];
  b0 -> end [label="SIGNAL:SUCCESS"];
  b0 -> fail_0 [label=FAIL_DEFAULT];
  b1 -> b0 [label="fail\nbreak"];
  b1 -> b2 [label="SIGNAL:SUCCESS"];
  b2 -> b0 [label=next];
}
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := dotText(t, tt.p(), tt.opt)
			if d := goldenfile.FirstDiff(got, tt.want); d != "" {
				t.Errorf("DOT(%s) differs at %s\ngot:\n%s", tt.name, d, got)
			}
			if again := dotText(t, tt.p(), tt.opt); again != got {
				t.Errorf("DOT(%s) is not deterministic", tt.name)
			}
		})
	}
}

func TestDOTStatusColors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, status, want string
	}{
		{"completed", "completed", "fillcolor=palegreen"},
		{"failed", "failed", "fillcolor=lightcoral"},
		{"skipped", "skipped", "fillcolor=lightgray"},
		{"running", "running", "fillcolor=lightskyblue"},
		{"halted", "halted", "fillcolor=orange"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := dotText(t, dotManifest(), DOTOptions{Status: map[string]string{"Plan": tt.status}})
			if !strings.Contains(got, tt.want) || !strings.Contains(got, `style="rounded,filled"`) {
				t.Errorf("DOT(Plan %s) has no %s with style \"rounded,filled\":\n%s", tt.status, tt.want, got)
			}
		})
	}
	if got := dotText(t, dotManifest(), DOTOptions{}); strings.Contains(got, "fillcolor") {
		t.Errorf("DOT(no status) = %s, want no fillcolor", got)
	}
}

func TestDOTBadProgram(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mangle func(p *isa.Program)
		want   string
	}{
		{"jump into a block", func(p *isa.Program) { p.Code[p.Tables[0].Entries[0].PC].A = 1 }, "goes to 0001, which starts no block"},
		{"dispatch missing", func(p *isa.Program) { p.Blocks[0].Dispatch = 0 }, `has no DISPATCH at 0000`},
		{"table out of range", func(p *isa.Program) { p.Code[p.Blocks[0].Dispatch].A = 99 }, "dispatches on table 99"},
		{"not an action", func(p *isa.Program) { p.Tables[0].Entries[0].PC = 0 }, "selects VISIT at 0000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := mustGenerate(t, dotManifest())
			tt.mangle(p)
			err := DOT(p, &bytes.Buffer{}, DOTOptions{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("DOT(%s) = %v, want an error containing %q", tt.name, err, tt.want)
			}
		})
	}
}

// TestDOTRenders feeds the output to Graphviz.
func TestDOTRenders(t *testing.T) {
	dotBin, err := exec.LookPath("dot")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("graphviz dot is not installed")
		}
		t.Skip("graphviz dot is not installed")
	}
	dir := t.TempDir()
	for _, tt := range []struct {
		name string
		p    *ir.Program
	}{
		{"manifest", dotManifest()},
		{"for_each", dotLoop()},
		{"big", bigManifest(100)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := filepath.Join(dir, tt.name+".dot")
			if err := os.WriteFile(in, []byte(dotText(t, tt.p, DOTOptions{Status: map[string]string{"B1": "completed"}})), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(dotBin, "-Tsvg", in).CombinedOutput()
			if err != nil {
				t.Fatalf("dot -Tsvg %s: %v\n%s", tt.name, err, out)
			}
			if !bytes.Contains(out, []byte("<svg")) {
				t.Errorf("dot -Tsvg %s printed no SVG:\n%s", tt.name, out)
			}
		})
	}
}

func ExampleDOT() {
	p := &ir.Program{Name: "hello", Format: ir.YAML, Entry: "Say", Nodes: []*ir.Node{{
		ID: "hello", Entry: "Say",
		Blocks: []*ir.Block{{
			ID: "Say", Kind: isa.KindCommand, Worker: "command",
			Transitions: []*ir.Transition{{Signal: lang.SigSuccess, Action: ir.End}},
		}},
	}}}
	prog, err := Generate(p)
	if err == nil {
		err = DOT(prog, os.Stdout, DOTOptions{Status: map[string]string{"Say": "completed"}})
	}
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// digraph hello {
	//   subgraph cluster_0 {
	//     graph [
	//       label=hello
	//     ];
	//
	//     // Node definitions.
	//     b0 [
	//       label=Say
	//       shape=box
	//       fillcolor=palegreen
	//       style=filled
	//     ];
	//   }
	//   // Node definitions.
	//   b0;
	//   end [
	//     label=END
	//     shape=doublecircle
	//   ];
	//
	//   // Edge definitions.
	//   b0 -> end [label="SIGNAL:SUCCESS"];
	// }
}
