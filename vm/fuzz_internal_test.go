package vm

import (
	"encoding/json"
	"testing"
)

// FuzzStateApply: the state loader's VM half. Whatever a state.json and a
// journal delta decode to, applying the delta and checking the state never
// panics, and a state that passes the check encodes and decodes again.
func FuzzStateApply(f *testing.F) {
	f.Add([]byte(`{"run_id":"r","workflow_path":"/w.yaml","status":"running","started_at":"t","current_step":"A","phase":"start","seq":1}`),
		[]byte(`{"seq":2,"current_step":"B","phase":"dispatch","status":"running","steps":[{"name":"A","result":{"status":"completed"}}],"visit":{"block":"A","count":1}}`))
	f.Add([]byte(`{}`), []byte(`{"seq":1,"start":{"run_id":"r","context":{"a":[1,{"b":null}]}},"loop_stack":[{"loop":"L","index":3,"items":[1,2]}]}`))
	f.Add([]byte(`{"steps":{"L":{"iterations":[{"index":0}]}}}`), []byte(`{"seq":5,"iteration":{"loop":"L","record":{"index":1}},"reset":["L"],"replace_payload":true}`))
	f.Fuzz(func(t *testing.T, state, delta []byte) {
		var st State
		if json.Unmarshal(state, &st) != nil {
			return
		}
		var d Delta
		if json.Unmarshal(delta, &d) == nil {
			st.Apply(&d)
		}
		if st.Problem(st.RunID) != "" {
			return
		}
		b, err := json.Marshal(&st)
		if err != nil {
			t.Fatalf("a valid state does not encode: %v", err)
		}
		var back State
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("a valid state does not decode again: %v", err)
		}
	})
}
