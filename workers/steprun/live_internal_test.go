package steprun

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"smith/workers/proc"
	"smith/workers/step"
)

// TestLiveLines: Live.Lines adds each line of a block, and once the log
// passes liveMax it adds the stop line and wants no more.
func TestLiveLines(t *testing.T) {
	root := t.TempDir()
	now := func() time.Time { return time.Unix(0, 0) }
	l := OpenLive(&step.Request{RunRoot: root, Step: "S"}, now)
	defer l.Close()
	if !l.Lines(proc.Stdout, []byte("a\nb\n")) || !l.Lines(proc.Stderr, []byte("c\nd")) {
		t.Fatal("Lines wants no more lines after 4 short ones")
	}
	got := readLive(t, root)
	want := []string{"stdout a", "stdout b", "stderr c", "stderr d"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("live log = %q, want %q", got, want)
	}
	block := []byte(strings.Repeat(strings.Repeat("x", 99)+"\n", 1000))
	calls := 0
	for l.Lines(proc.Stdout, block) {
		calls++
		if calls > 2*liveMax/len(block) {
			t.Fatal("Lines still wants lines past liveMax")
		}
	}
	got = readLive(t, root)
	if last := got[len(got)-1]; !strings.HasPrefix(last, "stderr [smith: the live log of this step stops here") {
		t.Errorf("last line %q, want the stop line", last)
	}
	fi, err := os.Stat(filepath.Join(root, "logs", LiveFile))
	if err != nil || fi.Size() > liveMax+64<<10 {
		t.Errorf("live log size %v (%v), want at most about liveMax", fi.Size(), err)
	}
}

// readLive returns the live log's lines as "kind text".
func readLive(t *testing.T, root string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "logs", LiveFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l LiveLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, l.Kind+" "+l.Text)
	}
	return out
}

// TestAppendLiveLine: a live log line is the bytes json.Marshal writes for
// it, HTML escaping included, whatever its text.
func TestAppendLiveLine(t *testing.T) {
	for _, text := range []string{"", "plain", "<b>&\"\\</b>", "tab\tnl\ncr\r", "\x00\x1b[31m", "\xff\xfe", "\u2028\u2029", "é😀"} {
		for _, thread := range []string{"", "0", "b<r>"} {
			line := LiveLine{Time: "2026-11-26T17:00:00.123456789Z", Step: "A<b>", Thread: thread, Kind: LiveStdout, Text: text}
			want, err := json.Marshal(line)
			if err != nil {
				t.Fatal(err)
			}
			if got := appendLiveLine([]byte("x"), line); string(got) != "x"+string(want) {
				t.Errorf("appendLiveLine(%q, thread %q) = %s, want %s", text, thread, got[1:], want)
			}
		}
	}
}
