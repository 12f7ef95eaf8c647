package bench

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"smith/compiler"
	"smith/isa"
	"smith/vm"
	"smith/vm/store"
	"smith/workers"
	"smith/workers/confine"
	"smith/workers/step"
)

// compile compiles a generated document or stops the benchmark.
func compile(tb testing.TB, name string, src []byte, ctxKeys ...string) *isa.Program {
	tb.Helper()
	res, ds := compiler.Compile(name, src, compiler.Options{ContextKeys: ctxKeys})
	if ds.HasErrors() || res.Prog == nil {
		tb.Fatalf("Compile(%q): %v", name, ds)
	}
	return res.Prog
}

// runStored runs p in a fresh run under base the way smithvm run does:
// every event appended to events.jsonl, every delta checkpointed to the
// run's journal and snapshot, iteration records appended to their file.
func runStored(tb testing.TB, base string, p *isa.Program, runner step.Runner, ctxVals map[string]any, maxSteps int) {
	tb.Helper()
	dirs, err := confine.New(base)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.MkdirAll(dirs.Workspace, 0o755); err != nil {
		tb.Fatal(err)
	}
	st, err := store.New(base)
	if err != nil {
		tb.Fatal(err)
	}
	r, err := st.Create("bench")
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	var evErr error
	cfg := vm.Config{
		Registry: runner,
		Host:     workers.Local{Env: os.LookupEnv},
		MaxSteps: maxSteps,
		Env:      os.LookupEnv,
		Dirs:     dirs,
		RunRoot:  r.Root(),
		RunID:    r.ID(),
		Context:  ctxVals,
		Events: func(ev vm.Event) {
			if err := r.AppendEvent(ev); err != nil && evErr == nil {
				evErr = err
			}
		},
		Checkpoint: func(d *vm.Delta, s *vm.State) error { return r.Save(d, s) },
	}
	m, err := vm.New(p, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	final, err := m.Run(context.Background())
	if err != nil {
		tb.Fatalf("Run: %v", err)
	}
	if err := r.WriteSnapshot(final); err != nil {
		tb.Fatal(err)
	}
	if evErr != nil {
		tb.Fatal(evErr)
	}
}

// freshBase returns an empty project directory for one run; the previous
// one is removed outside the timer.
func freshBase(b *testing.B, parent string, i int) string {
	b.StopTimer()
	defer b.StartTimer()
	if i > 0 {
		os.RemoveAll(filepath.Join(parent, strconv.Itoa(i-1)))
	}
	dir := filepath.Join(parent, strconv.Itoa(i))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkRun1k compares running 1,000 `true` steps chained by goto with
// durable state (real processes, real store: what smithvm run does after
// compiling) against bash running the same 1,000 processes in a loop. The
// ratio smith/bash is the overhead of the VM and its persistence.
func BenchmarkRun1k(b *testing.B) {
	b.Run("smith", func(b *testing.B) {
		p := compile(b, "chain1k.yaml", TrueChain(chainSteps))
		parent := b.TempDir()
		i := 0
		for b.Loop() {
			base := freshBase(b, parent, i)
			runStored(b, base, p, workers.NewRegistry(os.LookupEnv), nil, 0)
			i++
		}
	})
	b.Run("bash", func(b *testing.B) {
		bash, err := exec.LookPath("bash")
		if err != nil {
			b.Skip("no bash")
		}
		for b.Loop() {
			cmd := exec.Command(bash, "-c", "for i in $(seq "+strconv.Itoa(chainSteps)+"); do /bin/true; done")
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("bash loop: %v: %s", err, out)
			}
		}
	})
}

// stampRunner succeeds at once and records when each step ran.
type stampRunner struct{ stamps []time.Time }

func (s *stampRunner) Run(ctx context.Context, req *step.Request) step.Result {
	s.stamps = append(s.stamps, time.Now())
	return step.Result{Signal: vm.SigSuccess, Output: "ok", Attempts: 1}
}

// BenchmarkFlatLoop10k runs a 10,000-iteration for_each (items from the
// context, as --context-file gives them) whose body is one step, with the
// real store persisting every step and a fake runner (no processes, so
// only the VM and persistence are measured). It reports the mean time per
// iteration over the first and the last 1,000 iterations and their ratio
// (target: at most 1.2).
func BenchmarkFlatLoop10k(b *testing.B) {
	const window = 1000
	p := compile(b, "loop10k.yaml", ForEach(), "items")
	var items struct {
		Items []any `json:"items"`
	}
	if err := json.Unmarshal(ContextFile(loopItems), &items); err != nil {
		b.Fatal(err)
	}
	parent := b.TempDir()
	var first, last time.Duration
	i := 0
	for b.Loop() {
		base := freshBase(b, parent, i)
		sr := &stampRunner{stamps: make([]time.Time, 0, loopItems)}
		runStored(b, base, p, sr, map[string]any{"items": items.Items}, 3*loopItems)
		if len(sr.stamps) != loopItems {
			b.Fatalf("ran %d iterations, want %d", len(sr.stamps), loopItems)
		}
		first += sr.stamps[window].Sub(sr.stamps[0])
		last += sr.stamps[loopItems-1].Sub(sr.stamps[loopItems-1-window])
		i++
	}
	b.ReportMetric(float64(first.Nanoseconds())/float64(b.N*window), "ns/iter-first1k")
	b.ReportMetric(float64(last.Nanoseconds())/float64(b.N*window), "ns/iter-last1k")
	b.ReportMetric(float64(last)/float64(first), "last/first")
}

// noopRunner is an internal worker that does nothing: every block succeeds
// at once, so only the VM (and its persistence) is measured.
type noopRunner struct{}

func (noopRunner) Run(ctx context.Context, req *step.Request) step.Result {
	return step.Result{Signal: vm.SigSuccess, Attempts: 1}
}

// vmBlocks is how many blocks the VM benchmarks run: one no-op block
// visited vmBlocks times by a goto cycle (the state stays the size of the
// workflow, as in a long real run).
const vmBlocks = 10000

// cycle returns a workflow of one `true` step that jumps to itself until
// its max_visits, n.
func cycle(n int) []byte {
	return []byte(`version: "1.0"
name: cycle
steps:
  - name: Body
    command: ["true"]
    max_visits: ` + strconv.Itoa(n) + `
    on: {success: {goto: Body}, failure: {error: "Body failed"}, max_visits: {end: true}}
`)
}

// BenchmarkVMPersisted runs 10,000 no-op blocks with the real
// store (journal, snapshots, events.jsonl) on tmpfs (/dev/shm when it
// exists), so the figure is the VM's and the encoding's, not the disk's.
// It reports blocks per second (issue 11, target 4: >= 200,000).
func BenchmarkVMPersisted(b *testing.B) {
	p := compile(b, "cycle10k.yaml", cycle(vmBlocks))
	parent := b.TempDir()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "smith-bench-"); err == nil {
			parent = dir
			defer os.RemoveAll(dir)
		}
	}
	i := 0
	var spent time.Duration
	for b.Loop() {
		base := freshBase(b, parent, i)
		t0 := time.Now()
		runStored(b, base, p, noopRunner{}, nil, 2*vmBlocks)
		spent += time.Since(t0)
		i++
	}
	b.ReportMetric(float64(vmBlocks*b.N)/spent.Seconds(), "blocks/s")
}

// BenchmarkVMNoPersistence runs the same chain with no Checkpoint and no
// Events: the interpreter alone. It reports instructions per second (each
// visit executes the cycle's instructions once; target 4: >= 5 million).
func BenchmarkVMNoPersistence(b *testing.B) {
	p := compile(b, "cycle10k.yaml", cycle(vmBlocks))
	dirs, err := confine.New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(dirs.Workspace, 0o755); err != nil {
		b.Fatal(err)
	}
	var spent time.Duration
	for b.Loop() {
		m, err := vm.New(p, vm.Config{Registry: noopRunner{}, Host: workers.Local{Env: os.LookupEnv}, MaxSteps: 2 * vmBlocks, Env: os.LookupEnv, Dirs: dirs})
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		if _, err := m.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
		spent += time.Since(t0)
	}
	const perVisit = 4 // VISIT, EXEC, DISPATCH, JUMP
	b.ReportMetric(float64(perVisit*vmBlocks*b.N)/spent.Seconds(), "instr/s")
	b.ReportMetric(float64(vmBlocks*b.N)/spent.Seconds(), "blocks/s")
}
