package serve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"smith/vm"
)

// A Usage is what one step (or the whole run) ran and used, summed over
// the events of the run's log: the step's ending events carry the tokens
// and the cost of that execution, so the sum covers every visit,
// iteration and thread (CONTRACT 13, "what it cost").
type Usage struct {
	Runs   int     `json:"runs"`   // step_started events
	Tokens int     `json:"tokens"` // summed
	Cost   float64 `json:"cost_usd"`
}

// StepUsage reads the event log at path (RUN_ROOT/logs/events.jsonl) into
// each step's usage and the run's total. A log that cannot be read counts
// nothing. `smithvm status` and the run page both show it.
func StepUsage(path string) (steps map[string]Usage, total Usage) {
	steps = map[string]Usage{}
	f, err := os.Open(path)
	if err != nil {
		return steps, total
	}
	defer f.Close()
	return readUsage(f)
}

func readUsage(r io.Reader) (steps map[string]Usage, total Usage) {
	steps = map[string]Usage{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	started := []byte(`"event":"` + vm.EvStepStarted + `"`)
	for sc.Scan() {
		b := sc.Bytes()
		isStart := bytes.Contains(b, started)
		if !isStart && !bytes.Contains(b, []byte(`"tokens":`)) && !bytes.Contains(b, []byte(`"cost_usd":`)) {
			continue
		}
		var ev struct {
			Step   string  `json:"step"`
			Event  string  `json:"event"`
			Tokens int     `json:"tokens"`
			Cost   float64 `json:"cost_usd"`
		}
		if json.Unmarshal(b, &ev) != nil || ev.Step == "" {
			continue
		}
		u := steps[ev.Step]
		if ev.Event == vm.EvStepStarted {
			u.Runs++
		}
		u.Tokens += ev.Tokens
		u.Cost += ev.Cost
		steps[ev.Step] = u
		total.Tokens += ev.Tokens
		total.Cost += ev.Cost
	}
	return steps, total
}

// FormatCost is a cost in US dollars as status and the page show it
// ("$0.0123"), "-" when none was reported.
func FormatCost(c float64) string {
	if c <= 0 {
		return "-"
	}
	if c < 0.0001 {
		return "<$0.0001"
	}
	return fmt.Sprintf("$%.4f", c)
}

// addUsage fills in the view's tokens and cost per step and for the run,
// and the steps' commits.
func (s *Server) addUsage(v *view, st *vm.State) {
	dir, err := s.resolveRun(st.RunID)
	if err != nil {
		return
	}
	steps, total := StepUsage(filepath.Join(dir, "logs", "events.jsonl"))
	v.Usage = total
	v.Usage.Tokens = st.Stats.TotalTokensUsed
	v.Diff = st.WorktreePath != "" && s.cfg.Diff != nil
	for i := range v.Steps {
		row := &v.Steps[i]
		u := steps[row.Name]
		row.Tokens, row.Cost = u.Tokens, u.Cost
		if r := st.Steps[row.Name]; r != nil {
			if row.Tokens == 0 {
				row.Tokens = r.Tokens
			}
			if s.cfg.Diff != nil {
				row.Commit = r.Commit
			}
		}
	}
}
