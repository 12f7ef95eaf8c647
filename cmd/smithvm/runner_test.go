package main

import (
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
)

// TestSelf: the command a hint names works at that point: after go run in
// the repository it is go run ./cmd/smithvm (the binary is gone and
// smithvm may not be installed), else smithvm.
func TestSelf(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	if err := os.MkdirAll(filepath.Join(repo, "cmd", "smithvm"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "cmd", "smithvm", "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	goRun := "/tmp/go-build1234567/b001/exe/smithvm"
	tests := []struct {
		name, arg0, wd, want string
	}{
		{"go run in the repository", goRun, repo, "go run ./cmd/smithvm"},
		{"go run elsewhere", goRun, other, "smithvm"},
		{"installed", "smithvm", repo, "smithvm"},
		{"a built binary", "/home/u/bin/smithvm", repo, "smithvm"},
		{"a folder named exe", "/opt/exe/smithvm", repo, "smithvm"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := &env{arg0: tt.arg0, getwd: func() (string, error) { return tt.wd, nil }}
			if got := e.self(); got != tt.want {
				t.Errorf("self() with arg0 %s in %s = %q, want %q", tt.arg0, tt.wd, got, tt.want)
			}
		})
	}
}

// A SIGHUP ignored when smithvm started (nohup) stays ignored: the run
// is not ended by the hangup nohup was asked to survive.
func TestSignalContextKeepsNohup(t *testing.T) {
	signal.Ignore(syscall.SIGHUP)
	defer signal.Reset(syscall.SIGHUP)
	_, cancel := signalContext()
	defer cancel()
	if !signal.Ignored(syscall.SIGHUP) {
		t.Error("signalContext catches a SIGHUP that nohup ignored")
	}
}
