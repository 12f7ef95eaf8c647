package main

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"smith/internal/refusalscan"
	"smith/internal/shellcomp"
)

// TestVersion: --version prints "smith-temporal VERSION" on one line.
func TestVersion(t *testing.T) {
	var out, errb bytes.Buffer
	if st := run([]string{"--version"}, strings.NewReader(""), &out, &errb); st != 0 || errb.Len() != 0 ||
		!regexp.MustCompile(`^smith-temporal \S+\n$`).MatchString(out.String()) {
		t.Errorf("smith-temporal --version = exit %d, stdout %q, stderr %q", st, out.String(), errb.String())
	}
}

// TestCompletion: each shell's script names every command and long flag of
// commands, the flag sets the commands parse; another shell exits 2.
func TestCompletion(t *testing.T) {
	for _, shell := range shellcomp.Shells {
		var out, errb bytes.Buffer
		if st := run([]string{"completion", shell}, strings.NewReader(""), &out, &errb); st != 0 {
			t.Fatalf("smith-temporal completion %s: exit %d: %s", shell, st, errb.String())
		}
		for _, c := range commands() {
			fs := c.Flags(&flagVals{}, io.Discard)
			if name := strings.TrimPrefix(fs.Name(), "smith-temporal "); !strings.Contains(out.String(), name) {
				t.Errorf("smith-temporal completion %s lacks the command %s", shell, name)
			}
			fs.VisitAll(func(f *pflag.Flag) {
				if !strings.Contains(out.String(), f.Name) {
					t.Errorf("smith-temporal completion %s lacks --%s of %s", shell, f.Name, fs.Name())
				}
			})
		}
	}
	var out, errb bytes.Buffer
	if st := run([]string{"completion", "tcsh"}, strings.NewReader(""), &out, &errb); st != 2 || !strings.Contains(errb.String(), "want bash, zsh, fish") {
		t.Errorf("smith-temporal completion tcsh = exit %d, stderr %q; want 2 naming the shells", st, errb.String())
	}
}

// TestLeanBuild: built with -tags nodev, smith-temporal has every command
// but dev, which says how to get it (exit 1); the embedded server is left
// out of that binary.
func TestLeanBuild(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "smith-temporal")
	if out, err := exec.Command("go", "build", "-tags", "nodev", "-o", exe, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -tags nodev: %v\n%s", err, out)
	}
	out, err := exec.Command(exe, "dev", "--db", filepath.Join(t.TempDir(), "d.db")).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "-tags nodev") {
		t.Errorf("lean smith-temporal dev: %v %q, want exit 1 naming the build tag", err, out)
	}
	if out, err := exec.Command(exe, "worker", "--help").CombinedOutput(); err != nil || !strings.Contains(string(out), "--blobs") {
		t.Errorf("lean smith-temporal worker --help: %v %q", err, out)
	}
}

// TestUnreachableServer: a server that accepts connections but never answers
// makes every command that talks to Temporal fail with exit 2 and a message
// naming the address and how to start a server, not a bare "context deadline
// exceeded" and not a hang.
func TestUnreachableServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	addr := ln.Addr().String()
	var out, errb bytes.Buffer
	st := run([]string{"status", "r1", "--address", addr, "--base", t.TempDir()}, strings.NewReader(""), &out, &errb)
	want := "smith-temporal status: E_TEMPORAL_CONNECT: cannot reach the Temporal server at " + addr + " (namespace default)"
	if st != 2 || !strings.Contains(errb.String(), want) || !strings.Contains(errb.String(), "smith-temporal dev") {
		t.Errorf("status against a silent server = exit %d, stderr %q; want 2 with %q and a hint", st, errb.String(), want)
	}
}

