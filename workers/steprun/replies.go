package steprun

import (
	"os"
	"path/filepath"

	"smith/workers/confine"
	"smith/workers/step"
)

// A YAML workflow has no payload: a writer step reads the reply of the
// provider step before it instead (CONTRACT 12.5). The provider step keeps
// its whole masked reply in RUN_ROOT/replies/<Step>.txt (<Step>[KEY].txt in
// a thread of a parallel step; the state keeps only 8 KiB of an output),
// and the writer gets it as one segment.

// ReplyPath is where step's reply is kept.
func ReplyPath(runRoot, step string) string {
	return filepath.Join(runRoot, "replies", step+".txt")
}

// KeepReply saves text as the reply of req's step (confine.WriteFileAtomic:
// durable before the step's completion is saved).
func KeepReply(req *step.Request, text string) error {
	if req.RunRoot == "" {
		return nil
	}
	return confine.WriteFileAtomic(ReplyPath(req.RunRoot, req.CallKey()), []byte(text), 0o600)
}

// KeepReplyFile saves the file whole, a reply too long to hold in memory,
// as the reply of req's step, as KeepReply does.
func KeepReplyFile(req *step.Request, whole string) error {
	if req.RunRoot == "" {
		return nil
	}
	f, err := os.Open(whole)
	if err != nil {
		return err
	}
	defer f.Close()
	return confine.CopyFileAtomic(ReplyPath(req.RunRoot, req.CallKey()), f, 0o600)
}
