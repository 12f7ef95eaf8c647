package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/temporal"
	"go.temporal.io/server/temporaltest"

	"smith/vm"
)

// The tests run a real Temporal server in this process, on 127.0.0.1
// (temporaltest: SQLite in memory), and the workers as subprocesses: this
// test binary re-executed as smith-temporal (SMITH_TEMPORAL_MAIN=1).

const mainEnv = "SMITH_TEMPORAL_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	code := m.Run()
	if srv != nil {
		srv.Stop()
	}
	os.Exit(code)
}

var (
	srvOnce sync.Once
	srv     *temporaltest.TestServer
)

// server returns the test binary's Temporal server, started on first use,
// with the history service's transfer-task poll rate raised so that an
// activity costs milliseconds rather than ~50 ms (docs/temporal.md).
func server(t testing.TB) *temporaltest.TestServer {
	t.Helper()
	srvOnce.Do(func() {
		dc := dynamicconfig.StaticClient{
			dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key(): []dynamicconfig.ConstrainedValue{{Value: true}},
			dynamicconfig.TransferProcessorMaxPollRPS.Key():             []dynamicconfig.ConstrainedValue{{Value: 1000}},
		}
		if os.Getenv("SMITH_BENCH_DEFAULT_SERVER") != "" { // the benchmarks' comparison
			delete(dc, dynamicconfig.TransferProcessorMaxPollRPS.Key())
		}
		srv = temporaltest.NewServer(temporaltest.WithBaseServerOptions(temporal.WithDynamicConfigClient(dc),
			temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return apiKeys{} })))
	})
	if srv == nil {
		t.Fatal("no Temporal server")
	}
	return srv
}

// fleet is one test's project: a BASE, a blob directory, a task queue and
// the workers started on it.
type fleet struct {
	t       testing.TB
	addr    string
	ns      string
	queue   string
	base    string
	blobs   string
	exe     string   // the worker binary; "" = this test binary
	env     []string // the workers' environment, added
	extra   []string // the commands' flags, added
	mu      *sync.Mutex
	workers []*exec.Cmd
}

func newFleet(t testing.TB) *fleet {
	s := server(t)
	return newFleetAt(t, s.GetFrontendHostPort(), s.GetDefaultNamespace())
}

// newFleetAt is a fleet on the server at addr, in namespace ns.
func newFleetAt(t testing.TB, addr, ns string) *fleet {
	dir := t.TempDir()
	f := &fleet{t: t, mu: new(sync.Mutex), addr: addr, ns: ns,
		queue: "q-" + strings.ReplaceAll(t.Name(), "/", "-"), base: filepath.Join(dir, "base"), blobs: filepath.Join(dir, "blobs")}
	if err := os.MkdirAll(f.base, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.stopAll)
	return f
}

// flags are the connection flags of every command.
func (f *fleet) flags() []string {
	return []string{"--address", f.addr, "--namespace", f.ns, "--task-queue", f.queue, "--base", f.base, "--blobs", f.blobs}
}

// worker starts a worker subprocess.
func (f *fleet) worker() *exec.Cmd {
	f.t.Helper()
	return f.workerAt(f.base)
}

// workerAt starts a worker subprocess on BASE base (another host), with
// more flags.
func (f *fleet) workerAt(base string, flags ...string) *exec.Cmd {
	f.t.Helper()
	exe, err := os.Executable()
	if err != nil {
		f.t.Fatal(err)
	}
	if f.exe != "" {
		exe = f.exe
	}
	cmd := exec.Command(exe, append(append(append([]string{"worker"}, f.flags()...), "--base", base), flags...)...)
	cmd.Env = append(append(os.Environ(), mainEnv+"=1"), f.env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	f.mu.Lock()
	f.workers = append(f.workers, cmd)
	f.mu.Unlock()
	go func() {
		cmd.Wait()
		if s := out.String(); strings.Contains(s, "panic") || os.Getenv("SMITH_TEST_VERBOSE") != "" {
			f.t.Logf("worker %d:\n%s", cmd.Process.Pid, s)
		}
	}()
	return cmd
}

// stopAll ends every worker still running.
func (f *fleet) stopAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.workers {
		if w.ProcessState == nil {
			w.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, w := range f.workers {
		done := make(chan struct{})
		go func() { w.Process.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			w.Process.Kill()
		}
	}
}

// result is one smith-temporal command's outcome.
type result struct {
	code           int
	stdout, stderr string
}

// cli runs smith-temporal in this process with the fleet's flags.
func (f *fleet) cli(args ...string) result {
	var out, errb bytes.Buffer
	code := run(append(append(args, f.flags()...), f.extra...), strings.NewReader(""), &out, &errb)
	return result{code, out.String(), errb.String()}
}

// client dials the fleet's server.
func (f *fleet) client() client.Client {
	c, err := client.Dial(client.Options{HostPort: f.addr, Namespace: f.ns, Logger: quietLogger{}})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(c.Close)
	return c
}

// state parses a --json state.
func parseState(t *testing.T, s string) *vm.State {
	t.Helper()
	var st vm.State
	if err := json.Unmarshal([]byte(s), &st); err != nil {
		t.Fatalf("state JSON: %v\n%s", err, s)
	}
	return &st
}

// waitFor polls cond until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// repo returns a path in the repository.
func repo(t testing.TB, rel string) string {
	t.Helper()
	_, here, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller")
	}
	return filepath.Join(filepath.Dir(here), "..", "..", rel)
}

func write(t testing.TB, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

var _ = fmt.Sprint
var _ = context.Background

// runStatus is the status of run id ("" when it has none yet).
func runStatus(f *fleet, id string) string {
	r := f.cli("status", id, "--json")
	var st struct {
		Status string `json:"status"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &st) != nil {
		return ""
	}
	return st.Status
}
