package engine

import (
	"bytes"
	"encoding/json"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"smith/source"
	"smith/vm"
)

// What a run shows in Temporal itself, readable with no worker running
// (CONTRACT 14, "Temporal shows Smith's truth"): the workflow's memo holds
// a Brief of the run, and the whole state while it is halted; a run that
// fails is a failed workflow.
const (
	// MemoBrief is the memo key of the run's Brief.
	MemoBrief = "smith"
	// MemoState is the memo key of the whole state of a halted run (the
	// blob codec moves a large one to the blob store); null otherwise.
	MemoState = "smith.state"
	// truthChange is the workflow.GetVersion change id of the memo, the
	// failed workflow for a failed run, activity summaries, the step
	// activity ids that go on counting across resumes, and the local
	// activities of local.go: histories recorded before it replay as they
	// ran.
	truthChange = "smith-truth"
)

// A Brief is what the memo says of a run: enough for smith-temporal status
// and resume without asking a worker.
type Brief struct {
	Status       string `json:"status"`
	CurrentStep  string `json:"current_step"`
	WorkflowName string `json:"workflow_name,omitempty"`
	// Seq and EventSeq are the state's at a halt (0 otherwise): resume
	// waits for the run to leave that halt and prints the lines after it.
	Seq      int `json:"seq,omitempty"`
	EventSeq int `json:"event_seq,omitempty"`
	// WorktreePath and HostQueue name the run's worktree and the queue of
	// the host that holds it ("" when the fleet's WORKSPACE is shared).
	WorktreePath string `json:"worktree_path,omitempty"`
	HostQueue    string `json:"host_queue,omitempty"`
	// Steps are the status and exit code of each step that has a result.
	Steps map[string]BriefStep `json:"steps,omitempty"`
}

// A BriefStep is one step of a Brief.
type BriefStep struct {
	Status   string `json:"status"`
	ExitCode int    `json:"exit_code"`
}

// briefOf makes the Brief of st.
func briefOf(st *vm.State, hostQueue string) *Brief {
	b := &Brief{Status: st.Status, CurrentStep: st.CurrentStep, WorkflowName: st.WorkflowName,
		WorktreePath: st.WorktreePath, HostQueue: hostQueue}
	if st.Status == vm.StatusHalted {
		b.Seq, b.EventSeq = st.Seq, st.EventSeq
	}
	if len(st.Steps) > 0 {
		b.Steps = make(map[string]BriefStep, len(st.Steps))
		for name, r := range st.Steps {
			if r != nil {
				b.Steps[name] = BriefStep{Status: r.Status, ExitCode: r.ExitCode}
			}
		}
	}
	return b
}

// StateOf is the state a Brief describes, for status --json when no
// worker can be asked: the fields the Brief holds.
func (b *Brief) StateOf(runID string) *vm.State {
	st := &vm.State{RunID: runID, Status: b.Status, CurrentStep: b.CurrentStep, WorkflowName: b.WorkflowName,
		WorktreePath: b.WorktreePath, Seq: b.Seq, EventSeq: b.EventSeq, Steps: map[string]*vm.StepResult{}}
	for name, s := range b.Steps {
		st.Steps[name] = &vm.StepResult{Status: s.Status, ExitCode: s.ExitCode}
	}
	return st
}

// memo keeps a run's memo up to date (encoding/json sorts map keys, so
// equal Briefs are equal bytes). A change of status upserts at once; the
// other changes of a running run (its current step, its steps) wait until
// the run blocks on an activity (flush) or a second of workflow time has
// passed, so that a loop of local activities (local.go) does not write an
// event per step, while a long step is shown as the current one.
type memo struct {
	ctx       workflow.Context
	on        bool // the truth version: histories recorded before it have no memo
	hostQueue *string
	last      []byte // the Brief upserted last
	status    string // its status
	at        time.Time
	state     bool // MemoState holds a state

	pending *vm.State // a change not upserted yet
}

const memoEvery = time.Second

func (m *memo) update(st *vm.State) error {
	if !m.on || st == nil {
		return nil
	}
	m.pending = st
	if st.Status != m.status || workflow.Now(m.ctx).Sub(m.at) >= memoEvery {
		return m.flush()
	}
	return nil
}

// flush upserts the pending change, if any.
func (m *memo) flush() error {
	st := m.pending
	if st == nil {
		return nil
	}
	m.pending = nil
	b := briefOf(st, *m.hostQueue)
	data, err := json.Marshal(b)
	if err != nil || bytes.Equal(data, m.last) {
		return err
	}
	m.last, m.status, m.at = data, st.Status, workflow.Now(m.ctx)
	fields := map[string]any{MemoBrief: b}
	if st.Status == vm.StatusHalted {
		fields[MemoState], m.state = st, true
	} else if m.state {
		fields[MemoState], m.state = nil, false
	}
	return workflow.UpsertMemo(m.ctx, fields)
}

// failure is the error that fails the workflow of a run that failed: its
// type is the Smith code, its message the reason, its details the Output
// (exit code and state) that the client reports.
func failure(out *Output) error {
	code := out.Code
	if code == "" {
		code = string(source.EStepFailed)
	}
	return temporal.NewNonRetryableApplicationError(code+": "+out.Message, code, nil, out)
}
