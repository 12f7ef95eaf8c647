package engine

import (
	"testing"

	"smith/lang"
	"smith/workers/provider"

	"smith/workers"
)

func TestStartsProcess(t *testing.T) {
	for _, tt := range []struct {
		name string
		req  workers.Request
		want bool
	}{
		{"command", workers.Request{Kind: workers.KindCommand}, true},
		{"test runner", workers.Request{Kind: workers.KindInternal, Worker: lang.InternalTestRunner}, true},
		{"file writer", workers.Request{Kind: workers.KindInternal, Worker: lang.InternalFileSystemWriter}, false},
		{"mock", workers.Request{Kind: workers.KindProvider, Providers: []string{"mock"}}, false},
		{"mock then claude", workers.Request{Kind: workers.KindProvider, Providers: []string{"mock", "claude"}}, true},
		{"a custom provider named mock", workers.Request{Kind: workers.KindProvider, Providers: []string{"mock"},
			ProviderDefs: []provider.Def{{Name: "mock", Command: []string{"x"}}}}, true},
		{"default provider", workers.Request{Kind: workers.KindProvider}, true},
		{"send", workers.Request{Kind: workers.KindSend}, false},
	} {
		if got := startsProcess(&tt.req); got != tt.want {
			t.Errorf("%s: startsProcess = %v, want %v", tt.name, got, tt.want)
		}
	}
}