// TestWorkerUnknownNamespace: a worker (or a client) given a namespace the
// server does not have is a configuration error: exit 2, E_TEMPORAL_CONNECT,
// naming the namespace.
func TestWorkerUnknownNamespace(t *testing.T) {
	f := newFleet(t)
	f.ns = "no-such-namespace"
	for _, args := range [][]string{{"worker"}, {"status", "r1"}, {"resume", "r1"}} {
		var out, errb bytes.Buffer
		st := run(append(args, f.flags()...), strings.NewReader(""), &out, &errb)
		want := "smith-temporal " + args[0] + ": E_TEMPORAL_CONNECT: --namespace no-such-namespace"
		if st != 2 || !strings.Contains(errb.String(), want) {
			t.Errorf("%s --namespace no-such-namespace = exit %d, stderr %q; want 2 with %q", args[0], st, errb.String(), want)
		}
	}
}

// TestFlagErrorsHaveCode: a connection flag given wrong is E_USAGE, exit 2,
// in the command's message form, before any server is asked.
func TestFlagErrorsHaveCode(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "r1", "--address", "", "--base", dir}, "smith-temporal status: E_USAGE: --address HOST:PORT is required"},
		{[]string{"status", "r1", "--address", "127.0.0.1:1", "--tls-cert", notPEM, "--base", dir}, "smith-temporal status: E_USAGE: --tls-cert and --tls-key go together"},
		{[]string{"status", "r1", "--address", "127.0.0.1:1", "--tls-ca", notPEM, "--base", dir}, "smith-temporal status: E_USAGE: --tls-ca: no PEM certificate in " + notPEM},
		// Flags and arguments: the form of every usage refusal of smithc
		// and smithvm, PROGRAM COMMAND: E_USAGE: message.
		{[]string{"run", "--bogus"}, "smith-temporal run: E_USAGE: unknown flag: --bogus (see --help)"},
		{[]string{"worker", "extra"}, "smith-temporal worker: E_USAGE: want 0 argument(s), got 1 (see --help)"},
		{[]string{"status"}, "smith-temporal status: E_USAGE: want 1 argument(s), got 0 (see --help)"},
		{[]string{"dev", "--port", "0"}, "smith-temporal dev: E_USAGE: --port 0: want 1-65535"},
		{[]string{"run", "w.yaml", "--max-steps", "0"}, "smith-temporal run: E_USAGE: --max-steps must be at least 1"},
		{[]string{"run", "w.yaml", "--address", "127.0.0.1:1", "--context", "novalue"}, "smith-temporal run: E_USAGE: --context \"novalue\": want KEY=VALUE"},
		{[]string{"run", "w.yaml", "--address", "127.0.0.1:1", "--run-id", "a b"}, "smith-temporal run: E_USAGE: --run-id \"a b\": want"},
		{[]string{"resume", "r1", "--max-steps", "0"}, "smith-temporal resume: E_USAGE: --max-steps must be at least 1"},
		{[]string{"resume", "r1", "--address", "127.0.0.1:1", "--signal", "GO"}, "smith-temporal resume: E_USAGE: --signal \"GO\": want SIGNAL:NAME"},
		{[]string{"completion", "tcsh"}, "smith-temporal completion: E_USAGE: "},
	} {
		var out, errb bytes.Buffer
		st := run(c.args, strings.NewReader(""), &out, &errb)
		if st != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v = exit %d, stderr %q; want 2 with %q", c.args, st, errb.String(), c.want)
		}
	}
}

// TestRefusalsOneForm: in the source, every refusal that names a code
// (E_USAGE, E_RUN_LOCKED, E_TEMPORAL_CONNECT, ...) is printed by
// shellcomp.Fail or shellcomp.Refuse (through fail), in the one form
// "smith-temporal COMMAND: CODE: message" of smithc's and smithvm's, with
// its code's exit status; none is printed or built by hand.
func TestRefusalsOneForm(t *testing.T) {
	stray, err := refusalscan.Stray(".", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stray {
		t.Errorf("%s, not by shellcomp.Fail or Refuse", s)
	}
}
