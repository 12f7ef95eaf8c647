package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// lockCall is a call of runtime.LockOSThread in Go source.
var lockCall = regexp.MustCompile(`\bLockOSThread\(\)`)

// TestNoThreadExitsBeforeTheProcess: a step's leader and Smith's git get
// the kernel's parent-death signal (proc.Spec.DieWithParent), which the
// kernel sends when the thread that forked them exits, not the process.
// Go ends a thread before its process only when a goroutine locked to it
// (runtime.LockOSThread) exits still locked; so no package linked into
// smithvm, but the runtime (whose one locked goroutine never exits),
// calls LockOSThread. A new dependency that does fails here: check that
// its locked goroutines never exit, then list it.
func TestNoThreadExitsBeforeTheProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("lists smithvm's dependencies with go list")
	}
	var stderr bytes.Buffer
	cmd := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .GoFiles}} {{$.Dir}}/{{.}}{{end}}`, ".")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("go list: %v: %s", err, stderr.String())
	}
	allowed := map[string]bool{"runtime": true}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || allowed[fields[0]] {
			continue
		}
		for _, f := range fields[1:] {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if lockCall.Match(src) {
				t.Errorf("%s (%s) calls LockOSThread: a goroutine that exits locked ends its thread, and a step forked on it would be killed (Pdeathsig)", fields[0], filepath.Base(f))
			}
		}
	}
}
