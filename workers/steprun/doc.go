// Package steprun holds what running any step shares, whatever its worker:
// Env (the parent environment, the clock and the waits), confining a
// step's paths (Prepare, Paths), its preconditions (wait_for, depends_on,
// the injected dependencies), retries (Env.Retry), the one way a step's
// process runs (Spec, the command step Env.Command), the output capture
// (ApplyCapture), the kept replies of provider steps, and the exit codes
// and signals those produce.
//
// It must never know a provider, an internal worker or the VM; never take a
// path from a user or a model without confine at the moment of use; never
// start a process except through proc.Run, nor a shell.
package steprun
