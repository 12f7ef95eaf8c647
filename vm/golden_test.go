package vm_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"smith/internal/goldenfile"
	"smith/isa"
	"smith/vm"
	"smith/workers/step"
)

var update = flag.Bool("update", false, "rewrite .golden files in testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name), got, *update, goldenfile.Regen(t, "vm"))
}

// TestGolden runs hand-built scenarios and compares their events.jsonl
// lines and final state with testdata/NAME.events.golden and
// NAME.state.golden. (Scenarios from NAME.yaml + NAME.script join these
// once the compiler can be used from this package's tests.)
func TestGolden(t *testing.T) {
	scenarios := []struct {
		name   string
		prog   func(t *testing.T) *isa.Program
		script map[string][]step.Result
	}{
		{"linear", func(t *testing.T) *isa.Program {
			return build(t, N{ID: "main", Blocks: []B{
				{ID: "Prep", Step: cmd("make", "${context.target}"), On: ok},
				{ID: "Report", When: &isa.Cond{Op: isa.CondStepOK, Name: "Prep"}, On: append(ok, [2]string{vm.SigSkipped, "next"})},
			}})
		}, map[string][]step.Result{"Prep": {{Signal: vm.SigSuccess, Output: "built", Lines: []string{"built"}, Duration: 400_000_000, Attempts: 1}}}},
		{"loop", func(t *testing.T) *isa.Program {
			return build(t, N{ID: "main", Blocks: []B{
				{ID: "Files", Items: list(str("a.txt"), str("b.txt")), As: "file", Body: []B{
					{ID: "Count", Step: cmd("wc", "-l", "${file}"), On: [][2]string{{vm.SigSuccess, "continue"}, {vm.SigFailure, "break"}}},
				}, On: [][2]string{{vm.SigSuccess, "end"}, {vm.SigFailure, "fail:loop failed"}}},
			}})
		}, map[string][]step.Result{"Count": {{Signal: vm.SigSuccess, Output: "3 a.txt", Attempts: 1}, fail(1)}}},
		{"halt", func(t *testing.T) *isa.Program {
			p := build(t, N{ID: "Main", Blocks: []B{
				{ID: "Block:Review", On: [][2]string{{vm.SigSuccess, "end"}}, Default: "halt"},
			}})
			p.Format = "manifest" // a custom signal falls back to SIGNAL:FAIL_DEFAULT
			return p
		}, map[string][]step.Result{"Block:Review": {{Signal: "SIGNAL:NEEDS_CLARIFICATION", Segments: []step.Segment{seg("s1", "which API?")}}}}},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			p := sc.prog(t)
			p.Context = &isa.TValue{Kind: isa.TMap, Map: []isa.Field{{Key: "target", Val: str("all")}}}
			r := run(t, p, &fake{script: sc.script}, nil)
			var ev bytes.Buffer
			for _, e := range r.events {
				b, err := json.Marshal(e)
				if err != nil {
					t.Fatal(err)
				}
				ev.Write(b)
				ev.WriteByte('\n')
			}
			golden(t, sc.name+".events.golden", ev.Bytes())
			st := jsonOf(t, r.st)
			st = strings.ReplaceAll(st, r.st.ProgramHash, "HASH")
			golden(t, sc.name+".state.golden", []byte(st+"\n"))
		})
	}
}
