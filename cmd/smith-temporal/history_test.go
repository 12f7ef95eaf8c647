package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"smith/cmd/smith-temporal/engine"
	"smith/compiler"
)

// history returns every event of every run of workflow id (the chain of
// continue-as-new runs, first to last).
func history(t *testing.T, c client.Client, id string) []*historypb.HistoryEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var evs []*historypb.HistoryEvent
	runID := "" // the latest run first, then the one it continued
	for {
		var run []*historypb.HistoryEvent
		it := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			run = append(run, ev)
		}
		evs = append(run, evs...)
		if len(run) == 0 {
			return evs
		}
		runID = run[0].GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId()
		if runID == "" {
			return evs
		}
	}
}

// payloads returns the data of every payload in m, blobs resolved.
func payloads(t *testing.T, blobs string, m protoreflect.Message) [][]byte {
	var out [][]byte
	if p, ok := m.Interface().(*commonpb.Payload); ok {
		data := p.GetData()
		if string(p.GetMetadata()["encoding"]) == "binary/smith-blob" {
			b, err := engine.DirBlobs(blobs).Get(string(data))
			if err != nil {
				t.Fatal(err)
			}
			var orig commonpb.Payload
			if err := proto.Unmarshal(b, &orig); err != nil {
				t.Fatal(err)
			}
			data = orig.GetData()
		}
		return [][]byte{data}
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			for i := 0; i < v.List().Len(); i++ {
				out = append(out, payloads(t, blobs, v.List().Get(i).Message())...)
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				out = append(out, payloads(t, blobs, mv.Message())...)
				return true
			})
		case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
			out = append(out, payloads(t, blobs, v.Message())...)
		}
		return true
	})
	return out
}

// TestSecretsNeverInHistory: a step that prints a secret and a provider
// step whose prompt holds it; the whole history (inputs, results, the
// final state) never holds the value.
func TestSecretsNeverInHistory(t *testing.T) {
	const secret = "hunter2-very-secret"
	t.Setenv("SMITH_TEST_TOKEN", secret) // the workers inherit it
	f := newFleet(t)
	f.worker()
	file := write(t, filepath.Join(f.base, "s.yaml"), testWorkflow("secrets_never_in_history.yaml"))
	r := f.cli("run", file, "--run-id", "sec1", "--json")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	st := parseState(t, r.stdout)
	if got := st.Steps["Print"].Output; got != "token=***" {
		t.Errorf("Print output %q, want the secret masked", got)
	}
	evs := history(t, f.client(), "sec1")
	var all strings.Builder
	for _, ev := range evs {
		all.WriteString(protojson.Format(ev))
		for _, p := range payloads(t, f.blobs, ev.ProtoReflect()) {
			all.Write(p)
		}
	}
	if strings.Contains(all.String(), secret) {
		t.Fatal("the secret's value is in the history")
	}
	if !strings.Contains(all.String(), "smith-secret:SMITH_TEST_TOKEN") {
		t.Error("no placeholder in the history: did the step get its secret some other way?")
	}
}

// TestLargeValuesByReference: an output over 64 KiB and the program travel
// by reference: no payload in the history is over 64 KiB, the blob
// directory holds them, and the run sees the whole value.
func TestLargeValuesByReference(t *testing.T) {
	f := newFleet(t)
	f.worker()
	big := strings.Repeat("0123456789abcdef", 8<<10) // 128 KiB
	write(t, filepath.Join(f.base, "workspace", "big.txt"), big)
	file := write(t, filepath.Join(f.base, "big.yaml"), testWorkflow("large_values_by_reference.yaml"))
	r := f.cli("run", file, "--run-id", "big1", "--json")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	st := parseState(t, r.stdout)
	if got := st.Steps["Cat"].Lines; len(got) != 1 || len(got[0]) != len(big) {
		t.Errorf("Cat lines: %d lines, want the whole 128 KiB line", len(got))
	}
	for _, ev := range history(t, f.client(), "big1") {
		if n := len(protojson.Format(ev)); n > engine.BlobThreshold+16<<10 {
			t.Errorf("event %d (%s) is %d bytes: a large value entered the history", ev.GetEventId(), ev.GetEventType(), n)
		}
	}
	var blobs int
	filepath.WalkDir(f.blobs, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			blobs++
		}
		return nil
	})
	if blobs < 2 {
		t.Errorf("%d blobs, want the program and the large output at least", blobs)
	}
}

// TestLongLoopContinuesAsNew: a 10,000-iteration loop completes; the run
// continued as new before the history limits.
func TestLongLoopContinuesAsNew(t *testing.T) {
	if testing.Short() {
		t.Skip("a 10,000-step run")
	}
	f := newFleet(t)
	f.worker()
	src := write(t, filepath.Join(f.base, "long.yaml"), testWorkflow("long_loop_continues_as_new.yaml"))
	p, ds := compiler.LoadProgram(src, compiler.Options{})
	if p == nil {
		t.Fatalf("compile: %v", ds)
	}
	code, _ := p.MarshalBinary()
	ref, err := engine.DirBlobs(f.blobs).Put(code)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(client.Options{HostPort: f.addr, Namespace: f.ns, DataConverter: engine.DataConverter(engine.DirBlobs(f.blobs)), Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	in := engine.Input{RunID: "long1", WorkflowPath: src, ProgramRef: ref, MaxSteps: 30000}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "long1", TaskQueue: f.queue}, engine.WorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}
	var out engine.Output
	if err := run.Get(ctx, &out); err != nil {
		t.Fatal(err)
	}
	if out.ExitCode != 0 || out.State.Steps["Loop"].IterationsTotal != 10000 {
		t.Fatalf("exit %d (%s), %d iterations", out.ExitCode, out.Message, out.State.Steps["Loop"].IterationsTotal)
	}
	if out.Renewed == 0 {
		t.Error("the run never continued as new")
	}
	t.Logf("10,000 iterations, continued as new %d times", out.Renewed)
}
