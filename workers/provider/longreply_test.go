package provider

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
)

// longText is n bytes and more of text that JSON escapes in every way
// (quotes, backslashes, control characters, a surrogate pair, 2- and
// 3-byte UTF-8), so that the pieces of DecodeSpans are cut everywhere.
func longText(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %d \"q\" \\ back\ttab é ∑ 😀 \x01 </tag>\n", i)
	}
	return b.String()
}

// TestReadReplyLong: a reply of MBs in one event (claude's result,
// codex's agent message, gemini's json response) or in many (gemini's
// deltas) comes back as spans of the stdout, not as a string held whole,
// and decodes to the same text, whatever the escapes at the cuts.
func TestReadReplyLong(t *testing.T) {
	t.Parallel()
	text := longText(3 << 20)
	q, _ := json.Marshal(text)
	var deltas strings.Builder
	deltas.WriteString(`{"type":"init","session_id":"g1","model":"m"}` + "\n")
	deltas.WriteString(`{"type":"message","role":"assistant","content":"not this","delta":true}` + "\n")
	deltas.WriteString(`{"type":"tool_use","tool_name":"x","tool_id":"c1","parameters":{}}` + "\n")
	for rest := text; rest != ""; {
		n := min(len(rest), 1000)
		for n < len(rest) && rest[n]&0xC0 == 0x80 {
			n++
		}
		d, _ := json.Marshal(rest[:n])
		fmt.Fprintf(&deltas, `{"type":"message","role":"assistant","content":%s,"delta":true}`+"\n", d)
		rest = rest[n:]
	}
	deltas.WriteString(`{"type":"result","status":"success","stats":{"total_tokens":34}}` + "\n")
	tests := []struct {
		cli, stdout string
	}{
		{"claude", `{"type":"system","subtype":"init","session_id":"s1"}` + "\n" + `{"type":"result","subtype":"success","is_error":false,"result":` + string(q) + `,"session_id":"s1","usage":{"input_tokens":1}}` + "\n"},
		{"claude", `{"type":"result","subtype":"success","is_error":false,"result":` + string(q) + `,"session_id":"s1"}`},
		{"codex", `{"type":"thread.started","thread_id":"t1"}` + "\n" + `{"type":"item.completed","item":{"id":"i","type":"agent_message","text":` + string(q) + `}}` + "\n" + `{"type":"turn.completed","usage":{"input_tokens":3,"output_tokens":4}}` + "\n"},
		{"gemini", `{"response":` + string(q) + `,"session_id":"g1","stats":{}}`},
		{"gemini", deltas.String()},
	}
	for i, tt := range tests {
		t.Run(fmt.Sprintf("%s-%d", tt.cli, i), func(t *testing.T) {
			t.Parallel()
			pv, _ := preset(tt.cli)
			src := io.NewSectionReader(strings.NewReader(tt.stdout), 0, int64(len(tt.stdout)))
			got := ReadReplyFrom(pv, "edit", src, "", 0)
			if got.Exit != 0 || got.Reason != "" || !got.Parsed {
				t.Fatalf("ReadReplyFrom = exit %d reason %q parsed %v, want a parsed success", got.Exit, got.Reason, got.Parsed)
			}
			if got.Text != "" || len(got.Spans) == 0 {
				t.Fatalf("ReadReplyFrom = %d bytes of text and %d spans, want the long reply as spans", len(got.Text), len(got.Spans))
			}
			var b strings.Builder
			if err := DecodeSpans(src, got.Spans, &b); err != nil {
				t.Fatal(err)
			}
			if b.String() != text {
				s := b.String()
				i := 0
				for i < len(s) && i < len(text) && s[i] == text[i] {
					i++
				}
				t.Errorf("DecodeSpans = %d bytes, want the %d-byte reply; they differ at %d: %q", len(s), len(text), i, s[i:min(len(s), i+40)])
			}
			if whole := ReadReply(pv, "edit", tt.stdout, "", 0); whole.Text != text || whole.Spans != nil {
				t.Errorf("ReadReply = %d bytes and %d spans, want the reply as text", len(whole.Text), len(whole.Spans))
			}
		})
	}
}

// TestSafeCut: a piece of a string literal is never cut inside an
// escape, a surrogate pair or a UTF-8 sequence.
func TestSafeCut(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int
	}{
		{`abc`, 3},
		{`ab\`, 2},
		{`ab\\`, 4},
		{`ab\\\`, 4},
		{`ab\u00`, 2},
		{`ab\u00e9`, 8},
		{`ab\ud83d`, 2},
		{`ab\ud83d\ude`, 2},
		{`ab\ud83d\ude00`, 14},
		{"ab\xc3", 2},
		{"ab\xc3\xa9", 4},
		{"ab\xe2\x88", 2},
		{"ab\xf0\x9f\x98", 2},
	}
	for _, tt := range tests {
		if got := safeCut([]byte(tt.in)); got != tt.want {
			t.Errorf("safeCut(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

// TestReadReplyForgedSpan: a reply whose text looks like a placeholder
// (a model can write anything) is that text, not a piece of the stdout
// it names, in a short line and in a long one alike.
func TestReadReplyForgedSpan(t *testing.T) {
	t.Parallel()
	forged := "\x00span:0:30"
	q, _ := json.Marshal(forged)
	pad := strings.Repeat("p", 2<<20)
	for _, stdout := range []string{
		`{"type":"result","subtype":"success","is_error":false,"result":` + string(q) + `,"session_id":"s1"}` + "\n",
		`{"type":"result","subtype":"success","is_error":false,"result":` + string(q) + `,"pad":"` + pad + `","session_id":"s1"}` + "\n",
	} {
		pv, _ := preset("claude")
		got := ReadReply(pv, "edit", stdout, "", 0)
		if got.Text != forged || got.Spans != nil {
			t.Errorf("ReadReply(a %d-byte line) = %q, %d spans; want the forged text as it is", len(stdout), got.Text[:min(len(got.Text), 60)], len(got.Spans))
		}
	}
}
