package manifest_test

import (
	"syscall"
	"testing"
	"time"

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

// BenchmarkLoadManifest10k loads (parse, validate, decode) the
// benchmarks' 10,000-block manifest, as smithc check does (target 5a).
func BenchmarkLoadManifest10k(b *testing.B) {
	src := bench.Manifest(200, 50)
	b.ReportAllocs()
	b.SetBytes(int64(len(src)))
	start := cpuTime()
	for b.Loop() {
		if mf, ds := manifest.LoadManifest("manifest10k.json", src); mf == nil || len(ds) > 0 {
			b.Fatal(ds)
		}
	}
	reportCPU(b, start)
}

// BenchmarkDecodeManifest10k decodes the parsed tree of the 10,000-block
// manifest: the decoder alone.
func BenchmarkDecodeManifest10k(b *testing.B) {
	src := bench.Manifest(200, 50)
	v, ds := manifest.ParseJSON("manifest10k.json", src)
	if len(ds) > 0 {
		b.Fatal(ds)
	}
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		if mf := manifest.DecodeManifest("manifest10k.json", v); len(mf.Nodes) != 200 {
			b.Fatalf("decoded %d nodes, want 200", len(mf.Nodes))
		}
	}
	reportCPU(b, start)
}

// cpuTime is the CPU time the process has used so far, user and system,
// all threads (the garbage collector's too).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per iteration since start as cpu-ns/op:
// on a loaded machine ns/op also counts the waits for a core.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}
