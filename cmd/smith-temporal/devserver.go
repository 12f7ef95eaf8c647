//go:build !nodev

package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
)

// serveDev runs a Temporal server on 127.0.0.1:port with its state in the
// SQLite file db until ctx ends; ready is called once its frontend serves.
// The configuration is temporaltest's (its internal temporalite package)
// with a database file instead of memory, and the history service's
// transfer-task poll rate raised so that an activity costs milliseconds
// rather than about 50 ms (docs/temporal.md).
func serveDev(ctx context.Context, db string, port int, ns string, ready func()) error {
	sqlCfg := config.SQL{PluginName: sqliteplugin.PluginName, DatabaseName: db,
		ConnectAttributes: map[string]string{"mode": "rwc"}}
	if _, err := os.Stat(db); os.IsNotExist(err) {
		if err := sqlite.SetupSchema(&sqlCfg); err != nil {
			return fmt.Errorf("create the database %s: %w", db, err)
		}
	}
	// A no-op when the namespace exists.
	nsc, err := sqlite.NewNamespaceConfig("active", ns, false, nil)
	if err == nil {
		err = sqlite.CreateNamespaces(&sqlCfg, nsc)
	}
	if err != nil {
		return fmt.Errorf("namespace %s: %w", ns, err)
	}
	const ip = "127.0.0.1"
	// p: the other services' gRPC ports, then the four membership ports.
	p, err := freePorts(ip, 7)
	if err != nil {
		return err
	}
	svc := func(grpc, membership int) config.Service {
		return config.Service{RPC: config.RPC{GRPCPort: grpc, MembershipPort: membership, BindOnIP: ip}}
	}
	hostPort := net.JoinHostPort(ip, strconv.Itoa(port))
	cfg := &config.Config{
		Global: config.Global{
			Membership: config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: ip},
		},
		Persistence: config.Persistence{DefaultStore: sqliteplugin.PluginName, VisibilityStore: sqliteplugin.PluginName,
			NumHistoryShards: 1, DataStores: map[string]config.DataStore{sqliteplugin.PluginName: {SQL: &sqlCfg}}},
		ClusterMetadata: &cluster.Config{FailoverVersionIncrement: 10, MasterClusterName: "active", CurrentClusterName: "active",
			ClusterInformation: map[string]cluster.ClusterInformation{"active": {Enabled: true, InitialFailoverVersion: 1,
				RPCAddress: hostPort}}},
		DCRedirectionPolicy: config.DCRedirectionPolicy{Policy: "noop"},
		Archival: config.Archival{History: config.HistoryArchival{State: "disabled"},
			Visibility: config.VisibilityArchival{State: "disabled"}},
		PublicClient: config.PublicClient{HostPort: hostPort},
		NamespaceDefaults: config.NamespaceDefaults{Archival: config.ArchivalNamespaceDefaults{
			History: config.HistoryArchivalNamespaceDefaults{State: "disabled"}, Visibility: config.VisibilityArchivalNamespaceDefaults{State: "disabled"}}},
	}
	cfg.Services = map[string]config.Service{"frontend": svc(port, p[3]), "history": svc(p[0], p[4]),
		"matching": svc(p[1], p[5]), "worker": svc(p[2], p[6])}
	dc := dynamicconfig.StaticClient{
		dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key(): []dynamicconfig.ConstrainedValue{{Value: true}},
		dynamicconfig.TransferProcessorMaxPollRPS.Key():             []dynamicconfig.ConstrainedValue{{Value: 1000}},
	}
	srv, err := temporal.NewServer(temporal.WithConfig(cfg), temporal.ForServices(temporal.DefaultServices),
		temporal.WithLogger(newDevLogger()), temporal.WithAuthorizer(authorization.NewNoopAuthorizer()),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return authorization.NewNoopClaimMapper() }),
		temporal.WithDynamicConfigClient(dc))
	if err == nil {
		err = srv.Start()
	}
	if err != nil {
		return fmt.Errorf("start the server: %w", err)
	}
	ready()
	<-ctx.Done()
	return srv.Stop()
}

// freePorts returns n ports free on ip now (the services' internal
// membership and gRPC ports).
func freePorts(ip string, n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
