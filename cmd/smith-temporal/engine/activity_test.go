package engine

import (
	"testing"

	"smith/lang"
	"smith/workers/provider"
	"smith/workers/step"
)

func TestStartsProcess(t *testing.T) {
	for _, tt := range []struct {
		name string
		req  step.Request
		want bool
	}{
		{"command", step.Request{Kind: step.KindCommand}, true},
		{"test runner", step.Request{Kind: step.KindInternal, Worker: lang.InternalTestRunner}, true},
		{"file writer", step.Request{Kind: step.KindInternal, Worker: lang.InternalFileSystemWriter}, false},
		{"mock", step.Request{Kind: step.KindProvider, Providers: []string{"mock"}}, false},
		{"mock then claude", step.Request{Kind: step.KindProvider, Providers: []string{"mock", "claude"}}, true},
		{"a custom provider named mock", step.Request{Kind: step.KindProvider, Providers: []string{"mock"},
			ProviderDefs: []provider.Def{{Name: "mock", Command: []string{"x"}}}}, true},
		{"default provider", step.Request{Kind: step.KindProvider}, true},
		{"send", step.Request{Kind: step.KindSend}, false},
	} {
		if got := startsProcess(&tt.req); got != tt.want {
			t.Errorf("%s: startsProcess = %v, want %v", tt.name, got, tt.want)
		}
	}
}
