package agent_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	"smith/internal/testchild"
	"smith/isa"
	"smith/workers/agent"
	"smith/workers/provider"
	"smith/workers/steprun"
	"smith/workers/text"
)

// bigStream is the helper mode "bigstream CLI MB": the stream of events
// CLI (claude, gemini or codex) prints for an agent whose commands
// printed MB MiB (64 KiB of output an event), around the short reply
// "done: ok" (claude: 15 tokens; gemini and codex: 34).
func bigStream(args []string) int {
	if len(args) != 2 {
		return 98
	}
	mb, _ := strconv.Atoi(args[1])
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	defer w.Flush()
	chunk := string(testchild.Pattern(64 << 10))
	events := mb * 16
	switch args[0] {
	case "codex":
		fmt.Fprintln(w, `{"type":"thread.started","thread_id":"t-big"}`)
		fmt.Fprintln(w, `{"type":"turn.started"}`)
		for i := range events {
			fmt.Fprintf(w, `{"type":"item.started","item":{"id":"item_%d","type":"command_execution","command":"bash -lc 'cat big.log'","aggregated_output":"","exit_code":null,"status":"in_progress"}}`+"\n", i)
			fmt.Fprintf(w, `{"type":"item.completed","item":{"id":"item_%d","type":"command_execution","command":"bash -lc 'cat big.log'","aggregated_output":"%s","exit_code":0,"status":"completed"}}`+"\n", i, chunk)
		}
		fmt.Fprintln(w, `{"type":"item.completed","item":{"id":"item_last","type":"agent_message","text":"done: ok"}}`)
		fmt.Fprintln(w, `{"type":"turn.completed","usage":{"input_tokens":30,"cached_input_tokens":20,"output_tokens":4}}`)
	case "claude":
		fmt.Fprintln(w, `{"type":"system","subtype":"init","session_id":"s-big"}`)
		for i := range events {
			fmt.Fprintf(w, `{"type":"assistant","message":{"content":[{"type":"tool_use","id":"tu_%d","name":"Bash","input":{"command":"cat big.log"}}]},"session_id":"s-big"}`+"\n", i)
			fmt.Fprintf(w, `{"type":"user","message":{"role":"user","content":[{"tool_use_id":"tu_%d","type":"tool_result","content":"%s"}]},"session_id":"s-big"}`+"\n", i, chunk)
		}
		fmt.Fprintln(w, `{"type":"result","subtype":"success","is_error":false,"result":"done: ok","session_id":"s-big","usage":{"input_tokens":10,"output_tokens":5}}`)
	case "gemini":
		fmt.Fprintln(w, `{"type":"init","session_id":"g-big","model":"m"}`)
		for i := range events {
			fmt.Fprintf(w, `{"type":"tool_use","tool_name":"run_shell_command","tool_id":"c%d","parameters":{"command":"cat big.log"}}`+"\n", i)
			fmt.Fprintf(w, `{"type":"tool_result","tool_id":"c%d","status":"success","output":"%s"}`+"\n", i, chunk)
		}
		fmt.Fprintln(w, `{"type":"message","role":"assistant","content":"done: ","delta":true}`)
		fmt.Fprintln(w, `{"type":"message","role":"assistant","content":"ok","delta":true}`)
		fmt.Fprintln(w, `{"type":"result","status":"success","stats":{"total_tokens":34}}`)
	case "codex-stderr":
		// A failed call whose stderr is MB MiB of log lines, its reason
		// on the last one.
		fmt.Fprintln(w, `{"type":"thread.started","thread_id":"t-big"}`)
		fmt.Fprintln(w, `{"type":"turn.started"}`)
		ew := bufio.NewWriterSize(os.Stderr, 1<<20)
		line := "2026-11-27T04:00:00.000000Z  WARN codex_core::exec: " + chunk[:200] + "\n"
		for range (mb << 20) / len(line) {
			ew.WriteString(line)
		}
		ew.WriteString("ERROR: unexpected status 429 Too Many Requests: slow down\n")
		ew.Flush()
		w.Flush()
		return 1
	default:
		return 98
	}
	return 0
}

// bigReplyText is the reply of helper mode "bigreply": MB MiB of lines
// "reply line NNNNNNN abc...\n", then "END OF REPLY".
func bigReplyText(mb int) string {
	var b strings.Builder
	body := string(testchild.Pattern(100))
	for i := 0; b.Len() < mb<<20; i++ {
		fmt.Fprintf(&b, "reply line %07d %s\n", i, body)
	}
	b.WriteString("END OF REPLY")
	return b.String()
}

