package agent

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"

	"smith/workers/confine"
	"smith/workers/provider"
	"smith/workers/step"
	"smith/workers/steprun"
	"smith/workers/text"
)

// isolatedHome is the configuration home Smith gives preset name with
// home: isolated: RUN_ROOT/providers/<name> (RUN_ROOT/tmp's folder without
// RUN_ROOT).
func isolatedHome(req *step.Request, p steprun.Paths, name string) string {
	base := req.RunRoot
	if base == "" {
		base = p.TmpDir
	}
	return filepath.Join(base, "providers", name)
}

// scrubSessions keeps the prompts and replies a CLI saves with its
// sessions (SessionFiles) from staying in clear under RUN_ROOT, where an
// isolated home is: after a call that does not continue its session (gemini
// saves every call's session; the other presets are told not to), the
// files of session id are removed; after one that continues it, the
// secrets in them are masked (mask), so a later call resumes a session
// that holds *** where a secret was. Errors are ignored: what cannot be
// read or written is left as the CLI wrote it.
//
// The CLI's error reports (Reports), which hold a request, are masked too.
func scrubSessions(f *provider.CLI, home, id string, continues bool, mask *text.Masker) {
	if f == nil || home == "" {
		return
	}
	for _, glob := range f.Reports {
		files, _ := filepath.Glob(filepath.Join(home, glob))
		for _, path := range files {
			maskFile(path, mask)
		}
	}
	if len(id) < 8 || strings.ContainsAny(id, `/\*?[`) {
		return
	}
	for _, glob := range f.SessionFiles {
		files, _ := filepath.Glob(filepath.Join(home, glob))
		for _, path := range files {
			if !strings.Contains(filepath.Base(path), id[:8]) {
				continue
			}
			b, err := os.ReadFile(path)
			if err != nil || !bytes.Contains(b, []byte(id)) {
				continue
			}
			if !continues {
				_ = os.Remove(path)
				continue
			}
			maskFile(path, mask)
		}
	}
}

// maskFile masks the secrets in the file path, written anew (0600) when it
// held any.
func maskFile(path string, mask *text.Masker) {
	if mask.Empty() {
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	if m := mask.Bytes(b); !bytes.Equal(m, b) {
		_ = confine.WriteFileAtomic(path, m, 0o600)
	}
}
