package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/testing/freeport"
	"go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
)

// A Temporal server whose state survives its process: SQLite in a file,
// the frontend on a fixed 127.0.0.1 port, run as a subprocess of the test
// binary (serverEnv=1; arguments: the database file, the port, the
// namespace), so a test can kill it and start it again on the same port
// and database. The configuration is temporaltest's (its internal
// temporalite package) with a database file instead of memory.

const serverEnv = "SMITH_TEMPORAL_TEST_SERVER"

// serveSQLite runs the server until SIGTERM; it prints "ready" once the
// frontend serves.
func serveSQLite(db string, port int, ns string) int {
	sqlCfg := config.SQL{PluginName: sqliteplugin.PluginName, DatabaseName: db,
		ConnectAttributes: map[string]string{"mode": "rwc"}}
	if _, err := os.Stat(db); os.IsNotExist(err) {
		if err := sqlite.SetupSchema(&sqlCfg); err != nil {
			fmt.Fprintln(os.Stderr, "schema:", err)
			return 1
		}
		nsc, err := sqlite.NewNamespaceConfig("active", ns, false, nil)
		if err == nil {
			err = sqlite.CreateNamespaces(&sqlCfg, nsc)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "namespace:", err)
			return 1
		}
	}
	const ip = "127.0.0.1"
	svc := func(grpc int) config.Service {
		return config.Service{RPC: config.RPC{GRPCPort: grpc, MembershipPort: freeport.MustGetFreePort(), BindOnIP: ip}}
	}
	cfg := &config.Config{
		Global: config.Global{
			Membership: config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: ip},
			PProf:      config.PProf{Port: freeport.MustGetFreePort()},
		},
		Persistence: config.Persistence{DefaultStore: sqliteplugin.PluginName, VisibilityStore: sqliteplugin.PluginName,
			NumHistoryShards: 1, DataStores: map[string]config.DataStore{sqliteplugin.PluginName: {SQL: &sqlCfg}}},
		ClusterMetadata: &cluster.Config{FailoverVersionIncrement: 10, MasterClusterName: "active", CurrentClusterName: "active",
			ClusterInformation: map[string]cluster.ClusterInformation{"active": {Enabled: true, InitialFailoverVersion: 1,
				RPCAddress: fmt.Sprintf("%s:%d", ip, port)}}},
		DCRedirectionPolicy: config.DCRedirectionPolicy{Policy: "noop"},
		Services: map[string]config.Service{"frontend": svc(port), "history": svc(freeport.MustGetFreePort()),
			"matching": svc(freeport.MustGetFreePort()), "worker": svc(freeport.MustGetFreePort())},
		Archival: config.Archival{History: config.HistoryArchival{State: "disabled"},
			Visibility: config.VisibilityArchival{State: "disabled"}},
		PublicClient: config.PublicClient{HostPort: fmt.Sprintf("%s:%d", ip, port)},
		NamespaceDefaults: config.NamespaceDefaults{Archival: config.ArchivalNamespaceDefaults{
			History: config.HistoryArchivalNamespaceDefaults{State: "disabled"}, Visibility: config.VisibilityArchivalNamespaceDefaults{State: "disabled"}}},
	}
	dc := dynamicconfig.StaticClient{
		dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key(): []dynamicconfig.ConstrainedValue{{Value: true}},
		dynamicconfig.TransferProcessorMaxPollRPS.Key():             []dynamicconfig.ConstrainedValue{{Value: 1000}},
	}
	srv, err := temporal.NewServer(temporal.WithConfig(cfg), temporal.ForServices(temporal.DefaultServices),
		temporal.WithLogger(log.NewNoopLogger()), temporal.WithAuthorizer(authorization.NewNoopAuthorizer()),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return authorization.NewNoopClaimMapper() }),
		temporal.WithDynamicConfigClient(dc))
	if err == nil {
		err = srv.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		return 1
	}
	fmt.Println("ready")
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM, os.Interrupt)
	<-ch
	srv.Stop()
	return 0
}

// fileServer is a serveSQLite subprocess.
type fileServer struct {
	t       *testing.T
	db, ns  string
	port    int
	cmd     *exec.Cmd
	started time.Duration // how long the last start took
}

func (s *fileServer) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// start starts the server and waits until it answers on its namespace.
func (s *fileServer) start() {
	s.t.Helper()
	exe, err := os.Executable()
	if err != nil {
		s.t.Fatal(err)
	}
	t0 := time.Now()
	cmd := exec.Command(exe, s.db, strconv.Itoa(s.port), s.ns)
	cmd.Env = append(os.Environ(), serverEnv+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.cmd = cmd
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.TrimSpace(sc.Text()) == "ready" {
				ready <- true
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			s.t.Fatal("the test server exited before it was ready")
		}
	case <-time.After(2 * time.Minute):
		s.t.Fatal("the test server was not ready within 2 minutes")
	}
	c, err := client.Dial(client.Options{HostPort: s.addr(), Namespace: s.ns, Logger: quietLogger{}})
	if err != nil {
		s.t.Fatal(err)
	}
	defer c.Close()
	waitFor(s.t, time.Minute, "the namespace to answer", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: s.ns})
		return err == nil
	})
	s.started = time.Since(t0)
}

// kill ends the server with SIGKILL: no clean shutdown.
func (s *fileServer) kill() {
	if s.cmd != nil && s.cmd.ProcessState == nil {
		s.cmd.Process.Signal(syscall.SIGKILL)
		s.cmd.Wait()
	}
}

// TestServerRestartMidRun: the Temporal server is killed (SIGKILL) while
// step B runs and started again on the same port and database: the run
// completes, A and C ran once, and B at most twice (once when its result
// reached the server after the restart; again when it was lost with the
// server and the activity timed out).
func TestServerRestartMidRun(t *testing.T) {
	s := &fileServer{t: t, db: filepath.Join(t.TempDir(), "temporal.db"), port: freeport.MustGetFreePort(), ns: "restart"}
	s.start()
	t.Cleanup(s.kill)
	t.Logf("server started in %v", s.started.Round(time.Millisecond))
	f := newFleetAt(t, s.addr(), s.ns)
	f.worker()
	file := write(t, filepath.Join(f.base, "r.yaml"), restartYAML)
	if r := f.cli("run", file, "--run-id", "restart1", "--detach"); r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	waitFor(t, 60*time.Second, "step B to start", func() bool {
		return lines(t, filepath.Join(f.base, "B.count")) > 0
	})
	s.kill()
	time.Sleep(time.Second)
	s.start()
	t.Logf("server restarted in %v", s.started.Round(time.Millisecond))
	waitFor(t, 3*time.Minute, "the run to complete after the restart", func() bool {
		return runStatus(f, "restart1") == "completed"
	})
	a, b, c := lines(t, filepath.Join(f.base, "A.count")), lines(t, filepath.Join(f.base, "B.count")), lines(t, filepath.Join(f.base, "C.count"))
	t.Logf("executions A=%d B=%d C=%d", a, b, c)
	if a != 1 || c != 1 || b < 1 || b > 2 {
		t.Errorf("executions A=%d B=%d C=%d, want A and C once, B once or twice", a, b, c)
	}
}

// restartYAML: B takes 4 s, long enough to kill the server in.
const restartYAML = `version: "1.0"
name: restart
strict_flow: false
steps:
  - name: A
    command: ["sh", "-c", "echo x >> ../A.count"]
  - name: B
    command: ["sh", "-c", "echo x >> ../B.count; sleep 4"]
  - name: C
    command: ["sh", "-c", "echo x >> ../C.count"]
`
