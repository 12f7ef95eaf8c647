package main

import (
	"testing"

	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/temporal"
	"go.temporal.io/server/temporaltest"
)

// startServer starts a real Temporal server in the test process on 127.0.0.1,
// with the history service's transfer-task poll rate raised so that an
// activity costs milliseconds rather than ~50 ms (docs/temporal.md).
func startServer(t *testing.T) *temporaltest.TestServer {
	t.Helper()
	return temporaltest.NewServer(
		temporaltest.WithT(t),
		temporaltest.WithBaseServerOptions(temporal.WithDynamicConfigClient(dynamicconfig.StaticClient{
			dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key(): []dynamicconfig.ConstrainedValue{{Value: true}},
			dynamicconfig.TransferProcessorMaxPollRPS.Key():             []dynamicconfig.ConstrainedValue{{Value: 1000}},
		})),
	)
}

func TestServerStarts(t *testing.T) {
	ts := startServer(t)
	if ts.GetFrontendHostPort() == "" {
		t.Fatal("no frontend address")
	}
}