// bigReply is the helper mode "bigreply CLI MB": the stream of events CLI
// (claude, gemini or codex) prints for a reply of MB MiB (bigReplyText):
// claude and codex in one event, gemini in deltas of 64 KiB.
func bigReply(args []string) int {
	if len(args) != 2 {
		return 98
	}
	mb, _ := strconv.Atoi(args[1])
	text := bigReplyText(mb)
	quoted, _ := json.Marshal(text)
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	defer w.Flush()
	switch args[0] {
	case "codex":
		fmt.Fprintln(w, `{"type":"thread.started","thread_id":"t-big"}`)
		fmt.Fprintln(w, `{"type":"turn.started"}`)
		fmt.Fprintf(w, `{"type":"item.completed","item":{"id":"item_last","type":"agent_message","text":%s}}`+"\n", quoted)
		fmt.Fprintln(w, `{"type":"turn.completed","usage":{"input_tokens":30,"cached_input_tokens":20,"output_tokens":4}}`)
	case "claude":
		fmt.Fprintln(w, `{"type":"system","subtype":"init","session_id":"s-big"}`)
		fmt.Fprintf(w, `{"type":"result","subtype":"success","is_error":false,"result":%s,"session_id":"s-big","usage":{"input_tokens":10,"output_tokens":5}}`+"\n", quoted)
	case "claude-padded":
		// MB is KiB here: a shorter reply in a line over 1 MiB.
		text = strings.Repeat("short line\n", mb<<10/11)
		quoted, _ = json.Marshal(text)
		fmt.Fprintf(w, `{"type":"result","subtype":"success","is_error":false,"result":%s,"pad":"%s","session_id":"s-big","usage":{"input_tokens":10,"output_tokens":5}}`+"\n", quoted, strings.Repeat("p", 1100<<10))
	case "gemini":
		fmt.Fprintln(w, `{"type":"init","session_id":"g-big","model":"m"}`)
		for len(text) > 0 {
			n := min(len(text), 64<<10)
			q, _ := json.Marshal(text[:n])
			fmt.Fprintf(w, `{"type":"message","role":"assistant","content":%s,"delta":true}`+"\n", q)
			text = text[n:]
		}
		fmt.Fprintln(w, `{"type":"result","status":"success","stats":{"total_tokens":34}}`)
	default:
		return 98
	}
	return 0
}

// TestBigReplyMemory: a reply far past the 1 MiB kept in memory (60 MiB
// of the model's text) reaches the step's output (its first MiB,
// truncated), the spill and output_file whole, while the heap in use
// grows by far less than the reply: the reply is spilled as a command's
// stdout is, not held whole.
func TestBigReplyMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 180 MB")
	}
	const mb = 60
	for _, cli := range []string{"claude", "codex", "gemini"} {
		t.Run(cli, func(t *testing.T) { // not parallel: the heap is the process's
			f := newFixture(t)
			r := f.Req(isa.KindProvider, "Ask")
			r.Providers = []string{cli}
			r.ProviderDefs = []provider.Def{fake(t, cli, "bigreply", cli, strconv.Itoa(mb))}
			r.Prompt = "question"
			r.Timeout = 10 * time.Minute // a loaded machine; no timing is checked
			r.OutputFile = "reply.txt"
			peak := watchHeap()
			got := f.run.Run(context.Background(), r)
			grew := peak()
			t.Logf("%s: a %d MiB reply: the live heap grew by %.1f MiB at most", cli, mb, float64(grew)/(1<<20))
			if got.Err != nil || got.ExitCode != 0 {
				t.Fatalf("Run = exit %d err %v, want 0 <nil>", got.ExitCode, got.Err)
			}
			if !got.Truncated || !strings.HasPrefix(got.Output, "reply line 0000000 ") || len(got.Output) > 1<<20 {
				t.Errorf("Output is %d bytes starting %q, truncated %v; want the reply's first MiB at most, truncated", len(got.Output), short(got.Output), got.Truncated)
			}
			// Made only now: a live 60 MiB string would double the heap the
			// collector lets grow while the step runs.
			if c, want := f.Read("artifacts/Ask/reply.txt"), bigReplyText(mb); c != want {
				t.Errorf("output_file has %d bytes (%q), want the %d-byte reply", len(c), short(c), len(want))
			}
			if got.SpillStdout == "" {
				t.Errorf("no spill, want one holding the whole reply")
			}
			if limit := int64(64 << 20); grew > limit { // generous: the live heap grew 6 to 35 MiB for 60 MiB (321 to 436 MiB in use when the reply was read whole)
				t.Errorf("the live heap grew by %d MiB for a %d MiB reply, want at most %d MiB: the reply was held in memory", grew>>20, mb, limit>>20)
			}
		})
	}
}

