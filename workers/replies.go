package workers

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"smith/lang"
	"smith/workers/step"
)

// A YAML workflow has no payload: a writer step reads the reply of the
// provider step before it instead (CONTRACT 12.5). The provider step keeps
// its whole masked reply in RUN_ROOT/replies/<Step>.txt (<Step>[KEY].txt in
// a thread of a parallel step; the state keeps only 8 KiB of an output),
// and the writer gets it as one segment.

// replyPath is where step's reply is kept.
func replyPath(runRoot, step string) string {
	return filepath.Join(runRoot, "replies", step+".txt")
}

// keepReply saves text as the reply of req's step, atomically.
func keepReply(req *step.Request, text string) error {
	if req.RunRoot == "" {
		return nil
	}
	p := replyPath(req.RunRoot, req.CallKey())
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// replyPayload makes the reply of req.ReplyFrom the payload of a YAML
// writer, as one segment of type typ. It reports false, with the failed
// result, when the reply cannot be read.
func replyPayload(req *step.Request, typ string) (step.Result, bool) {
	if req.ReplyFrom == "" || req.RunRoot == "" {
		return step.Result{}, true
	}
	from := req.ReplyFrom
	if req.Thread != "" {
		from += "[" + req.Thread + "]" // the provider step of the same thread
	}
	b, err := os.ReadFile(replyPath(req.RunRoot, from))
	if err != nil {
		l := &segmentList{req: req}
		if errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("step '%s' left no reply to write (it did not succeed)", req.ReplyFrom)
		}
		return l.fail(lang.SigFailure, step.SegError, err), false
	}
	req.Payload = append(req.Payload, step.Segment{Type: typ, Content: string(b)})
	return step.Result{}, true
}
