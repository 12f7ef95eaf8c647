package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/encoding/protojson"

	"smith/cmd/smith-temporal/engine"
	"smith/workers/confine"
)

var update = flag.Bool("update", false, "record the histories of testdata/histories that are missing (delete one to record it again)")

// The recorded runs: acceptance workflows whose workflow code reads no
// file (no file_exists, no ARTIFACT layer), so that replaying them needs
// only their program, kept in testdata/histories/blobs.
var recorded = []string{"feature", "loops", "call", "halt", "team"}

// generation names the histories recorded by the current code:
// NAME.truth.json (the memo, local activities: the smith-truth version);
// NAME.json were recorded before it and stay, proving that runs in flight
// from older workers still replay.
const generation = "truth"

// TestReplayRecordedHistories replays histories recorded on a real server
// against the current workflow code: a change to the VM or the workflow
// that would break runs in flight (a different sequence of activities,
// signals or continue-as-new) fails here. `go test -run
// TestReplayRecordedHistories -update` records the missing ones: delete a
// history to record it again, on purpose (the others stay, and go on
// proving that runs recorded by older code still replay).
func TestReplayRecordedHistories(t *testing.T) {
	dir := filepath.Join("testdata", "histories")
	blobs, err := filepath.Abs(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		record(t, dir, blobs)
	}
	var files []string
	for _, name := range recorded {
		more, _ := filepath.Glob(filepath.Join(dir, name+".*json"))
		files = append(files, more...)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(name, func(t *testing.T) {
			r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{DataConverter: engine.DataConverter(engine.DirBlobs(blobs))})
			if err != nil {
				t.Fatal(err)
			}
			dirs, err := confine.New(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			engine.RegisterWorkflow(r, &engine.Workflows{Dirs: dirs, Blobs: engine.DirBlobs(blobs)})
			if err := r.ReplayWorkflowHistoryFromJSONFile(nil, file); err != nil {
				t.Fatalf("replay of a recorded %s run: %v", name, err)
			}
		})
	}
}

// record runs the parity cases named in recorded on the test server and
// writes their histories.
func record(t *testing.T, dir, blobs string) {
	f := newFleet(t)
	f.blobs = blobs
	f.worker()
	for _, c := range parityCases {
		found := false
		for _, n := range recorded {
			found = found || n == c.name
		}
		path := filepath.Join(dir, c.name+"."+generation+".json")
		if _, err := os.Stat(path); !found || err == nil {
			continue
		}
		id := "replay-" + c.name
		c.temporalRun(t, f, id)
		evs := history(t, f.client(), id)
		b, err := protojson.MarshalOptions{Indent: " "}.Marshal(&historypb.History{Events: evs})
		if err != nil {
			t.Fatal(err)
		}
		write(t, path, string(b))
	}
}
