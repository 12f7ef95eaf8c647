package agent

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"smith/workers/proc"
	"smith/workers/provider"
	"smith/workers/step"
	"smith/workers/steprun"
)

// TestLiveCutStopsActivity: an agent CLI's stream is turned into the live
// log's activity lines only while the live log takes them; once it is cut
// (its 8 MB view of the step), the stream's reader wants no more, so a
// CLI that streams hundreds of MB costs smithvm no parse of the rest.
func TestLiveCutStopsActivity(t *testing.T) {
	pv, ok := provider.Lookup(nil, "codex")
	if !ok || provider.NewActivityReader(pv, "") == nil {
		t.Fatal("codex preset has no activity reader")
	}
	root := t.TempDir()
	live := steprun.OpenLive(&step.Request{RunRoot: root, Step: "S"}, func() time.Time { return time.Unix(0, 0) })
	defer live.Close()
	var spec proc.Spec
	f := followLive(live, &spec, pv)
	defer f.finish()
	// A block: 1,000 agent messages of about 1 KB each.
	text := strings.Repeat("x", 1000)
	calls := 0
	for spec.Lines(proc.Stdout, messages(calls, text)) {
		calls++
		if calls > 100 { // 100 MB of stream, over 10 times the live log's bound
			t.Fatal("the activity reader still wants the stream after the live log was cut")
		}
	}
	if live.Wants() {
		t.Error("Lines stopped while the live log still takes lines")
	}
}

// messages is a block of 1,000 codex agent messages, ids unique to block.
func messages(block int, text string) []byte {
	var b strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&b, `{"type":"item.completed","item":{"id":"m%d-%d","type":"agent_message","text":%q}}`+"\n", block, i, text)
	}
	return []byte(b.String())
}
