package step

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"regexp"
	"sync"
)

// A Mail says where the run's messages are (CONTRACT 12.2). Messages
// belong to the run, not to a thread: every thread of the run, isolated or
// not, reads and writes the agents' folders relative to Workspace.
type Mail struct {
	// Workspace is the directory (absolute) the agents' folders are
	// relative to: WORKSPACE, or in an isolated run the run's own
	// worktree, never the worktree of one of its threads.
	Workspace string
	// Folders are every agent's inbox and processed folder, relative to
	// Workspace.
	Folders []string
	// Tag is the run's part of its message names (RunTag): a run sees its
	// own messages and those no run sent, never another run's.
	Tag string
	// Claimant names the step execution that claims messages (the run,
	// the thread and the step): a claim file holds it, so that the same
	// step run again after a crash knows its own claims.
	Claimant string
}

// ClaimsDir is the folder beside an inbox that holds the claims on its
// messages: DIR/.claims/<inbox base>/<message>, created with O_EXCL by
// the one waiting step that takes the message.
const ClaimsDir = ".claims"

// ClaimPath is the claim file of message name in inbox (relative paths).
func ClaimPath(inbox, name string) string {
	inbox = path.Clean(inbox)
	return path.Join(path.Dir(inbox), ClaimsDir, path.Base(inbox), name)
}

// RunTag is the part of a message's name that names the run sending it:
// 8 hex digits of the SHA-256 of its id.
func RunTag(runID string) string {
	sum := sha256.Sum256([]byte(runID))
	return hex.EncodeToString(sum[:4])
}

// MessageName is the file name a send delivers: NNNN-TAG-name, NNNN the
// run's message number zero-padded to 4 and TAG the run's tag, so two runs
// sending the same name to one inbox make two files, and ls shows one
// run's messages in delivery order. A send in a thread of a parallel step
// is NNNN-TAG-KEY.J-name: KEY the thread's iteration index or branch
// name, J its J-th send.
func MessageName(seq int, tag, thread string, sub int, name string) string {
	if tag == "" { // no run (a send outside one)
		return fmt.Sprintf("%04d-%s", seq, name)
	}
	if thread != "" {
		return fmt.Sprintf("%04d-%s-%s.%d-%s", seq, tag, thread, sub, name)
	}
	return fmt.Sprintf("%04d-%s-%s", seq, tag, name)
}

// messageTag matches the start of a message a run sent (compiled at its
// first use, not at every start of smithvm).
var messageTag = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9]{4,}-([0-9a-f]{8})-`) })

// Foreign reports whether the file name is a message another run sent:
// one named like a run's message with a tag other than the Mail's.
func (m *Mail) Foreign(name string) bool {
	if m == nil {
		return false
	}
	t := messageTag().FindStringSubmatch(name)
	return t != nil && t[1] != m.Tag
}

// Folder returns the agent's folder (an inbox or processed folder of
// Folders) that rel, a path relative to WORKSPACE, lies in, and whether
// it does. rel may be a glob: its directory part must then be literal.
func (m *Mail) Folder(rel string) (string, bool) {
	if m == nil || rel == "" || path.IsAbs(rel) {
		return "", false
	}
	for d := path.Clean(rel); d != "." && d != "/" && d != ".."; d = path.Dir(d) {
		for _, f := range m.Folders {
			if d == path.Clean(f) {
				return path.Clean(f), true
			}
		}
	}
	return "", false
}
