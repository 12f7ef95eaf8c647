package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/server/common/testing/freeport"
)

// Figures for docs/temporal.md (not pass/fail):
//
//	go test -run '^$' -bench . -benchtime 1x
//
// stepsYAML runs n command steps (true) in a loop.
func stepsYAML(n int) string {
	return fmt.Sprintf(testWorkflow("bench_steps.yaml"), n)
}

const benchSteps = 200

// BenchmarkStepOverhead: ms per command step on the local engine and on
// Temporal (one worker, the test server with the low-latency setting).
func BenchmarkStepOverhead(b *testing.B) {
	base := b.TempDir()
	file := write(b, filepath.Join(base, "steps.yaml"), stepsYAML(benchSteps))
	bin := smithvm(b)
	start := time.Now()
	cmd := exec.Command(bin, "run", file, "--base", base)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("smithvm: %v %s", err, out)
	}
	local := time.Since(start)

	f := newFleet(b)
	f.exe = buildMain(b)
	f.worker()
	tfile := write(b, filepath.Join(f.base, "steps.yaml"), stepsYAML(benchSteps))
	f.cli("run", tfile, "--run-id", "warm") // first run: worker and server warm-up
	start = time.Now()
	if r := f.cli("run", tfile, "--run-id", "bench"); r.code != 0 {
		b.Fatalf("temporal: %d %s", r.code, r.stderr)
	}
	tmp := time.Since(start)
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / (benchSteps + 2) }
	b.ReportMetric(per(local), "local-ms/step")
	b.ReportMetric(per(tmp), "temporal-ms/step")
	b.ReportMetric(per(tmp)-per(local), "overhead-ms/step")
}

// BenchmarkConcurrentRuns: 50 runs of 20 steps at once across 2 workers.
func BenchmarkConcurrentRuns(b *testing.B) {
	f := newFleet(b)
	f.exe = buildMain(b)
	f.worker()
	f.worker()
	file := write(b, filepath.Join(f.base, "steps.yaml"), stepsYAML(20))
	const runs = 50
	start := time.Now()
	var wg sync.WaitGroup
	codes := make([]int, runs)
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = f.cli("run", file, "--run-id", "c"+strconv.Itoa(i)).code
		}()
	}
	wg.Wait()
	d := time.Since(start)
	for i, c := range codes {
		if c != 0 {
			b.Fatalf("run %d: exit %d", i, c)
		}
	}
	b.ReportMetric(d.Seconds(), "s-for-50-runs")
	b.ReportMetric(float64(d.Microseconds())/1000/(runs*22), "ms/step-amortised")
}

// buildMain builds smith-temporal itself: workers of the size users run
// (the test binary holds a whole server and starts ~40 ms slower, which
// each step's child would pay).
func buildMain(b *testing.B) string {
	exe := filepath.Join(b.TempDir(), "smith-temporal")
	if out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput(); err != nil {
		b.Fatalf("build: %v %s", err, out)
	}
	return exe
}

// trivialYAML: 50 steps that start no process (the mock provider), the
// kind of block that a round trip per step costs most.
func trivialYAML() string {
	items := make([]string, 50)
	for i := range items {
		items[i] = strconv.Itoa(i + 1)
	}
	return fmt.Sprintf(testWorkflow("bench_trivial.yaml"), strings.Join(items, ", "))
}

// BenchmarkTrivialSteps: 20 runs of 50 steps that start no process, all
// at once, on smithvm and on smith-temporal dev (SQLite in a file) with
// one worker: the wall time of each and their ratio.
func BenchmarkTrivialSteps(b *testing.B) {
	const runs = 20
	base := b.TempDir()
	file := write(b, filepath.Join(base, "trivial.yaml"), trivialYAML())
	bin := smithvm(b)
	all := func(run func(i int) error) time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		errs := make([]error, runs)
		for i := range runs {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = run(i) }()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	local := all(func(i int) error {
		cmd := exec.Command(bin, "run", file, "--base", base, "--run-id", "l"+strconv.Itoa(i))
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("smithvm: %v %s", err, out)
		}
		return nil
	})
	s := &fileServer{t: b, db: filepath.Join(b.TempDir(), "dev.db"), port: freeport.MustGetFreePort(), ns: "bench"}
	s.start()
	b.Cleanup(s.kill)
	f := newFleetAt(b, s.addr(), s.ns)
	f.exe = buildMain(b)
	f.worker()
	tfile := write(b, filepath.Join(f.base, "trivial.yaml"), trivialYAML())
	f.cli("run", tfile, "--run-id", "warm") // worker and server warm-up
	tmp := all(func(i int) error {
		if r := f.cli("run", tfile, "--run-id", "t"+strconv.Itoa(i)); r.code != 0 {
			return fmt.Errorf("temporal: %d %s", r.code, r.stderr)
		}
		return nil
	})
	b.ReportMetric(local.Seconds(), "local-s")
	b.ReportMetric(tmp.Seconds(), "temporal-s")
	b.ReportMetric(tmp.Seconds()/local.Seconds(), "ratio")
}
