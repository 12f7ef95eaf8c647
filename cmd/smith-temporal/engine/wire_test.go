package engine

import (
	"encoding/json"
	"testing"
	"time"

	"smith/source"
	"smith/workers/step"
	"smith/workers/text"
)

func TestWireRequestRoundTrip(t *testing.T) {
	in := WireRequest{Request: step.Request{RunID: "r", Step: "S", Argv: []string{"echo", "hi"},
		Timeout: 3 * time.Second, Secrets: []step.EnvVar{{Name: "TOKEN", Value: Placeholder("TOKEN")}},
		Mask: text.NewMasker([]string{"x"}), OnRetry: func(int, int, time.Duration) {}},
		SecretNames: []string{"TOKEN"}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out WireRequest
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.Step != "S" || len(out.Argv) != 2 || out.Timeout != 3*time.Second || out.SecretNames[0] != "TOKEN" || out.Secrets[0].Value != Placeholder("TOKEN") {
		t.Fatalf("round trip lost fields: %+v", out)
	}
	if out.Mask != nil || out.OnRetry != nil {
		t.Fatal("callbacks travelled")
	}
}

func TestWireResultKeepsTheErrorCode(t *testing.T) {
	in := WireResult{Result: step.Result{Signal: "SIGNAL:FAILURE", ExitCode: 1, Output: "o",
		Err: &StepError{Code: source.EJSONParse, Msg: "bad json"}}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out WireResult
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	var c source.Coded
	if out.Err == nil || out.Err.Error() != "bad json" {
		t.Fatalf("error lost: %+v", out)
	}
	c = out.Err.(source.Coded)
	if c.ErrCode() != source.EJSONParse || out.Output != "o" || out.ExitCode != 1 {
		t.Fatalf("got %+v", out)
	}
}
