package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

// mockScript is a mock provider script (JSON) of these entries.
func mockScript(t *testing.T, entries ...map[string]string) string {
	t.Helper()
	b, err := json.Marshal(entries)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var fixLoopWorkflow = workflow("fix_loop.yaml")

// TestYAMLFixLoop: a provider step that runs again after its own
// validation failure gets "Output failed validation. Fix this: ..." after
// its prompt, and ${steps.S.validation_error} says the same; with
// output_capture: json a chatty reply is cleaned, and one with no JSON is a
// validation failure, not E_JSON_PARSE (CONTRACT 9). Custom signals are
// routed by on.signals; an unrouted one follows success for exit 0
// (CONTRACT 12.5).
func TestYAMLFixLoop(t *testing.T) {
	p := newProj(t)
	wf := p.write("fix.yaml", fixLoopWorkflow)
	p.write("workspace/mock/plan.json", mockScript(t,
		map[string]string{"reply": "Sure! I will plan it carefully."},
		map[string]string{"match": `(?s)^Plan the work\.\n\nOutput failed validation\. Fix this: `,
			"reply": "Here you go:\n```json\n{\"files\": [\"a.go\"]}\n```\nHope it helps."}))
	p.write("workspace/mock/raw.json", mockScript(t,
		map[string]string{"reply": "no json here"},
		map[string]string{"match": "Output failed validation. Fix this: the reply holds no JSON value", "reply": "Well: {\"n\": 7} there."}))
	p.write("workspace/mock/review.json", mockScript(t,
		map[string]string{"match": "approve", "reply": "Looks good.\nSIGNAL:APPROVED"},
		map[string]string{"match": "other", "reply": "Hmm.\nSIGNAL:NEEDS_WORK"}))
	r := p.vm("run", wf, "--context", "kind=approve")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	st := readState(t, p, r.runID())
	if got := st.Steps["Show"].Output; got != "a.go 7" {
		t.Errorf("Show = %q, want the cleaned JSON of both fixed replies (a.go 7)", got)
	}
	if !strings.Contains(r.stderr, "INFO: Step 'Plan' finished with SIGNAL:VALIDATION_FAIL") &&
		!strings.Contains(r.stderr, "Step 'Plan' failed") {
		t.Errorf("console does not show Plan's validation failure:\n%s", r.stderr)
	}
	if strings.Contains(r.stderr, "E_JSON_PARSE") {
		t.Errorf("a chatty reply gave E_JSON_PARSE:\n%s", r.stderr)
	}
	if st.Steps["Rework"] != nil || st.Steps["Done"] == nil {
		t.Errorf("SIGNAL:APPROVED went elsewhere than on.signals says: Rework %v Done %v", st.Steps["Rework"], st.Steps["Done"])
	}

	r = p.vm("run", wf, "--context", "kind=other")
	if r.code != 0 {
		t.Fatalf("run 2: exit %d\n%s", r.code, r.stderr)
	}
	st = readState(t, p, r.runID())
	if st.Steps["Rework"] == nil || st.Steps["Review"].Status != "completed" {
		t.Errorf("an unrouted custom signal with exit 0 must follow on.success (Rework) and leave the step completed: %+v", st.Steps["Review"])
	}
}

// TestYAMLInternalWorkers: YAML takes test_command at the top level for
// Internal:TestRunner, and a writer reads the whole reply of the provider
// step before it as its CODE_OUTPUT (CONTRACT 12.5).
func TestYAMLInternalWorkers(t *testing.T) {
	p := newProj(t)
	big := strings.Repeat("// filler line\n", 1000) // past the 8 KiB kept in state.json
	wf := p.write("w.yaml", workflow("yaml_internal_workers.yaml"))
	reply, err := json.Marshal(map[string]string{"filePath": "src/x.go", "fileContent": "package x\n" + big})
	if err != nil {
		t.Fatal(err)
	}
	p.write("workspace/mock/gen.json", mockScript(t, map[string]string{"reply": "Here it is:\n" + string(reply)}))
	r := p.vm("run", wf)
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	if got := p.read("workspace/src/x.go"); got != "package x\n"+strings.TrimRight(big, "\n") && got != "package x\n"+big {
		t.Errorf("src/x.go has %d bytes, want the whole file (%d)", len(got), len("package x\n"+big))
	}
	if st := readState(t, p, r.runID()); st.Steps["Test"].Status != "completed" {
		t.Errorf("Test = %+v, want completed (test_command found src/x.go)", st.Steps["Test"])
	}
}
