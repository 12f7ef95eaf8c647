package bench

import (
	"testing"

	"smith/compiler"
)

// benchCompile does what `smithc build` does with src: compile it and
// encode the program.
func benchCompile(b *testing.B, name string, src []byte) {
	b.ReportAllocs()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		res, ds := compiler.Compile(name, src, compiler.Options{})
		if ds.HasErrors() || res.Prog == nil {
			b.Fatalf("Compile(%q): %v", name, ds)
		}
		if _, err := res.Prog.MarshalBinary(); err != nil {
			b.Fatalf("MarshalBinary: %v", err)
		}
	}
}

// BenchmarkCompileManifest10k compiles and encodes a 10,000-block manifest
// (200 nodes of 50 blocks). Target: under 300 ms and 200 MB peak.
func BenchmarkCompileManifest10k(b *testing.B) {
	benchCompile(b, "manifest10k.json", Manifest(manifestNodes, manifestPerNode))
}

// BenchmarkCompileYAML5k compiles and encodes a 5,000-step YAML workflow.
// Target: under 300 ms and 200 MB peak.
func BenchmarkCompileYAML5k(b *testing.B) {
	benchCompile(b, "workflow5k.yaml", Workflow(workflowSteps))
}

// BenchmarkCheckManifest10k does what `smithc check` does with the
// 10,000-block manifest: every check, no code (Options.ChecksOnly).
func BenchmarkCheckManifest10k(b *testing.B) {
	src := Manifest(manifestNodes, manifestPerNode)
	b.ReportAllocs()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		_, ds := compiler.Compile("manifest10k.json", src, compiler.Options{ChecksOnly: true})
		if ds.HasErrors() {
			b.Fatalf("Compile: %v", ds)
		}
	}
}