// TestLongLineShortReply: a reply of 500 KiB in a line over 1 MiB is
// decoded from the stdout yet kept whole in memory: its lines capture is
// whole, not cut at the in-memory cap.
func TestLongLineShortReply(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := f.Req(isa.KindProvider, "Ask")
	r.Providers = []string{"claude"}
	r.ProviderDefs = []provider.Def{fake(t, "claude", "bigreply", "claude-padded", "500")}
	r.Prompt = "question"
	r.Timeout = 10 * time.Minute
	r.OutputCapture = "lines"
	got := f.run.Run(context.Background(), r)
	want := strings.Repeat("short line\n", 500<<10/11)
	if got.Err != nil || got.ExitCode != 0 || got.Output != strings.TrimRight(want, "\n") {
		t.Fatalf("Run = exit %d err %v output %d bytes %q, want the %d-byte reply", got.ExitCode, got.Err, len(got.Output), short(got.Output), len(want))
	}
	if got.LinesTruncated || len(got.Lines) != 500<<10/11 {
		t.Errorf("lines: %d, truncated %v; want %d, whole", len(got.Lines), got.LinesTruncated, 500<<10/11)
	}
}

// TestBigReplyMasked: a reply too long to hold is masked as it is
// decoded, in output, output_file and a writer's kept reply alike (a
// guard: the reply held whole was masked whole).
func TestBigReplyMasked(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := f.Req(isa.KindProvider, "Ask")
	r.Providers = []string{"claude"}
	r.ProviderDefs = []provider.Def{fake(t, "claude", "bigreply", "claude", "3")}
	r.Prompt = "question"
	r.Timeout = 10 * time.Minute
	r.OutputFile = "reply.txt"
	r.KeepReply = true
	secrets := []string{"reply line 0000000", "reply line 0002000", "reply line 0020000"}
	r.Mask = text.NewMasker(secrets)
	got := f.run.Run(context.Background(), r)
	if got.Err != nil || got.ExitCode != 0 || !got.Truncated {
		t.Fatalf("Run = exit %d err %v truncated %v, want 0 <nil> true", got.ExitCode, got.Err, got.Truncated)
	}
	kept, err := os.ReadFile(steprun.ReplyPath(r.RunRoot, r.CallKey()))
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]string{"output": got.Output, "output_file": f.Read("artifacts/Ask/reply.txt"), "kept reply": string(kept)} {
		for _, sec := range secrets[:2] {
			if strings.Contains(s, sec) {
				t.Errorf("%s holds the secret %q", name, sec)
			}
		}
		if name != "output" && (strings.Contains(s, secrets[2]) || !strings.HasSuffix(s, "END OF REPLY") || !strings.HasPrefix(s, "*** ")) {
			t.Errorf("%s (%d bytes, starting %q) is not the whole reply, masked", name, len(s), short(s))
		}
	}
}

// TestBigStreamReply: the reply of a preset whose stream of events is
// hundreds of MB (the output of the agent's commands) around a short
// final message is read from the stream as it goes, not from a copy of it
// in memory: the reply and its tokens are right, and the call allocates a
// few MB, not the stream's size (it read the spill back whole, then a
// second copy of it as a string: twice the stream).
func TestBigStreamReply(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 200 MB")
	}
	tests := []struct {
		cli    string
		mb     int
		tokens int
	}{
		{"codex", 200, 34}, // its stdout is a pipe, spilled to a file
		{"gemini", 64, 34}, // its stdout is a file (StdoutFile)
		{"claude", 64, 15},
	}
	for _, tt := range tests {
		t.Run(tt.cli, func(t *testing.T) { // not parallel: the allocations are the process's
			f := newFixture(t)
			r := f.Req(isa.KindProvider, "Ask")
			r.Providers = []string{tt.cli}
			r.ProviderDefs = []provider.Def{fake(t, tt.cli, "bigstream", tt.cli, strconv.Itoa(tt.mb))}
			r.Prompt = "question"
			r.Timeout = 10 * time.Minute // a loaded machine; no timing is checked
			r.OutputFile = "reply.txt"
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			peak := watchHeap()
			got := f.run.Run(context.Background(), r)
			grew := peak()
			runtime.ReadMemStats(&after)
			if got.Err != nil || got.ExitCode != 0 || got.Output != "done: ok" || got.Tokens != tt.tokens {
				t.Fatalf("Run = exit %d err %v output %q tokens %d, want 0 <nil> %q %d", got.ExitCode, got.Err, short(got.Output), got.Tokens, "done: ok", tt.tokens)
			}
			if c := f.Read("artifacts/Ask/reply.txt"); c != "done: ok" {
				t.Errorf("output_file = %q, want %q", short(c), "done: ok")
			}
			if !got.Truncated || got.SpillStdout == "" {
				t.Errorf("Truncated %v SpillStdout %q, want the raw stream spilled", got.Truncated, got.SpillStdout)
			} else if st, err := os.Stat(got.SpillStdout); err != nil || st.Size() < int64(tt.mb)<<20 {
				t.Errorf("spill %s: %v, want the whole stream (%d MiB)", got.SpillStdout, err, tt.mb)
			}
			t.Logf("%s: %d MiB of events: the live heap grew by %.1f MiB at most (%.1f MiB allocated in all, the live log's lines included)",
				tt.cli, tt.mb, float64(grew)/(1<<20), float64(after.TotalAlloc-before.TotalAlloc)/(1<<20))
			if limit := int64(32 << 20); grew > limit {
				t.Errorf("the live heap grew by %d MiB for a %d MiB stream, want at most %d MiB: the stream was held in memory", grew>>20, tt.mb, limit>>20)
			}
		})
	}
}

