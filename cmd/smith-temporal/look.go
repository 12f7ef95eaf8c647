package main

import (
	"context"
	"errors"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"smith/cmd/smith-temporal/engine"
	"smith/vm"
)

// A look is what the Temporal server holds of a run, read with no worker
// running: the workflow's status, its memo (engine.Brief, and the state of
// a halted run), and the result of a closed run.
type look struct {
	status enumspb.WorkflowExecutionStatus
	brief  *engine.Brief // nil for a run started by older workers
	halted *vm.State     // the state of a halted run (memo)
	out    *engine.Output
}

// closed says whether the workflow has ended.
func (l *look) closed() bool {
	return l.status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
}

// lookAt describes run runID (the last execution of its chain).
func lookAt(ctx context.Context, cl client.Client, dc converter.DataConverter, runID string) (*look, error) {
	d, err := cl.DescribeWorkflowExecution(ctx, runID, "")
	if err != nil {
		return nil, err
	}
	info := d.GetWorkflowExecutionInfo()
	l := &look{status: info.GetStatus()}
	fields := info.GetMemo().GetFields()
	if p := fields[engine.MemoBrief]; p != nil {
		var b engine.Brief
		if err := dc.FromPayload(p, &b); err != nil {
			return nil, err
		}
		l.brief = &b
	}
	if p := fields[engine.MemoState]; p != nil {
		if err := dc.FromPayload(p, &l.halted); err != nil {
			return nil, err
		}
	}
	if l.closed() {
		var out engine.Output
		err := cl.GetWorkflow(ctx, runID, "").Get(ctx, &out)
		if o, ok := failedOutput(err); ok {
			out, err = *o, nil
		}
		if err == nil {
			l.out = &out
		}
	}
	return l, nil
}

// failedOutput is the Output of a run whose workflow failed (a failed
// Smith run: engine's failure), from the workflow's error.
func failedOutput(err error) (*engine.Output, bool) {
	var ae *temporal.ApplicationError
	if err == nil || !errors.As(err, &ae) || !ae.HasDetails() {
		return nil, false
	}
	var out engine.Output
	if ae.Details(&out) != nil {
		return nil, false
	}
	return &out, true
}

// state is the run's state as far as the server knows it: a closed run's
// final state, a halted run's, or what its Brief says; nil when none.
func (l *look) state(runID string) *vm.State {
	switch {
	case l.out != nil && l.out.State != nil:
		return l.out.State
	case l.halted != nil:
		return l.halted
	case l.brief != nil:
		return l.brief.StateOf(runID)
	}
	return nil
}

// hasWorker says whether a worker polls the fleet's task queue (one that
// can answer a query).
func hasWorker(ctx context.Context, cl client.Client, queue string) bool {
	d, err := cl.DescribeTaskQueue(ctx, queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	return err == nil && len(d.GetPollers()) > 0
}
