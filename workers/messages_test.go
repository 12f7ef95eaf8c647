package workers

import (
	"context"
	"strings"
	"testing"

	"smith/isa"
	"smith/lang"
	"smith/workers/step"
	"smith/workers/text"
)

// TestSendMasksSecrets: a message's content (given, or read from a file)
// is masked before it reaches the inbox: a secret's value never lands in
// an inbox file (CONTRACT 12.2).
func TestSendMasksSecrets(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-value-42"
	tests := []struct {
		name string
		send step.Send
		file string // written to WORKSPACE/in.md first
		want string // the delivered path
	}{
		{"content", step.Send{To: "eng", Inbox: "agents/eng/inbox", Seq: 1, Content: "token=" + secret + "\n"}, "", "agents/eng/inbox/0001-message.md"},
		{"file", step.Send{To: "eng", Inbox: "agents/eng/inbox", Seq: 2, File: "in.md"}, "use " + secret + " here\n", "agents/eng/inbox/0002-in.md"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			if tt.file != "" {
				f.Write("in.md", tt.file)
			}
			r := f.Req(isa.KindSend, "HandOff")
			s := tt.send
			r.Send = &s
			r.Mask = text.NewMasker([]string{secret})
			res := f.reg.Run(context.Background(), r)
			if res.Signal != lang.SigSuccess || res.Output != tt.want {
				t.Fatalf("send = %s, %q, %v; want success delivering %s", res.Signal, res.Output, res.Err, tt.want)
			}
			got := f.Read(tt.want)
			if strings.Contains(got, secret) || !strings.Contains(got, "***") {
				t.Errorf("inbox file = %q, want the secret masked as ***", got)
			}
		})
	}
}
