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
}
