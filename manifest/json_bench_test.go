package manifest_test

import (
	"testing"

	"smith/bench"
	"smith/manifest"
)

// BenchmarkParseJSON parses the benchmarks' 10,000-block manifest
// (bench.Manifest(200, 50), 2.8 MB), the document of
// BenchmarkCompileManifest10k.
func BenchmarkParseJSON(b *testing.B) {
	src := bench.Manifest(200, 50)
	b.ReportAllocs()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, ds := manifest.ParseJSON("manifest10k.json", src); len(ds) > 0 {
			b.Fatal(ds)
		}
	}
}
