package engine

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/workflow"
)

// Registry is where a worker (or a test environment) registers Smith's
// workflow and activities.
type Registry interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// RegisterWorkflow registers the workflow alone (a replayer).
func RegisterWorkflow(r interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
}, w *Workflows) {
	r.RegisterWorkflowWithOptions(w.Run, workflow.RegisterOptions{Name: WorkflowName})
}

// Register registers the workflow and activities under their fixed names.
func Register(r Registry, w *Workflows, a *Activities) {
	r.RegisterWorkflowWithOptions(w.Run, workflow.RegisterOptions{Name: WorkflowName})
	r.RegisterActivityWithOptions(a.Step, activity.RegisterOptions{Name: StepActivity})
	r.RegisterActivityWithOptions(a.Environment, activity.RegisterOptions{Name: EnvActivity})
	r.RegisterActivityWithOptions(a.Files, activity.RegisterOptions{Name: FilesActivity})
	r.RegisterActivityWithOptions(a.Host, activity.RegisterOptions{Name: HostActivity})
	r.RegisterActivityWithOptions(a.Pin, activity.RegisterOptions{Name: PinActivity})
}

// RegisterHostActivities registers the activities a host queue serves:
// the effects on this host's files (no workflow, no pin).
func RegisterHostActivities(r interface {
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}, a *Activities) {
	r.RegisterActivityWithOptions(a.Step, activity.RegisterOptions{Name: StepActivity})
	r.RegisterActivityWithOptions(a.Files, activity.RegisterOptions{Name: FilesActivity})
	r.RegisterActivityWithOptions(a.Host, activity.RegisterOptions{Name: HostActivity})
}
