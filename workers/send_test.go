package workers

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"smith/isa"
	"smith/lang"
	"smith/workers/step"
	"smith/workers/text"
)

// TestSendStreams: a big file is sent file to file, masked on the way,
// without holding it in memory; sending the same name again never
// overwrites the message (the inbox refuses the name), while a send run
// again after a crash replaces its own copy and is not delivered twice
// once consumed.
func TestSendStreams(t *testing.T) {
	f := newFixture(t)
	const size = 64 << 20
	big := filepath.Join(f.Dirs.Workspace, "big.bin")
	if err := os.MkdirAll(filepath.Dir(big), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big, []byte(strings.Repeat("abcdefgh s3cret ", size/16)), 0o644); err != nil {
		t.Fatal(err)
	}
	r := f.Req(isa.KindSend, "Big")
	r.Send = &step.Send{To: "eng", Inbox: "agents/eng/inbox", Seq: 1, File: "big.bin"}
	r.Mask = text.NewMasker([]string{"s3cret"})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res := f.reg.Run(context.Background(), r)
	runtime.ReadMemStats(&after)
	if res.Signal != lang.SigSuccess {
		t.Fatalf("send: %v", res.Err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > size/4 {
		t.Errorf("sending a %d MiB file allocated %d MiB: it is not streamed", size>>20, grew>>20)
	}
	fi, err := os.Stat(filepath.Join(f.Dirs.Workspace, res.Output))
	if err != nil || fi.Size() != size/16*13 {
		t.Errorf("delivered %v bytes (%v), want %d (each secret masked as ***)", fi, err, size/16*13)
	}

	again := f.reg.Run(context.Background(), r)
	if again.Signal == lang.SigSuccess || !strings.Contains(again.Err.Error(), "already holds") {
		t.Errorf("a second send of the same name = %s, %v; want a refusal, never an overwrite", again.Signal, again.Err)
	}
	r.Send.Again = true
	if res := f.reg.Run(context.Background(), r); res.Signal != lang.SigSuccess {
		t.Errorf("a send run again after a crash: %v", res.Err)
	}
	if err := os.MkdirAll(filepath.Join(f.Dirs.Workspace, "agents/eng/processed"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(f.Dirs.Workspace, res.Output), filepath.Join(f.Dirs.Workspace, "agents/eng/processed", filepath.Base(res.Output))); err != nil {
		t.Fatal(err)
	}
	if res := f.reg.Run(context.Background(), r); res.Signal != lang.SigSuccess {
		t.Errorf("a consumed message sent again after a crash: %v", res.Err)
	}
	if _, err := os.Stat(filepath.Join(f.Dirs.Workspace, res.Output)); !os.IsNotExist(err) {
		t.Errorf("a consumed message was delivered again: %v", err)
	}
}
