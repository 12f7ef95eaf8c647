package engine

import "go.temporal.io/sdk/workflow"

// Cheap blocks (CONTRACT 14): a step that starts no process (the mock
// provider, sends, the Internal writers), the VM's reads of files and its
// effects on the project run as local activities when the run is not
// pinned to a host: in the worker that runs the workflow task, recorded
// as a marker, with no round trip through the task queue. A loop of such
// steps completes in a few workflow tasks instead of one activity and one
// workflow task each. A step that starts a process stays an activity: it
// heartbeats, and a worker that dies hands it to another. Histories
// recorded before the truthChange version (memo.go) replay with
// activities.

// localOptions are the local activity options for activity options ao.
func localOptions(ao workflow.ActivityOptions) workflow.LocalActivityOptions {
	return workflow.LocalActivityOptions{
		StartToCloseTimeout: ao.StartToCloseTimeout,
		RetryPolicy:         ao.RetryPolicy,
		Summary:             ao.Summary,
	}
}
