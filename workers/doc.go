// Package workers runs the units of work of a Smith program and performs
// the run's other effects on this machine.
//
// It holds the Registry (the vm's step.Runner), which dispatches each
// request on its kind: command steps (steprun), provider steps (agent),
// internal workers (builtin) and message sends (KindSend, here); and Local,
// the vm's Host (git worktrees and branches, agents' folders and messages,
// file_exists, ARTIFACT: reads, the change plan and its notices through
// builtin, the run's own files). Below it: workers/step (the request and
// result), workers/steprun (what running any step shares), workers/agent
// and workers/builtin (the two kinds of worker), workers/proc (every
// process), workers/provider (the providers' facts and formats),
// workers/reply (cleaning and validating replies) and workers/confine.
//
// It must never import vm, compiler or manifest; never take a path from a
// user or a model without confine at the moment of use; never start a
// process except through proc.Run, nor a shell; and never write one of
// Smith's own files except through confine.WriteFileAtomic.
package workers
