// Package builtin implements the internal workers of lang.InternalWorkers
// (Worker): the test, lint and build runners, the file-system and
// documentation writers, the preamble validator and UpdateChangePlan, with
// the change plans and conflict notices it keeps under RUN_ROOT (ChangePlan,
// ChangePlanStore, Notices). Each reads the request's payload, config and
// worktree and returns the new payload segments.
//
// It must never import workers, vm, compiler or manifest (what it needs from
// the Registry comes in Env); never take a path from a user or a model
// without confine at the moment of use; never start a process except
// through proc.Run, nor a shell; and never write one of Smith's own files
// except through confine.WriteFileAtomic.
package builtin