// TestBigStderrReason: a failed call's reason is read from the end of its
// stderr log, not from a copy of the whole log in memory.
func TestBigStderrReason(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 100 MB")
	}
	f := newFixture(t)
	r := f.Req(isa.KindProvider, "Ask")
	r.Providers = []string{"codex"}
	r.ProviderDefs = []provider.Def{fake(t, "codex", "bigstream", "codex-stderr", "100")}
	r.Prompt = "question"
	r.Timeout = 10 * time.Minute
	r.Attempts = 1
	peak := watchHeap()
	got := f.run.Run(context.Background(), r)
	grew := peak()
	want := "provider 'codex' failed: rate limited by the model server (HTTP 429): ERROR: unexpected status 429 Too Many Requests: slow down"
	if got.ExitCode != 1 || got.Err == nil || !strings.Contains(got.Err.Error(), want) {
		t.Fatalf("Run = exit %d err %v, want 1 and %q", got.ExitCode, got.Err, want)
	}
	t.Logf("100 MiB of stderr: the live heap grew by %.1f MiB at most", float64(grew)/(1<<20))
	if limit := int64(32 << 20); grew > limit {
		t.Errorf("the live heap grew by %d MiB for a 100 MiB stderr, want at most %d MiB: the log was read whole", grew>>20, limit>>20)
	}
}

// watchHeap collects the garbage, then samples the heap that the
// collector found live (runtime/metrics' /gc/heap/live:bytes, set at the
// end of every cycle) every millisecond until the function it returns is
// called, which returns how far above the start it rose at most. (The old
// reading held the stream, read back whole, for the whole of the reply's
// parse: a cycle that runs while it is held marks it, and a 64 MiB buffer
// starts one.) The heap in use, sampled before, counted garbage that the
// collector and sweeper of a loaded machine had not reached yet: up to
// 59.5 MiB for a reading that holds a few.
func watchHeap() func() int64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	live := func() int64 {
		metrics.Read(sample)
		return int64(sample[0].Value.Uint64())
	}
	base := live()
	stop, done := make(chan struct{}), make(chan int64)
	go func() {
		var top int64
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			top = max(top, live())
			select {
			case <-stop:
				done <- top - base
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		close(stop)
		return <-done
	}
}

// short cuts s for a message.
func short(s string) string {
	if len(s) > 80 {
		return s[:80] + fmt.Sprintf("... (%d bytes)", len(s))
	}
	return strings.TrimSpace(s)
}

// TestProviderKeyVarReported: the key variable of the model provider a
// user's codex configuration chose (its env_key, here AZ_KEY) is passed to
// the CLI, masked, and named in the step's result, so that the step's
// commit is refused if an agent wrote its value into a file, as for the
// presets' own key variables.
func TestProviderKeyVarReported(t *testing.T) {
	f := newFixture(t)
	home := t.TempDir()
	if err := os.MkdirAll(home+"/.codex", 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := "model_provider = \"az\"\n\n[model_providers.az]\nname = \"Azure\"\nbase_url = \"http://127.0.0.1:1/v1\"\nenv_key = \"AZ_KEY\"\n"
	if err := os.WriteFile(home+"/.codex/config.toml", []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := f.Env()
	base := env.Lookup
	env.Lookup = func(k string) (string, bool) {
		switch k {
		case "HOME":
			return home, true
		case "AZ_KEY":
			return "az-key-value-1234", true
		}
		return base(k)
	}
	run := &agent.Runner{Env: env}
	r := f.Req(isa.KindProvider, "Ask")
	r.Providers = []string{"codex"}
	r.ProviderDefs = []provider.Def{fake(t, "codex", "bigstream", "codex", "0")}
	r.Prompt = "question"
	got := run.Run(context.Background(), r)
	if got.Err != nil || got.Output != "done: ok" {
		t.Fatalf("Run = exit %d err %v output %q, want done: ok", got.ExitCode, got.Err, short(got.Output))
	}
	if strings.Join(got.KeyVars, " ") != "AZ_KEY" {
		t.Errorf("KeyVars = %q, want [AZ_KEY]: the commit scan would not know the provider's key", got.KeyVars)
	}
}
