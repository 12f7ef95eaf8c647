package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchState is a state with n step entries, as a run that has done n steps.
func benchState(n int) map[string]any {
	steps := make(map[string]any, n)
	for i := range n {
		steps[fmt.Sprintf("Step%05d", i)] = map[string]any{"status": "completed", "exit_code": 0, "output": "ok", "duration": 0.4}
	}
	return map[string]any{"run_id": "bench", "status": "running", "steps": steps}
}

// BenchmarkCheckpoint persists one step of a run that already has 10 or
// 10,000 steps, with the default policy: the cost per step should not grow
// with the run (the snapshot is amortised over Policy.Every steps).
func BenchmarkCheckpoint(b *testing.B) {
	for _, n := range []int{10, 10000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			s := newStore(b)
			r, err := s.Create("bench")
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			state := benchState(n)
			if err := r.WriteSnapshot(state); err != nil {
				b.Fatal(err)
			}
			delta := map[string]any{"step": "Next", "status": "completed", "exit_code": 0}
			snapshot := func() any { return state }
			for b.Loop() {
				if err := r.Checkpoint(delta, snapshot, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAppendJournal appends to a journal that already holds 10 or
// 10,000 lines: the cost must not depend on the length.
func BenchmarkAppendJournal(b *testing.B) {
	for _, n := range []int{10, 10000} {
		b.Run(fmt.Sprintf("prior=%d", n), func(b *testing.B) {
			s := newStore(b)
			r, err := s.Create("bench")
			if err != nil {
				b.Fatal(err)
			}
			if err := r.WriteSnapshot(map[string]any{}); err != nil {
				b.Fatal(err)
			}
			r.Close()
			var j strings.Builder
			for i := 1; i <= n; i++ {
				fmt.Fprintf(&j, "{\"seq\":%d,\"delta\":{\"step\":\"S%d\",\"status\":\"completed\"}}\n", i, i)
			}
			if err := os.WriteFile(filepath.Join(s.RunsDir(), "bench", "journal.jsonl"), []byte(j.String()), 0o644); err != nil {
				b.Fatal(err)
			}
			r, err = s.Open("bench")
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			if err := r.Load(nil, func([]byte) error { return nil }); err != nil {
				b.Fatal(err)
			}
			delta := map[string]any{"step": "Next", "status": "completed"}
			for b.Loop() {
				if err := r.AppendJournal(delta); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWriteSnapshot writes the snapshot of a run with 10 or 10,000
// steps: the cost Checkpoint spreads over Policy.Every steps.
func BenchmarkWriteSnapshot(b *testing.B) {
	for _, n := range []int{10, 10000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			s := newStore(b)
			r, err := s.Create("bench")
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			state := benchState(n)
			for b.Loop() {
				if err := r.WriteSnapshot(state); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
