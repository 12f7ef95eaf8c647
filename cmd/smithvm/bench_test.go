package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkRuns50InOneProcess measures bench/run.sh's target 9b (50
// concurrent 10-step runs in one BASE) as one process serving all the
// runs would do it: 50 'smithvm run's at once in this process, no start-up
// and no exit, against the target's bash (50 concurrent loops of ten
// /bin/true), alternated. It reports both times and their ratio: what a
// daemon serving the runs could at best reach (docs/performance.md).
func BenchmarkRuns50InOneProcess(b *testing.B) {
	dir := b.TempDir()
	var src strings.Builder
	src.WriteString("version: \"1.0\"\nname: chain\nsteps:\n")
	for i := range 10 {
		next := fmt.Sprintf("{goto: T%d}", i+1)
		if i == 9 {
			next = "{end: true}"
		}
		fmt.Fprintf(&src, "  - name: T%d\n    command: [\"true\"]\n    on: {success: %s, failure: {error: \"T%d failed\"}}\n", i, next, i)
	}
	wf := filepath.Join(dir, "chain10.yaml")
	if err := os.WriteFile(wf, []byte(src.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	const bash50 = "for i in $(seq 50); do (for j in $(seq 10); do /bin/true; done) & done; wait"
	var smith, bash time.Duration
	n := 0
	for b.Loop() {
		b.StopTimer()
		base := filepath.Join(dir, fmt.Sprint("base", n))
		if err := os.Mkdir(base, 0o755); err != nil {
			b.Fatal(err)
		}
		n++
		b.StartTimer()
		t0 := time.Now()
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				if st := run([]string{"run", wf, "--base", base}, nil, io.Discard, io.Discard); st != 0 {
					b.Errorf("smithvm run: exit status %d", st)
				}
			})
		}
		wg.Wait()
		smith += time.Since(t0)
		b.StopTimer()
		t0 = time.Now()
		if out, err := exec.Command("bash", "-c", bash50).CombinedOutput(); err != nil {
			b.Fatalf("bash: %v: %s", err, out)
		}
		bash += time.Since(t0)
		b.StartTimer()
	}
	b.ReportMetric(float64(smith.Milliseconds())/float64(n), "smith-ms")
	b.ReportMetric(float64(bash.Milliseconds())/float64(n), "bash-ms")
	b.ReportMetric(float64(smith)/float64(bash), "smith/bash")
}
