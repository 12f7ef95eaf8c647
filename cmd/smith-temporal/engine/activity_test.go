package engine

import (
	"testing"

	"smith/isa"
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
		{"command", step.Request{Kind: isa.KindCommand}, true},
		{"test runner", step.Request{Kind: isa.KindInternal, Worker: lang.InternalTestRunner}, true},
		{"file writer", step.Request{Kind: isa.KindInternal, Worker: lang.InternalFileSystemWriter}, false},
		{"mock", step.Request{Kind: isa.KindProvider, Providers: []string{"mock"}}, false},
		{"mock then claude", step.Request{Kind: isa.KindProvider, Providers: []string{"mock", "claude"}}, true},
		{"a custom provider named mock", step.Request{Kind: isa.KindProvider, Providers: []string{"mock"},
			ProviderDefs: []provider.Def{{Name: "mock", Command: []string{"x"}}}}, true},
		{"default provider", step.Request{Kind: isa.KindProvider}, true},
		{"send", step.Request{Kind: isa.KindSend}, false},
	} {
		if got := startsProcess(&tt.req); got != tt.want {
			t.Errorf("%s: startsProcess = %v, want %v", tt.name, got, tt.want)
		}
	}
}
